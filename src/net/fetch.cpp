#include "envkit/net/fetch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "curl_common.hpp"
#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"

namespace envkit::net {

namespace {

using detail::EasyHandle;
using detail::HeaderList;

struct Sink {
  std::string body;
  std::uint64_t limit = 0;
  bool too_large = false;
  std::vector<std::pair<std::string, std::string>> headers;
};

// The request body: from memory, or from a file as libcurl asks for it.
struct Source {
  std::string_view bytes;
  std::FILE* file = nullptr;
};

std::size_t read_from_source(char* data, std::size_t size, std::size_t count, void* user) {
  auto* source = static_cast<Source*>(user);
  const std::size_t room = size * count;
  if (source->file) {
    const auto got = std::fread(data, 1, room, source->file);
    if (got == 0 && std::ferror(source->file)) return CURL_READFUNC_ABORT;
    return got;
  }
  const auto taken = std::min(room, source->bytes.size());
  std::memcpy(data, source->bytes.data(), taken);
  source->bytes.remove_prefix(taken);
  return taken;
}

std::size_t take_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const std::string_view line(data, size * count);
  // A new status line (after a redirect or a 100 Continue): the headers so far were another's.
  if (line.starts_with("HTTP/")) {
    sink->headers.clear();
  } else if (const auto colon = line.find(':'); colon != std::string_view::npos) {
    sink->headers.emplace_back(std::string(text::trim(line.substr(0, colon))),
                               std::string(text::trim(line.substr(colon + 1))));
  }
  return size * count;
}

std::size_t append_to_sink(char* data, std::size_t size, std::size_t count, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const std::size_t bytes = size * count;
  if (sink->body.size() + bytes > sink->limit) {
    sink->too_large = true;
    return 0;  // makes libcurl stop with CURLE_WRITE_ERROR
  }
  sink->body.append(data, bytes);
  return bytes;
}

// One attempt's outcome: a response, or libcurl's failure.
struct Attempt {
  CURLcode code = CURLE_OK;
  std::string detail;  // libcurl's error buffer
  Response response;
  std::chrono::seconds retry_after{0};
  std::optional<std::string> unreadable;  // the body file could not be opened
  bool too_large = false;
  std::optional<std::string> downgrade;  // the https->http redirect refused
};

HeaderList header_list(const std::vector<std::string>& headers) {
  HeaderList list;
  for (const auto& header : headers) {
    curl_slist* grown = curl_slist_append(list.get(), header.c_str());
    if (!grown) throw std::bad_alloc();
    static_cast<void>(list.release());
    list.reset(grown);
  }
  return list;
}

bool sends_body(const FetchOptions& options) {
  return options.method == "POST" || options.method == "PUT" || options.method == "PATCH";
}

// A transfer that moves nothing for this long is broken (an upload may take hours).
constexpr long kLowSpeedSeconds = 60;

void set_options(CURL* curl, const std::string& url, const FetchOptions& options,
                 curl_slist* headers, Sink& sink, Source& source, std::uint64_t body_size,
                 char* error_buffer) {
  detail::set_common_options(
      curl, url, {.connect_timeout = options.connect_timeout, .ca_file = options.ca_file},
      error_buffer);
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");  // whatever libcurl can decode
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(options.timeout.count()));
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_to_sink);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, take_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &sink);
  if (!options.follow_redirects) curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  if (options.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (sends_body(options)) {
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, options.method.c_str());
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, read_from_source);
    curl_easy_setopt(curl, CURLOPT_READDATA, &source);
    curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(body_size));
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, kLowSpeedSeconds);
  } else if (options.method != "GET") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, options.method.c_str());
  }
}

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

void read_response_info(CURL* curl, Attempt& attempt) {
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  char* content_type = nullptr;
  curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &content_type);
  char* effective_url = nullptr;
  curl_easy_getinfo(curl, CURLINFO_EFFECTIVE_URL, &effective_url);
  curl_off_t retry_after = 0;
  curl_easy_getinfo(curl, CURLINFO_RETRY_AFTER, &retry_after);

  // file:// has no status; reading it is success.
  attempt.response.status = status == 0 ? 200 : static_cast<int>(status);
  if (content_type) attempt.response.content_type = content_type;
  if (effective_url) attempt.response.url = effective_url;
  attempt.retry_after = std::chrono::seconds(retry_after);
}

Attempt try_once(const std::string& url, const FetchOptions& options) {
  EasyHandle curl = detail::make_easy();
  HeaderList headers = header_list(options.headers);
  Sink sink{.limit = options.max_bytes};
  Source source{.bytes = options.body};
  std::uint64_t body_size = options.body.size();
  std::unique_ptr<std::FILE, FileCloser> file;
  Attempt attempt;
  if (options.body_file && sends_body(options)) {
    file.reset(std::fopen(options.body_file->c_str(), "rb"));
    std::error_code error;
    body_size = std::filesystem::file_size(*options.body_file, error);
    if (!file || error) {
      attempt.code = CURLE_READ_ERROR;
      attempt.unreadable = std::strerror(errno);
      return attempt;
    }
    source.file = file.get();
  }
  char error_buffer[CURL_ERROR_SIZE] = {};
  set_options(curl.get(), url, options, headers.get(), sink, source, body_size, error_buffer);

  attempt.code = curl_easy_perform(curl.get());
  attempt.detail = error_buffer;
  attempt.too_large = sink.too_large;
  attempt.downgrade = detail::refused_downgrade(curl.get(), attempt.code, url);
  if (attempt.code == CURLE_OK) {
    read_response_info(curl.get(), attempt);
    attempt.response.body = std::move(sink.body);
    attempt.response.headers = std::move(sink.headers);
  }
  return attempt;
}

bool should_retry(const Attempt& attempt) {
  if (attempt.code != CURLE_OK) return detail::is_transient(attempt.code);
  return detail::is_transient_status(attempt.response.status);
}

Error transfer_error(const std::string& url, const Attempt& attempt, int tries) {
  Error error = Error::failed("cannot fetch " + text::quoted(url::redacted(url)));
  if (attempt.too_large) return error.because("the response is larger than the limit");
  if (attempt.downgrade) return error.because(*attempt.downgrade);
  if (attempt.unreadable)
    return error.because("cannot read the body to send: " + *attempt.unreadable);
  error.because(detail::curl_reason(attempt.code, attempt.detail.c_str(), url));
  if (tries > 1) error.because(fmt::format("gave up after {} tries", tries));
  if (detail::is_tls_failure(attempt.code)) error.hint(detail::kTlsHint);
  return error;
}

std::chrono::milliseconds next_delay(std::chrono::milliseconds delay, const Attempt& attempt,
                                     const FetchOptions& options) {
  auto wanted = std::max<std::chrono::milliseconds>(delay, attempt.retry_after);
  return std::min(wanted, options.max_retry_delay);
}

}  // namespace

Result<Response> fetch(const std::string& url, const FetchOptions& options) {
  // As Transport::open: an error for the caller, not an exception on its thread.
  if (auto missing = detail::libcurl_load_error())
    return Error::failed("cannot fetch " + text::quoted(url::redacted(url))).because(*missing);
  const int attempts = std::max(options.attempts, 1);
  auto delay = options.first_retry_delay;
  for (int tries = 1;; ++tries) {
    Attempt attempt = try_once(url, options);
    if (tries >= attempts || !should_retry(attempt)) {
      if (attempt.code != CURLE_OK) return transfer_error(url, attempt, tries);
      return std::move(attempt.response);
    }
    std::this_thread::sleep_for(next_delay(delay, attempt, options));
    delay = std::min(delay * 2, options.max_retry_delay);
  }
}

std::optional<std::string> Response::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (text::iequals(key, name)) return value;
  }
  return std::nullopt;
}

Result<std::string> fetch_text(const std::string& url, const FetchOptions& options) {
  auto response = fetch(url, options);
  if (!response) return std::move(response).error();
  if (response->status < 200 || response->status > 299) {
    return Error::failed("cannot fetch " + text::quoted(url::redacted(url)))
        .because(fmt::format("the server answered HTTP {}", response->status));
  }
  return std::move(response->body);
}

}  // namespace envkit::net
