#include "url_chain.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "envkit/core/url.hpp"
#include "envkit/sys/fs.hpp"
#include "envkit/sys/unique_fd.hpp"

namespace envkit::net::detail {

namespace {

constexpr std::string_view kScheme = "file://";

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "file:///srv/m/a%2Bb.tar.gz" -> "/srv/m/a+b.tar.gz", as libcurl reads it.
std::string local_path(std::string_view url) {
  auto rest = url.substr(kScheme.size());
  if (rest.starts_with("localhost/")) rest.remove_prefix(std::string_view("localhost").size());
  std::string path;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '%' && i + 2 < rest.size() && hex_value(rest[i + 1]) >= 0 &&
        hex_value(rest[i + 2]) >= 0) {
      path += static_cast<char>(hex_value(rest[i + 1]) * 16 + hex_value(rest[i + 2]));
      i += 2;
    } else {
      path += rest[i];
    }
  }
  return path;
}

std::string shown(std::string_view url) {
  return "`" + url::redacted(url) + "`";
}

Error not_regular(const std::string& url, const std::string& path, mode_t mode) {
  return Error::failed(
      fmt::format("{}: `{}` is {}; envkit reads local sources only from regular "
                  "files, which end",
                  shown(url), path, sys::file_kind(mode)));
}

// What a local file's reading thread and its reader share.
struct FileState {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::byte> ready;  // read, not yet taken: ready[head..]
  std::size_t head = 0;
  bool end = false;
  bool stop = false;  // the reader is gone
  std::optional<std::string> error;

  [[nodiscard]] std::size_t unread() const { return ready.size() - head; }
};

// The file's bytes past the offset, `limit` at most, read ahead up to `capacity`.
// One byte is asked for past the limit: a file that grows is told from one that ends.
void read_ahead(const std::shared_ptr<FileState>& state, const sys::UniqueFd& fd,
                std::uint64_t limit, const std::string& too_long, std::size_t capacity) {
  std::vector<std::byte> chunk(std::size_t{256} << 10);
  std::uint64_t count = 0;
  while (true) {
    {
      std::unique_lock lock(state->mutex);
      state->changed.wait(lock, [&] { return state->stop || state->unread() < capacity; });
      if (state->stop) return;
    }
    const auto want =
        static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), limit - count + 1));
    const auto got = ::read(fd.get(), chunk.data(), want);
    if (got < 0 && errno == EINTR) continue;
    const int read_errno = errno;
    std::lock_guard lock(state->mutex);
    if (got < 0) {
      state->error = std::strerror(read_errno);
    } else if (got == 0) {
      state->end = true;
    } else if (count + static_cast<std::uint64_t>(got) > limit) {
      state->error = too_long;
    } else {
      if (state->head > 0 && state->head >= state->ready.size() / 2) {
        state->ready.erase(state->ready.begin(),
                           state->ready.begin() + static_cast<std::ptrdiff_t>(state->head));
        state->head = 0;
      }
      state->ready.insert(state->ready.end(), chunk.begin(), chunk.begin() + got);
      count += static_cast<std::uint64_t>(got);
    }
    state->changed.notify_all();
    if (state->end || state->error) return;
  }
}

// One local file, from byte `offset` on. A thread of its own reads it ahead,
// so that a read() that never returns (a hung NFS server, a FUSE file) ends
// the stream after the stall timeout instead of the reader's thread.
class LocalFile final : public ByteStream {
 public:
  LocalFile(sys::UniqueFd fd, std::string url, std::uint64_t limit, std::string too_long,
            const TransportOptions& options)
      : state_(std::make_shared<FileState>()),
        url_(std::move(url)),
        stall_timeout_(options.stall_timeout) {
    thread_ =
        std::thread([state = state_, fd = std::move(fd), limit, too_long = std::move(too_long),
                     capacity = std::max<std::size_t>(options.buffer_bytes, 1)] {
          read_ahead(state, fd, limit, too_long, capacity);
        });
  }
  ~LocalFile() override {
    {
      std::lock_guard lock(state_->mutex);
      state_->stop = true;
    }
    state_->changed.notify_all();
    // A read that never returns must not hold the reader: the thread owns
    // what it touches (the state, the descriptor) and ends when read() does.
    thread_.detach();
  }
  LocalFile(const LocalFile&) = delete;
  LocalFile& operator=(const LocalFile&) = delete;

  Result<std::size_t> read(std::span<std::byte> buffer) override {
    if (buffer.empty()) return std::size_t{0};
    std::unique_lock lock(state_->mutex);
    const bool moved = state_->changed.wait_for(
        lock, stall_timeout_, [&] { return state_->unread() > 0 || state_->end || state_->error; });
    if (!moved) {
      return Error::failed(
          fmt::format("{}: nothing arrived for {} ms", shown(url_), stall_timeout_.count()));
    }
    if (state_->unread() == 0) {
      if (state_->error) return Error::failed(shown(url_) + ": " + *state_->error);
      return std::size_t{0};
    }
    const std::size_t count = std::min(buffer.size(), state_->unread());
    std::memcpy(buffer.data(), state_->ready.data() + state_->head, count);
    state_->head += count;
    state_->changed.notify_all();  // room for the thread to read ahead
    return count;
  }
  [[nodiscard]] std::string url() const override { return url::redacted(url_); }

 private:
  std::shared_ptr<FileState> state_;
  std::string url_;
  std::chrono::milliseconds stall_timeout_;
  std::thread thread_;
};

// Only a regular file is a source: a device (/dev/zero), a FIFO or a socket
// never ends, and a directory has no bytes. It is looked at before it is
// opened (opening a FIFO waits for a writer; opening some devices does
// things), and again once open, in case it was swapped in between.
Result<std::unique_ptr<ByteStream>> open_file(const std::string& url,
                                              const DownloadRequest& request, std::uint64_t offset,
                                              const TransportOptions& options) {
  const std::string path = local_path(url);
  struct stat before {};
  if (::stat(path.c_str(), &before) != 0)
    return Error::failed(shown(url) + ": " + std::strerror(errno));
  if (!S_ISREG(before.st_mode)) return not_regular(url, path, before.st_mode);
  sys::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  struct stat opened {};
  if (!fd.valid() || ::fstat(fd.get(), &opened) != 0)
    return Error::failed(shown(url) + ": " + std::strerror(errno));
  if (!S_ISREG(opened.st_mode)) return not_regular(url, path, opened.st_mode);
  const auto size = static_cast<std::uint64_t>(opened.st_size);
  const auto& expected = request.expected_size;
  if (expected && size != *expected) {
    return Error::failed(
        fmt::format("{}: the file has {} bytes, the lock records {}", shown(url), size, *expected));
  }
  const std::uint64_t end = expected.value_or(size);
  if (offset > end) {
    return Error::failed(fmt::format("{}: the file has {} bytes, {} were asked to be skipped",
                                     shown(url), size, offset));
  }
  if (::lseek(fd.get(), static_cast<off_t>(offset), SEEK_SET) < 0)
    return Error::failed(shown(url) + ": " + std::strerror(errno));
  std::string too_long = expected ? fmt::format(
                                        "the file has more than the {} bytes the lock "
                                        "records (it grew while read)",
                                        *expected)
                                  : fmt::format("the file grew past its {} bytes while read", size);
  return std::unique_ptr<ByteStream>(
      std::make_unique<LocalFile>(std::move(fd), url, end - offset, std::move(too_long), options));
}

class Chain final : public ByteStream {
 public:
  Chain(DownloadRequest request, const TransportOptions& options,
        std::function<std::unique_ptr<ByteStream>(DownloadRequest)> remote)
      : request_(std::move(request)), options_(options), remote_(std::move(remote)) {
    delivered_ = request_.start_at;
  }

  Result<std::size_t> read(std::span<std::byte> buffer) override {
    while (true) {
      if (!current_ && !open_next()) return failure();
      auto got = current_->read(buffer);
      if (got) {
        delivered_ += *got;
        return got;
      }
      // This run of URLs is spent: keep why, go on with the next from the same byte.
      const auto& error = got.error();
      if (error.causes().empty()) reasons_.push_back(error.message());
      for (const auto& cause : error.causes())
        reasons_.push_back(cause);
      last_url_ = current_->url();
      current_.reset();
      report_failed(last_url_);
    }
  }
  [[nodiscard]] std::string url() const override { return current_ ? current_->url() : last_url_; }

 private:
  // The next file, or the next run of remote URLs; false when none is left.
  bool open_next() {
    const auto& urls = request_.urls;
    while (next_ < urls.size()) {
      if (is_file_url(urls[next_])) {
        auto file = open_file(urls[next_], request_, delivered_, options_);
        last_url_ = url::redacted(urls[next_]);
        ++next_;
        if (file) {
          current_ = *std::move(file);
          return true;
        }
        reasons_.push_back(file.error().message());
        report_failed(last_url_);
        continue;
      }
      DownloadRequest run = request_;
      run.urls.clear();
      for (; next_ < urls.size() && !is_file_url(urls[next_]); ++next_)
        run.urls.push_back(urls[next_]);
      run.start_at = delivered_;
      current_ = remote_(std::move(run));
      return true;
    }
    return false;
  }

  // `url` failed and another URL is left: say so (a mirror that is down should
  // not go unnoticed). A remote run reports its own URLs but its last; the
  // reasons read "`URL`: why", as the errors name them.
  void report_failed(const std::string& url) const {
    if (!request_.on_url_failed || next_ >= request_.urls.size() || reasons_.empty()) return;
    const auto prefix = shown(url) + ": ";
    const auto found = std::find_if(reasons_.rbegin(), reasons_.rend(),
                                    [&](const auto& reason) { return reason.starts_with(prefix); });
    request_.on_url_failed(
        url, found == reasons_.rend() ? reasons_.back() : found->substr(prefix.size()));
  }

  Error failure() const {
    const auto label = request_.label.empty() && !request_.urls.empty()
                           ? url::redacted(request_.urls.front())
                           : request_.label;
    Error error = Error::failed("cannot download " + label);
    for (const auto& reason : reasons_)
      error.because(reason);
    return error;
  }

  DownloadRequest request_;
  TransportOptions options_;
  std::function<std::unique_ptr<ByteStream>(DownloadRequest)> remote_;
  std::unique_ptr<ByteStream> current_;
  std::size_t next_ = 0;
  std::uint64_t delivered_ = 0;
  std::vector<std::string> reasons_;
  std::string last_url_;
};

}  // namespace

bool is_file_url(std::string_view url) {
  return url.starts_with(kScheme);
}

std::unique_ptr<ByteStream> open_chain(
    DownloadRequest request, const TransportOptions& options,
    std::function<std::unique_ptr<ByteStream>(DownloadRequest)> remote) {
  return std::make_unique<Chain>(std::move(request), options, std::move(remote));
}

}  // namespace envkit::net::detail
