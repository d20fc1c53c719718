#include "envkit/net/transport.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <mutex>
#include <new>
#include <random>
#include <thread>
#include <unordered_map>

#include "curl_common.hpp"
#include "download.hpp"
#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "url_chain.hpp"

// One thread drives every transfer through one libcurl multi handle. Each
// turn of its loop: look at the downloads under the lock (drop the dropped,
// unpause the drained, start the due while slots are free), then let libcurl
// move bytes, then collect finished attempts, then sleep in curl_multi_poll
// until a socket is ready, a retry is due, a reader wakes it, or the next
// tick while transfers run (libcurl's progress callback, where stalls are
// noticed, runs on each turn).
namespace envkit::net {

using detail::Clock;
using detail::Core;
using detail::Download;

namespace {

using namespace std::chrono_literals;

class Stream final : public ByteStream {
 public:
  explicit Stream(std::shared_ptr<Download> download) : download_(std::move(download)) {}
  ~Stream() override { download_->drop(); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  Result<std::size_t> read(std::span<std::byte> buffer) override { return download_->read(buffer); }
  [[nodiscard]] std::string url() const override { return download_->url(); }

 private:
  std::shared_ptr<Download> download_;
};

// A download that cannot start because libcurl cannot be loaded: its reader
// gets the reason, as for any failed download, instead of an exception
// thrown on whichever thread opened it.
class Unavailable final : public ByteStream {
 public:
  Unavailable(const DownloadRequest& request, std::string why)
      : url_(request.urls.empty() ? std::string() : url::redacted(request.urls.front())),
        why_(std::move(why)) {}

  Result<std::size_t> read(std::span<std::byte>) override {
    return Error::failed("cannot download " + url_ + ": " + why_);
  }
  [[nodiscard]] std::string url() const override { return url_; }

 private:
  std::string url_;
  std::string why_;
};

// What one turn of the loop does with libcurl, decided under the lock.
struct Plan {
  std::vector<std::shared_ptr<Download>> remove, unpause, start;
  Clock::time_point wake_at;
};

std::chrono::milliseconds tick(const TransportOptions& options) {
  return std::clamp<std::chrono::milliseconds>(options.stall_timeout / 4, 5ms, 100ms);
}

int milliseconds_until(Clock::time_point when) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(when - Clock::now());
  return static_cast<int>(std::clamp<std::chrono::milliseconds>(left, 0ms, 1000ms).count());
}

detail::MultiHandle make_multi() {
  detail::init_curl_once();
  detail::MultiHandle multi(curl_multi_init());
  if (!multi) throw std::bad_alloc();
  // Several downloads from one HTTP/2 server share its connection.
  curl_multi_setopt(multi.get(), CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
  return multi;
}

}  // namespace

struct Transport::Impl {
  explicit Impl(TransportOptions options)
      : core(std::make_shared<Core>(std::move(options))),
        multi(make_multi()),
        jobs(static_cast<std::size_t>(std::max(core->options.jobs, 1))),
        random(std::random_device{}()) {
    core->multi = multi.get();
    thread = std::thread([this] { run(); });
  }

  ~Impl() {
    {
      std::lock_guard lock(core->mutex);
      stopping = true;
      core->wake_locked();
    }
    thread.join();
  }

  void run();
  Plan plan_locked(Clock::time_point now);
  void carry_out(const Plan& plan);
  int collect_finished();
  void shut_down();

  const std::shared_ptr<Core> core;
  detail::MultiHandle multi;
  const std::size_t jobs;
  // Guarded by core->mutex: unfinished downloads in the order they were opened.
  std::vector<std::shared_ptr<Download>> downloads;
  bool stopping = false;
  // The loop's own: the downloads whose transfer is in the multi handle.
  std::unordered_map<CURL*, std::shared_ptr<Download>> running;
  std::minstd_rand random;
  std::thread thread;  // last: starts once everything above exists
};

void Transport::Impl::run() {
  try {
    while (true) {
      Plan plan;
      {
        std::lock_guard lock(core->mutex);
        if (stopping) break;
        plan = plan_locked(Clock::now());
      }
      carry_out(plan);
      int still_running = 0;
      curl_multi_perform(multi.get(), &still_running);
      if (collect_finished() > 0) continue;  // their next attempts may be due now
      curl_multi_poll(multi.get(), nullptr, 0, milliseconds_until(plan.wake_at), nullptr);
    }
  } catch (const std::exception&) {
    // Out of memory in the loop: the readers get "cancelled" rather than a hang.
  }
  shut_down();
}

Plan Transport::Impl::plan_locked(Clock::time_point now) {
  Plan plan{.wake_at = now + 1s};  // nothing to watch: sleep until woken
  std::erase_if(downloads, [&](const std::shared_ptr<Download>& download) {
    if (download->dropped_locked()) {
      if (download->running()) plan.remove.push_back(download);
      return true;
    }
    return download->over_locked();
  });
  std::size_t active = running.size() - plan.remove.size();
  for (const auto& download : downloads) {
    if (download->running()) {
      if (download->take_resume_locked()) plan.unpause.push_back(download);
    } else if (download->due() > now) {
      plan.wake_at = std::min(plan.wake_at, download->due());
    } else if (active < jobs) {
      plan.start.push_back(download);
      ++active;
    }
  }
  if (active > 0) plan.wake_at = std::min(plan.wake_at, now + tick(core->options));
  return plan;
}

void Transport::Impl::carry_out(const Plan& plan) {
  for (const auto& download : plan.remove) {
    curl_multi_remove_handle(multi.get(), download->handle());
    running.erase(download->handle());
    download->abandon_attempt();
  }
  // Outside the lock: unpausing may call the body callback right away.
  for (const auto& download : plan.unpause) {
    download->unpausing();
    curl_easy_pause(download->handle(), CURLPAUSE_CONT);
  }
  for (const auto& download : plan.start) {
    CURL* easy = download->start_attempt();
    if (curl_multi_add_handle(multi.get(), easy) != CURLM_OK) {
      download->attempt_over(CURLE_FAILED_INIT, random);
      continue;
    }
    running.emplace(easy, download);
  }
}

int Transport::Impl::collect_finished() {
  int finished = 0;
  int left = 0;
  while (CURLMsg* message = curl_multi_info_read(multi.get(), &left)) {
    if (message->msg != CURLMSG_DONE) continue;
    // `message` is gone once its handle is removed: copy what is needed first.
    CURL* easy = message->easy_handle;
    const CURLcode code = message->data.result;
    auto found = running.find(easy);
    if (found == running.end()) continue;
    const std::shared_ptr<Download> download = std::move(found->second);
    running.erase(found);
    curl_multi_remove_handle(multi.get(), easy);
    download->attempt_over(code, random);
    ++finished;
  }
  return finished;
}

void Transport::Impl::shut_down() {
  for (auto& [easy, download] : running) {
    curl_multi_remove_handle(multi.get(), easy);
    download->abandon_attempt();
  }
  running.clear();
  std::lock_guard lock(core->mutex);
  core->running = false;  // readers stop waking the multi handle, which goes soon
  for (const auto& download : downloads)
    download->cancel_locked();
  downloads.clear();
}

Transport::Transport(TransportOptions options) : options_(std::move(options)) {}

Transport::~Transport() = default;

Transport::Impl& Transport::started() {
  const std::lock_guard lock(start_mutex_);
  if (!impl_) impl_ = std::make_unique<Impl>(options_);
  return *impl_;
}

Transport::Impl* Transport::started_or_null() const {
  const std::lock_guard lock(start_mutex_);
  return impl_.get();
}

std::unique_ptr<ByteStream> Transport::open(DownloadRequest request) {
  if (std::any_of(request.urls.begin(), request.urls.end(), detail::is_file_url)) {
    return detail::open_chain(std::move(request), options_,
                              [this](DownloadRequest run) { return open(std::move(run)); });
  }
  if (auto missing = detail::libcurl_load_error())
    return std::make_unique<Unavailable>(request, std::move(*missing));
  auto& impl = started();
  auto download = std::make_shared<Download>(impl.core, std::move(request));
  {
    std::lock_guard lock(impl.core->mutex);
    if (!impl.core->running) {
      download->cancel_locked();
    } else if (!download->over_locked()) {
      impl.downloads.push_back(download);
      impl.core->wake_locked();
    }
  }
  return std::make_unique<Stream>(std::move(download));
}

bool is_plain_http_remote(std::string_view url) {
  if (!text::starts_with_icase(url, "http://")) return false;
  const auto host = detail::host_of(url);
  const bool ipv4_loopback =
      host.starts_with("127.") && host.find_first_not_of("0123456789.") == std::string_view::npos;
  const bool loopback = text::iequals(host, "localhost") || ipv4_loopback || host == "::1" ||
                        host == "0:0:0:0:0:0:0:1";
  return !loopback;
}

std::vector<TransferProgress> Transport::progress() const {
  std::vector<TransferProgress> snapshot;
  const Impl* impl = started_or_null();
  if (impl == nullptr) return snapshot;
  std::lock_guard lock(impl->core->mutex);
  for (const auto& download : impl->downloads) {
    if (!download->over_locked() && !download->dropped_locked())
      snapshot.push_back(download->progress_locked());
  }
  return snapshot;
}

}  // namespace envkit::net
