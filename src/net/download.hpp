#pragma once

// One download of a Transport: the bytes waiting for its reader, and the
// attempts (per URL, with resume) that fetch them. Private to src/net.
//
// Two threads touch a Download: its reader (read/url/drop) and the
// transport's loop (everything else, libcurl's callbacks included). What both
// see is guarded by Core::mutex; the rest belongs to the loop alone.

#include <curl/curl.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "curl_common.hpp"
#include "envkit/core/result.hpp"
#include "envkit/net/transport.hpp"

namespace envkit::net::detail {

using Clock = std::chrono::steady_clock;

// What a transport's loop and its readers share. One mutex guards every
// download's shared fields: transfers hand over one chunk at a time under
// it, so it is never held for long.
struct Core {
  explicit Core(TransportOptions opts) : options(std::move(opts)) {}

  const TransportOptions options;
  std::mutex mutex;
  CURLM* multi = nullptr;  // readers wake it only while `running`
  bool running = true;
  // The loop's own: hosts already warned about for plain http.
  std::set<std::string, std::less<>> warned_hosts;

  // Makes the loop look at the downloads again; the caller holds `mutex`.
  void wake_locked() const {
    if (running && multi) curl_multi_wakeup(multi);
  }
};

// What one attempt came to.
struct Verdict {
  enum class Kind { done, retry, next_url };
  Kind kind = Kind::done;
  std::string reason;  // why it failed, for the error

  static Verdict retry(std::string why) { return {Kind::retry, std::move(why)}; }
  static Verdict next_url(std::string why) { return {Kind::next_url, std::move(why)}; }
};

class Download {
 public:
  Download(std::shared_ptr<Core> core, DownloadRequest request);
  Download(const Download&) = delete;
  Download& operator=(const Download&) = delete;

  // ---- the reader's side (any thread) ----
  [[nodiscard]] Result<std::size_t> read(std::span<std::byte> buffer);
  [[nodiscard]] std::string url() const;
  // The stream is gone: the loop cancels the transfer.
  void drop();

  // ---- the loop's side; `_locked` ones with core->mutex held ----
  [[nodiscard]] bool dropped_locked() const { return dropped_; }
  [[nodiscard]] bool over_locked() const { return over_; }
  [[nodiscard]] bool running() const { return easy_ != nullptr; }
  [[nodiscard]] CURL* handle() const { return easy_.get(); }
  // Not running and not over: when its next attempt may start.
  [[nodiscard]] Clock::time_point due() const { return due_; }
  [[nodiscard]] TransferProgress progress_locked() const;
  // True once, after the reader drained a paused transfer.
  bool take_resume_locked();

  // A new transfer for the next attempt (current URL, from the first byte not
  // yet delivered); the Download owns it until attempt_over().
  CURL* start_attempt();
  // About to unpause: paused time is not a stall.
  void unpausing() { last_activity_ = Clock::now(); }
  // libcurl is done with the transfer (removed from the multi handle):
  // completes, schedules another try, moves on to the next URL or fails.
  void attempt_over(CURLcode code, std::minstd_rand& random);
  // The transfer is removed without a verdict (dropped, or shutting down).
  void abandon_attempt() { easy_.reset(); }
  // The transport is going away: the reader gets an error.
  void cancel_locked();

 private:
  static std::size_t on_body(char* data, std::size_t size, std::size_t count, void* self);
  static std::size_t on_header(char* data, std::size_t size, std::size_t count, void* self);
  static int on_progress(void* self, curl_off_t, curl_off_t dlnow, curl_off_t, curl_off_t);

  std::size_t take_body(std::span<const std::byte> bytes);
  void take_header(std::string_view line);
  int check_stall(curl_off_t dlnow);
  void check_response();
  void warn_if_plain_http(const std::string& url) const;
  [[nodiscard]] Verdict verdict_of(CURLcode code);
  [[nodiscard]] Verdict verdict_of_416() const;
  [[nodiscard]] Verdict verdict_of_error_status();
  void take_error_body(std::span<const std::byte> bytes);
  [[nodiscard]] std::optional<Verdict> verdict_of_206();
  [[nodiscard]] Verdict verdict_of_partial(CURLcode code) const;
  [[nodiscard]] Verdict complete_or_short() const;
  void retry_later(std::chrono::seconds retry_after, std::minstd_rand& random);
  void next_url(std::string reason);
  void finish_locked(std::optional<Error> error);
  [[nodiscard]] Error failure() const;
  [[nodiscard]] std::size_t unread() const { return buffer_.size() - head_; }
  void append_locked(std::span<const std::byte> bytes);
  void request_resume_locked();

  const std::shared_ptr<Core> core_;
  const DownloadRequest request_;
  const std::string label_;               // redacted
  const std::vector<std::string> shown_;  // the URLs, redacted
  std::condition_variable readable_;

  // ---- shared: guarded by core_->mutex ----
  std::vector<std::byte> buffer_;  // unread bytes are buffer_[head_..]
  std::size_t head_ = 0;
  std::uint64_t delivered_ = 0;  // body bytes handed over, all attempts
  std::optional<std::uint64_t> total_;
  std::size_t url_index_ = 0;
  bool started_ = false;
  bool paused_ = false;            // the body callback paused the transfer
  bool resume_requested_ = false;  // the reader drained it since
  bool dropped_ = false;
  bool over_ = false;
  std::optional<Error> error_;

  // ---- the loop's own ----
  EasyHandle easy_;
  char error_buffer_[CURL_ERROR_SIZE] = {};
  int tries_ = 0;  // on the current URL
  std::chrono::milliseconds backoff_{0};
  Clock::time_point due_ = Clock::now();
  std::vector<std::string> reasons_;  // per URL tried, why it failed
  bool tls_failed_ = false;
  // The current URL answered a Range with the wrong bytes: ask it for the whole body.
  bool whole_body_ = false;
  // This attempt:
  std::uint64_t from_ = 0;          // delivered_ when it started
  std::uint64_t skip_ = 0;          // body bytes to drop (a server that ignored Range)
  bool ranged_ = false;             // it sent a Range header
  bool checked_ = false;            // the response's status and range were looked at
  std::optional<Verdict> verdict_;  // decided by a callback, ends the attempt
  std::optional<std::uint64_t> range_start_, range_total_;  // Content-Range
  // An error status (4xx, 5xx) and the start of its body (a registry's error
  // JSON), and the last WWW-Authenticate, for the verdict at the end.
  long error_status_ = 0;
  std::string error_body_;
  std::string challenge_;
  // The authorizer's headers for this attempt, and libcurl's copy of them.
  std::vector<std::string> sent_headers_;
  HeaderList header_list_;
  // The current URL's 401 was answered with new credentials once already.
  bool reauthorized_ = false;
  bool again_now_ = false;  // the next attempt carries new credentials: no wait, no try counted
  curl_off_t last_dlnow_ = 0;
  Clock::time_point last_activity_;
};

}  // namespace envkit::net::detail
