#pragma once

#include <filesystem>
#include <functional>

#include "envkit/core/result.hpp"

namespace envkit::sys {

// An advisory lock (flock) on a lock file, held for the object's life. The
// kernel drops it when the process dies, so a `kill -9` never leaves a stale lock.
class FileLock {
 public:
  enum class Mode { shared, exclusive };

  // Waits for the lock; `on_wait` runs once, first, if someone else holds it.
  [[nodiscard]] static Result<FileLock> acquire(const std::filesystem::path& path, Mode mode,
                                                const std::function<void()>& on_wait = {});
  // The lock now, or nullopt-like failure (an Error saying who holds it is not knowable).
  [[nodiscard]] static Result<FileLock> try_acquire(const std::filesystem::path& path, Mode mode);

  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace envkit::sys
