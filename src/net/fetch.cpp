#include "envkit/net/fetch.hpp"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <thread>

#include "envkit/core/env_vars.hpp"
#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"

namespace envkit::net {

namespace {

struct EasyDeleter {
  void operator()(CURL* handle) const { curl_easy_cleanup(handle); }
};
struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using EasyHandle = std::unique_ptr<CURL, EasyDeleter>;
using HeaderList = std::unique_ptr<curl_slist, SlistDeleter>;

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Sink {
  std::string body;
  std::uint64_t limit = 0;
  bool too_large = false;
};

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
  bool too_large = false;
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

std::optional<std::string> ca_file_for(const FetchOptions& options) {
  if (options.ca_file) return options.ca_file->string();
  return env::get(env::kSslCertFile);
}

void set_options(CURL* curl, const std::string& url, const FetchOptions& options,
                 curl_slist* headers, Sink& sink, char* error_buffer) {
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https,file");
  // A redirect may never turn a web request into a local file read.
  curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
  if (auto ca = ca_file_for(options)) curl_easy_setopt(curl, CURLOPT_CAINFO, ca->c_str());
  if (auto dir = env::get(env::kSslCertDir)) curl_easy_setopt(curl, CURLOPT_CAPATH, dir->c_str());
  curl_easy_setopt(curl, CURLOPT_NETRC, static_cast<long>(CURL_NETRC_OPTIONAL));
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");  // whatever libcurl can decode
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "envkit/" ENVKIT_NET_VERSION);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options.connect_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(options.timeout.count()));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM (threads)
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_to_sink);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
}

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
  init_curl_once();
  EasyHandle curl(curl_easy_init());
  if (!curl) throw std::bad_alloc();
  HeaderList headers = header_list(options.headers);
  Sink sink{.limit = options.max_bytes};
  char error_buffer[CURL_ERROR_SIZE] = {};
  set_options(curl.get(), url, options, headers.get(), sink, error_buffer);

  Attempt attempt;
  attempt.code = curl_easy_perform(curl.get());
  attempt.detail = error_buffer;
  attempt.too_large = sink.too_large;
  if (attempt.code == CURLE_OK) {
    read_response_info(curl.get(), attempt);
    attempt.response.body = std::move(sink.body);
  }
  return attempt;
}

bool is_transient(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

bool is_transient_status(int status) {
  return status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

bool should_retry(const Attempt& attempt) {
  if (attempt.code != CURLE_OK) return is_transient(attempt.code);
  return is_transient_status(attempt.response.status);
}

bool is_tls_failure(CURLcode code) {
  return code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CACERT_BADFILE ||
         code == CURLE_SSL_CONNECT_ERROR || code == CURLE_SSL_CERTPROBLEM;
}

Error transfer_error(const std::string& url, const Attempt& attempt, int tries) {
  Error error = Error::failed("cannot fetch " + text::quoted(url::redacted(url)));
  if (attempt.too_large) return error.because("the response is larger than the limit");
  // libcurl's detail may quote the URL; never let it carry the credentials out.
  std::string reason = attempt.detail.empty() ? curl_easy_strerror(attempt.code) : attempt.detail;
  const std::string redacted = url::redacted(url);
  if (redacted != url) {
    for (auto at = reason.find(url); at != std::string::npos; at = reason.find(url))
      reason.replace(at, url.size(), redacted);
  }
  error.because(reason);
  if (tries > 1) error.because(fmt::format("gave up after {} tries", tries));
  if (is_tls_failure(attempt.code)) {
    error.hint(
        "behind a TLS-intercepting proxy, point SSL_CERT_FILE at a CA bundle that "
        "includes its certificate");
  }
  return error;
}

std::chrono::milliseconds next_delay(std::chrono::milliseconds delay, const Attempt& attempt,
                                     const FetchOptions& options) {
  auto wanted = std::max<std::chrono::milliseconds>(delay, attempt.retry_after);
  return std::min(wanted, options.max_retry_delay);
}

}  // namespace

Result<Response> fetch(const std::string& url, const FetchOptions& options) {
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
