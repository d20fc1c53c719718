#include "envkit/sys/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "envkit/core/text.hpp"

namespace envkit::sys {

namespace {

Result<int> open_lock_file(const std::filesystem::path& path) {
  std::error_code ignored;
  std::filesystem::create_directories(path.parent_path(), ignored);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Error::failed("cannot open lock file " + text::quoted(path.string()))
        .because(std::strerror(errno));
  }
  return fd;
}

int flock_operation(FileLock::Mode mode) {
  return mode == FileLock::Mode::exclusive ? LOCK_EX : LOCK_SH;
}

}  // namespace

Result<FileLock> FileLock::acquire(const std::filesystem::path& path, Mode mode,
                                   const std::function<void()>& on_wait) {
  auto fd = open_lock_file(path);
  if (!fd) return std::move(fd).error();
  FileLock lock(*fd);
  if (::flock(*fd, flock_operation(mode) | LOCK_NB) == 0) return lock;
  if (errno != EWOULDBLOCK) {
    return Error::failed("cannot lock " + text::quoted(path.string()))
        .because(std::strerror(errno));
  }
  if (on_wait) on_wait();
  while (::flock(*fd, flock_operation(mode)) != 0) {
    if (errno != EINTR) {
      return Error::failed("cannot lock " + text::quoted(path.string()))
          .because(std::strerror(errno));
    }
  }
  return lock;
}

Result<FileLock> FileLock::try_acquire(const std::filesystem::path& path, Mode mode) {
  auto fd = open_lock_file(path);
  if (!fd) return std::move(fd).error();
  FileLock lock(*fd);
  if (::flock(*fd, flock_operation(mode) | LOCK_NB) != 0) {
    return Error::failed(text::quoted(path.string()) + " is locked by another process");
  }
  return lock;
}

FileLock::FileLock(FileLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the flock
}

}  // namespace envkit::sys
