#include "download.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <string_view>

#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"

namespace envkit::net::detail {

namespace {

using std::chrono::duration_cast;
using std::chrono::microseconds;
using std::chrono::milliseconds;

std::string display_label(const DownloadRequest& request) {
  if (!request.label.empty()) return url::redacted(request.label);
  if (!request.urls.empty()) return url::redacted(request.urls.front());
  return "a download with no URL";
}

std::vector<std::string> redacted_all(const std::vector<std::string>& urls) {
  std::vector<std::string> shown;
  shown.reserve(urls.size());
  for (const auto& each : urls)
    shown.push_back(url::redacted(each));
  return shown;
}

// A decimal number that is the whole of `digits`.
std::optional<std::uint64_t> number(std::string_view digits) {
  std::uint64_t value = 0;
  const auto* end = digits.data() + digits.size();
  const auto [at, error] = std::from_chars(digits.data(), end, value);
  if (digits.empty() || error != std::errc{} || at != end) return std::nullopt;
  return value;
}

// Content-Range: "bytes START-END/TOTAL", or "bytes */TOTAL" with a 416;
// TOTAL may be "*" (unknown).
struct ContentRange {
  std::optional<std::uint64_t> start, total;
};
ContentRange parse_content_range(std::string_view value) {
  value = text::trim(value);
  if (!text::starts_with_icase(value, "bytes ")) return {};
  value = text::trim(value.substr(6));
  const auto slash = value.find('/');
  if (slash == std::string_view::npos) return {};
  return {.start = number(value.substr(0, std::min(value.find('-'), slash))),
          .total = number(value.substr(slash + 1))};
}

Verdict verdict_of_status(long status) {
  std::string why = fmt::format("the server answered HTTP {}", status);
  // 404, 403, 401...: asking this URL again will not change its mind.
  return is_transient_status(status) ? Verdict::retry(std::move(why))
                                     : Verdict::next_url(std::move(why));
}

// Uniform in [wait/2, wait], so that streams failing together do not retry together.
microseconds jittered(milliseconds wait, std::minstd_rand& random) {
  const auto full = duration_cast<microseconds>(wait).count();
  std::uniform_int_distribution<long long> pick(full / 2, full);
  return microseconds(pick(random));
}

}  // namespace

Download::Download(std::shared_ptr<Core> core, DownloadRequest request)
    : core_(std::move(core)),
      request_(std::move(request)),
      label_(display_label(request_)),
      shown_(redacted_all(request_.urls)),
      backoff_(core_->options.first_retry_delay),
      reasons_(request_.urls.size()) {
  delivered_ = request_.start_at;
  if (request_.urls.empty()) {
    over_ = true;
    error_ =
        Error::failed("cannot download " + label_).because("there is no URL to download it from");
  }
}

// ---- the reader's side ----

Result<std::size_t> Download::read(std::span<std::byte> buffer) {
  if (buffer.empty()) return std::size_t{0};
  std::unique_lock lock(core_->mutex);
  while (unread() == 0 && !over_) {
    request_resume_locked();  // an empty buffer can only fill up if the transfer goes on
    readable_.wait(lock);
  }
  if (unread() == 0) {
    if (error_) return *error_;
    return std::size_t{0};
  }
  const std::size_t count = std::min(buffer.size(), unread());
  std::memcpy(buffer.data(), buffer_.data() + head_, count);
  head_ += count;
  if (head_ == buffer_.size()) {
    buffer_.clear();
    head_ = 0;
  }
  // Unpause at half full rather than empty, so the reader seldom waits.
  if (unread() <= core_->options.buffer_bytes / 2) request_resume_locked();
  return count;
}

std::string Download::url() const {
  std::lock_guard lock(core_->mutex);
  if (shown_.empty()) return {};
  return shown_[std::min(url_index_, shown_.size() - 1)];
}

void Download::drop() {
  std::lock_guard lock(core_->mutex);
  dropped_ = true;
  core_->wake_locked();
}

void Download::request_resume_locked() {
  if (!paused_ || resume_requested_) return;
  resume_requested_ = true;
  core_->wake_locked();
}

// ---- shared bookkeeping ----

TransferProgress Download::progress_locked() const {
  return {.label = label_,
          .received = delivered_,
          .total = request_.expected_size ? request_.expected_size : total_,
          .started = started_};
}

bool Download::take_resume_locked() {
  if (!resume_requested_) return false;
  resume_requested_ = false;
  paused_ = false;
  return true;
}

void Download::append_locked(std::span<const std::byte> bytes) {
  // Move the unread bytes to the front once the read ones are the larger part.
  if (head_ > 0 && head_ >= buffer_.size() / 2) {
    buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
  buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
  delivered_ += bytes.size();
  readable_.notify_all();
}

void Download::finish_locked(std::optional<Error> error) {
  over_ = true;
  error_ = std::move(error);
  readable_.notify_all();
}

void Download::cancel_locked() {
  if (over_) return;
  finish_locked(Error::failed("cannot download " + label_).because("the download was cancelled"));
}

// ---- one attempt ----

CURL* Download::start_attempt() {
  {
    std::lock_guard lock(core_->mutex);
    from_ = delivered_;
    started_ = true;
    paused_ = resume_requested_ = false;
  }
  ++tries_;
  skip_ = 0;
  ranged_ = from_ > 0 && !whole_body_;
  checked_ = false;
  error_status_ = 0;
  error_body_.clear();
  challenge_.clear();
  verdict_.reset();
  range_start_.reset();
  range_total_.reset();
  last_dlnow_ = 0;
  last_activity_ = Clock::now();
  error_buffer_[0] = '\0';

  if (tries_ == 1) warn_if_plain_http(request_.urls[url_index_]);
  easy_ = make_easy();
  CURL* curl = easy_.get();
  const auto& options = core_->options;
  set_common_options(curl, request_.urls[url_index_],
                     {.connect_timeout = options.connect_timeout,
                      .ca_file = options.ca_file,
                      .netrc_file = options.netrc_file},
                     error_buffer_);
  curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
  // The exact bytes the sha256 is of: no Accept-Encoding, nothing decoded.
  curl_easy_setopt(curl, CURLOPT_HTTP_CONTENT_DECODING, 0L);
  // CURLOPT_RANGE rather than RESUME_FROM: libcurl would refuse a server that
  // ignores the Range, and such a server is fine (its first bytes are dropped).
  if (ranged_) curl_easy_setopt(curl, CURLOPT_RANGE, fmt::format("{}-", from_).c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &Download::on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, this);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &Download::on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, this);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, &Download::on_progress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, this);
  // A registry's credentials: libcurl (7.58 on) sends a custom Authorization
  // to the URL's own host and port only, never to the storage a blob redirects to.
  sent_headers_.clear();
  header_list_.reset();
  if (const auto& authorizer = options.authorizer) {
    sent_headers_ = authorizer->headers_for(request_.urls[url_index_]);
    for (const auto& header : sent_headers_)
      header_list_.reset(curl_slist_append(header_list_.release(), header.c_str()));
    if (header_list_) curl_easy_setopt(curl, CURLOPT_HTTPHEADER, header_list_.get());
  }
  return curl;
}

// Once per host: a mirror on the LAN over http is a choice, but not a silent one.
void Download::warn_if_plain_http(const std::string& url) const {
  const auto& warn = core_->options.on_warning;
  if (!warn || !is_plain_http_remote(url)) return;
  const auto host = host_of(url);
  if (!core_->warned_hosts.emplace(host).second) return;
  warn(
      fmt::format("warning: {} is downloaded over plain http from {} (`{}`): anyone on the way "
                  "can read or alter it, and only the lock's sha256 catches that; use https "
                  "where the server has it",
                  label_, host, shown_[url_index_]));
}

std::size_t Download::on_body(char* data, std::size_t size, std::size_t count, void* self) {
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  return static_cast<Download*>(self)->take_body({bytes, size * count});
}

std::size_t Download::on_header(char* data, std::size_t size, std::size_t count, void* self) {
  static_cast<Download*>(self)->take_header({data, size * count});
  return size * count;
}

int Download::on_progress(void* self, curl_off_t, curl_off_t dlnow, curl_off_t, curl_off_t) {
  return static_cast<Download*>(self)->check_stall(dlnow);
}

std::size_t Download::take_body(std::span<const std::byte> bytes) {
  if (!checked_) check_response();
  if (verdict_) return 0;  // ends the attempt (CURLE_WRITE_ERROR); verdict_ says why
  if (error_status_ != 0) {
    take_error_body(bytes);
    return verdict_ ? 0 : bytes.size();
  }
  std::lock_guard lock(core_->mutex);
  if (unread() > 0 && unread() >= core_->options.buffer_bytes) {
    paused_ = true;
    return CURL_WRITEFUNC_PAUSE;  // libcurl hands the same bytes again once unpaused
  }
  const std::size_t whole = bytes.size();
  const auto skipped = static_cast<std::size_t>(std::min<std::uint64_t>(skip_, whole));
  skip_ -= skipped;
  bytes = bytes.subspan(skipped);
  if (const auto& expected = request_.expected_size;
      expected && delivered_ + bytes.size() > *expected) {
    verdict_ = Verdict::next_url(
        fmt::format("the server sent more than the {} bytes the lock records", *expected));
    return 0;
  }
  append_locked(bytes);
  return whole;
}

// Enough of an error's body for a registry's error JSON; the rest is not read.
constexpr std::size_t kErrorBodyBytes = 4096;

void Download::take_error_body(std::span<const std::byte> bytes) {
  const auto room = kErrorBodyBytes - error_body_.size();
  const auto count = std::min(room, bytes.size());
  error_body_.append(reinterpret_cast<const char*>(bytes.data()), count);
  if (error_body_.size() >= kErrorBodyBytes) verdict_ = verdict_of_error_status();
}

void Download::take_header(std::string_view line) {
  // A new status line: a redirect's headers do not describe the final body.
  if (line.starts_with("HTTP/")) {
    range_start_.reset();
    range_total_.reset();
    challenge_.clear();
  } else if (text::starts_with_icase(line, "www-authenticate:") && challenge_.empty()) {
    challenge_ = std::string(text::trim(line.substr(std::strlen("www-authenticate:"))));
  } else if (text::starts_with_icase(line, "content-range:")) {
    const auto range = parse_content_range(line.substr(std::strlen("content-range:")));
    range_start_ = range.start;
    range_total_ = range.total;
  }
}

// A transfer counts as stalled when its received count has not moved for
// stall_timeout; libcurl's LOW_SPEED options only count whole seconds.
int Download::check_stall(curl_off_t dlnow) {
  const auto now = Clock::now();
  bool paused = false;
  {
    std::lock_guard lock(core_->mutex);
    paused = paused_;
  }
  if (paused || dlnow != last_dlnow_) {  // waiting for the reader is not a stall
    last_dlnow_ = dlnow;
    last_activity_ = now;
    return 0;
  }
  if (now - last_activity_ < core_->options.stall_timeout || verdict_) return 0;
  verdict_ = Verdict::retry(
      fmt::format("nothing arrived for {} ms", core_->options.stall_timeout.count()));
  return 1;  // aborts the transfer (CURLE_ABORTED_BY_CALLBACK)
}

// Before the first body byte: is this the body from from_ on, and where does it start?
void Download::check_response() {
  checked_ = true;
  long status = 0;
  curl_easy_getinfo(easy_.get(), CURLINFO_RESPONSE_CODE, &status);
  curl_off_t length = -1;
  curl_easy_getinfo(easy_.get(), CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
  std::optional<std::uint64_t> total;
  if (status == 206) {
    verdict_ = verdict_of_206();
    if (verdict_) return;
    total = range_total_;
    if (!total && length >= 0) total = from_ + static_cast<std::uint64_t>(length);
  } else if (status == 416) {
    verdict_ = verdict_of_416();
    return;
  } else if (status != 0 && (status < 200 || status > 299)) {
    error_status_ = status;  // decided once its body (a registry's error JSON) is read
    return;
  } else if (status == 0) {  // file://: libcurl started reading at from_
    if (length >= 0) total = from_ + static_cast<std::uint64_t>(length);
  } else {  // 2xx without a range: the whole body, whose first from_ bytes the reader has
    skip_ = from_;
    if (length >= 0) total = static_cast<std::uint64_t>(length);
  }
  std::lock_guard lock(core_->mutex);
  total_ = total;
}

// A 206 whose Content-Range is not the rest of the body we asked for (another
// start, another total than the lock's): the server's range support is broken,
// not necessarily its file. The same URL is asked again for the whole body (no
// Range; the bytes the reader has are skipped), and only when that fails too
// does the next URL take over.
std::optional<Verdict> Download::verdict_of_206() {
  const auto& expected = request_.expected_size;
  const bool wrong_start = range_start_ != from_;
  const bool wrong_total = range_total_ && expected && *range_total_ != *expected;
  if (!wrong_start && !wrong_total) return std::nullopt;
  if (!ranged_) {
    return Verdict::next_url(
        "asked for the whole body, the server sent part of it (HTTP 206 without a Range)");
  }
  std::string why;
  if (!wrong_start) {
    why = fmt::format("the server's Content-Range says {} bytes, the lock records {}",
                      *range_total_, *expected);
  } else if (range_start_) {
    why = fmt::format("asked for the bytes from {} on, the server sent them from {}", from_,
                      *range_start_);
  } else {
    why = fmt::format("asked for the bytes from {} on, the server sent no readable Content-Range",
                      from_);
  }
  whole_body_ = true;
  return Verdict::retry(why + " (HTTP 206); asking for the whole body");
}

// No bytes from from_ on. When the whole body is exactly what the reader
// already has, the previous attempt got it all (its Content-Length lied).
Verdict Download::verdict_of_416() const {
  const auto& expected = request_.expected_size;
  if (range_total_ == from_ && (!expected || *expected == from_)) return {};
  if (range_total_ && expected) {
    return Verdict::next_url(
        fmt::format("the server has {} bytes, the lock records {}", *range_total_, *expected));
  }
  return Verdict::next_url(fmt::format("the server has no bytes from {} on (HTTP 416)", from_));
}

Verdict Download::complete_or_short() const {
  const auto& expected = request_.expected_size;
  std::lock_guard lock(core_->mutex);
  if (!expected || delivered_ == *expected) return {};
  return Verdict::retry(fmt::format("the body ended after {} of the {} bytes the lock records",
                                    delivered_, *expected));
}

Verdict Download::verdict_of_partial(CURLcode code) const {
  // The Content-Length promised more than the lock's size, and the lock's size arrived.
  if (code == CURLE_PARTIAL_FILE && request_.expected_size &&
      complete_or_short().kind == Verdict::Kind::done) {
    return {};
  }
  const auto& url = request_.urls[url_index_];
  if (auto downgrade = refused_downgrade(easy_.get(), code, url))
    return Verdict::next_url(*std::move(downgrade));
  const auto reason = curl_reason(code, error_buffer_, url);
  return is_transient(code) ? Verdict::retry(reason) : Verdict::next_url(reason);
}

// A 401 the authorizer can answer (a registry's token) is asked again at once
// with the new credentials, once per URL; any other status is what it was.
Verdict Download::verdict_of_error_status() {
  const auto& url = request_.urls[url_index_];
  const auto& authorizer = core_->options.authorizer;
  if (error_status_ == 401 && authorizer && !reauthorized_ &&
      authorizer->challenged(url, challenge_, sent_headers_)) {
    reauthorized_ = true;
    again_now_ = true;
    return Verdict::retry("the server asked for credentials (HTTP 401)");
  }
  auto verdict = verdict_of_status(error_status_);
  if (authorizer) {
    if (auto more = authorizer->explain(url, error_status_, error_body_); !more.empty())
      verdict.reason += ": " + more;
  }
  return verdict;
}

Verdict Download::verdict_of(CURLcode code) {
  if (verdict_) return *verdict_;
  if (error_status_ != 0) return verdict_of_error_status();
  if (code != CURLE_OK) {
    tls_failed_ = tls_failed_ || is_tls_failure(code);
    return verdict_of_partial(code);
  }
  if (!checked_) check_response();  // an empty body
  if (verdict_) return *verdict_;
  if (error_status_ != 0) return verdict_of_error_status();
  if (skip_ > 0) {
    return Verdict::next_url(
        fmt::format("the body ended before byte {}, where the previous try stopped", from_));
  }
  return complete_or_short();
}

void Download::attempt_over(CURLcode code, std::minstd_rand& random) {
  Verdict verdict = verdict_of(code);
  curl_off_t retry_after = 0;
  curl_easy_getinfo(easy_.get(), CURLINFO_RETRY_AFTER, &retry_after);
  easy_.reset();
  switch (verdict.kind) {
    case Verdict::Kind::done: {
      std::lock_guard lock(core_->mutex);
      finish_locked(std::nullopt);
      return;
    }
    case Verdict::Kind::retry:
      if (again_now_) {
        again_now_ = false;
        --tries_;
        due_ = Clock::now();
        return;
      }
      if (tries_ < std::max(core_->options.attempts, 1)) {
        retry_later(std::chrono::seconds(retry_after), random);
        return;
      }
      [[fallthrough]];
    case Verdict::Kind::next_url:
      next_url(std::move(verdict.reason));
  }
}

// Exponential backoff with jitter; a Retry-After is honoured up to the cap.
void Download::retry_later(std::chrono::seconds retry_after, std::minstd_rand& random) {
  const auto cap = core_->options.max_retry_delay;
  const auto wait =
      std::min<microseconds>(std::max<microseconds>(jittered(backoff_, random), retry_after), cap);
  backoff_ = std::min(backoff_ * 2, cap);
  due_ = Clock::now() + wait;
}

void Download::next_url(std::string reason) {
  reasons_[url_index_] = tries_ > 1 ? fmt::format("{} ({} tries)", reason, tries_) : reason;
  tries_ = 0;
  whole_body_ = false;
  reauthorized_ = false;
  backoff_ = core_->options.first_retry_delay;
  due_ = Clock::now();
  if (request_.on_url_failed && url_index_ + 1 < request_.urls.size())
    request_.on_url_failed(shown_[url_index_], reasons_[url_index_]);
  std::lock_guard lock(core_->mutex);
  if (url_index_ + 1 < request_.urls.size()) {
    ++url_index_;
    return;
  }
  finish_locked(failure());
}

Error Download::failure() const {
  Error error = Error::failed("cannot download " + label_);
  for (std::size_t i = 0; i < shown_.size(); ++i)
    error.because(text::quoted(shown_[i]) + ": " + reasons_[i]);
  // A proxy that is down or refuses reads like the server failing: say it was there.
  if (auto proxy = proxy_for(request_.urls.back())) {
    error.because(
        fmt::format("envkit went through the proxy {} (from ${})", proxy->url, proxy->variable));
  }
  if (tls_failed_) error.hint(kTlsHint);
  return error;
}

}  // namespace envkit::net::detail
