#include "url_chain.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "envkit/core/url.hpp"
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

// One local file, from byte `offset` on.
class LocalFile final : public ByteStream {
 public:
  LocalFile(sys::UniqueFd fd, std::string url) : fd_(std::move(fd)), url_(std::move(url)) {}

  Result<std::size_t> read(std::span<std::byte> buffer) override {
    while (true) {
      const auto got = ::read(fd_.get(), buffer.data(), buffer.size());
      if (got >= 0) return static_cast<std::size_t>(got);
      if (errno != EINTR) return Error::failed(shown(url_) + ": " + std::strerror(errno));
    }
  }
  [[nodiscard]] std::string url() const override { return url::redacted(url_); }

 private:
  sys::UniqueFd fd_;
  std::string url_;
};

Result<std::unique_ptr<ByteStream>> open_file(const std::string& url, std::uint64_t offset) {
  sys::UniqueFd fd(::open(local_path(url).c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid() || ::lseek(fd.get(), static_cast<off_t>(offset), SEEK_SET) < 0)
    return Error::failed(shown(url) + ": " + std::strerror(errno));
  return std::unique_ptr<ByteStream>(std::make_unique<LocalFile>(std::move(fd), url));
}

class Chain final : public ByteStream {
 public:
  Chain(DownloadRequest request, std::function<std::unique_ptr<ByteStream>(DownloadRequest)> remote)
      : request_(std::move(request)), remote_(std::move(remote)) {
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
    }
  }
  [[nodiscard]] std::string url() const override { return current_ ? current_->url() : last_url_; }

 private:
  // The next file, or the next run of remote URLs; false when none is left.
  bool open_next() {
    const auto& urls = request_.urls;
    while (next_ < urls.size()) {
      if (is_file_url(urls[next_])) {
        auto file = open_file(urls[next_], delivered_);
        last_url_ = url::redacted(urls[next_]);
        ++next_;
        if (file) {
          current_ = *std::move(file);
          return true;
        }
        reasons_.push_back(file.error().message());
        if (request_.on_url_failed && next_ < urls.size())
          request_.on_url_failed(last_url_, reasons_.back());
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
    DownloadRequest request, std::function<std::unique_ptr<ByteStream>(DownloadRequest)> remote) {
  return std::make_unique<Chain>(std::move(request), std::move(remote));
}

}  // namespace envkit::net::detail
