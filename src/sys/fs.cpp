#include "envkit/sys/fs.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

#include "envkit/core/env_vars.hpp"
#include "envkit/sys/parallel.hpp"

namespace envkit::sys {

namespace fs = std::filesystem;

std::string_view file_kind(unsigned mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a file";
}

Result<std::string> read_file(const fs::path& path, std::size_t max_bytes) {
  const auto cannot_read = [&] {
    return Error::input(fmt::format("cannot read {}", path.string())).because(std::strerror(errno));
  };
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused just below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return cannot_read();
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const auto error = cannot_read();
    ::close(fd);
    return error;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error::input(
               fmt::format("{} is {}, not a regular file", path.string(), file_kind(st.st_mode)))
        .hint("envkit reads its inputs from files, not from devices, pipes or folders");
  }
  // Reads at most one byte past the limit: /proc files state no size, and a file
  // may grow while it is read.
  std::string content;
  char buffer[64 * 1024];
  for (;;) {
    const auto n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const auto error = cannot_read();
      ::close(fd);
      return error;
    }
    if (n == 0) break;
    content.append(buffer, static_cast<std::size_t>(n));
    if (content.size() > max_bytes) {
      ::close(fd);
      return Error::input(fmt::format("{} is larger than {} MiB, the most envkit reads from an "
                                      "input file",
                                      path.string(), max_bytes >> 20))
          .hint("is this the file you meant?");
    }
  }
  ::close(fd);
  return content;
}

namespace {

// Tests only (ENVKIT_TEST_FAIL_WRITE): whether a write to `path` goes to
// /dev/full, which fails every write with ENOSPC as a full disk does.
bool fails_as_disk_full(const fs::path& path) {
  const auto pattern = env::get(env::kTestFailWrite);
  return pattern && !pattern->empty() && path.string().find(*pattern) != std::string::npos;
}

// Creates `path` with `content`, flushed unless `durability` says not: 0, or the
// errno of what failed (nothing is left of the file then).
int write_synced(const fs::path& path, std::string_view content,
                 Durability durability = Durability::synced) {
  const int fd = fails_as_disk_full(path)
                     ? ::open("/dev/full", O_WRONLY | O_CLOEXEC)
                     : ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  int failure = 0;
  for (std::size_t written = 0; failure == 0 && written < content.size();) {
    const auto n = ::write(fd, content.data() + written, content.size() - written);
    if (n >= 0) {
      written += static_cast<std::size_t>(n);
    } else if (errno != EINTR) {
      failure = errno;
    }
  }
  if (failure == 0 && durability == Durability::synced && ::fsync(fd) != 0) failure = errno;
  if (::close(fd) != 0 && failure == 0) failure = errno;
  if (failure != 0) ::unlink(path.c_str());
  return failure;
}

}  // namespace

Result<void> write_new_file(const fs::path& path, std::string_view content) {
  if (const int failure = write_synced(path, content); failure != 0) {
    return Error::failed(fmt::format("cannot write {}", path.string()))
        .because(std::strerror(failure));
  }
  return {};
}

Result<void> write_file_atomic(const fs::path& path, std::string_view content,
                               Durability durability) {
  const std::vector<FileContent> one{{path, content}};
  return write_files_atomic(one, durability);
}

// Each file is written unsynced, then all are synced at once from their own
// threads: the journal commits them together (a warm install's receipts and
// state cost one commit, not one each), and only then is any renamed.
Result<void> write_files_atomic(std::span<const FileContent> files, Durability durability) {
  std::random_device seed;
  std::vector<fs::path> temps;
  const auto remove_temps = [&] {
    for (const auto& temp : temps)
      ::unlink(temp.c_str());
  };
  for (const auto& file : files) {
    const fs::path dir = file.path.has_parent_path() ? file.path.parent_path() : fs::path(".");
    temps.push_back(dir / fmt::format(".{}.tmp-{:08x}", file.path.filename().string(), seed()));
    if (const int failure = write_synced(temps.back(), file.content, Durability::unsynced);
        failure != 0) {
      temps.pop_back();
      remove_temps();
      return Error::failed(fmt::format("cannot write {}", file.path.string()))
          .because(std::strerror(failure));
    }
  }
  if (durability == Durability::synced) {
    std::vector<int> failures(temps.size(), 0);
    for_each_parallel(temps.size(), static_cast<int>(temps.size()), [&](std::size_t i) {
      const int fd = ::open(temps[i].c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || ::fsync(fd) != 0) failures[i] = errno;
      if (fd >= 0) ::close(fd);
    });
    for (std::size_t i = 0; i < temps.size(); ++i) {
      if (failures[i] != 0) {
        remove_temps();
        return Error::failed(fmt::format("cannot write {}", files[i].path.string()))
            .because(std::strerror(failures[i]));
      }
    }
  }
  for (std::size_t i = 0; i < temps.size(); ++i) {
    if (::rename(temps[i].c_str(), files[i].path.c_str()) != 0) {
      const int saved = errno;
      for (std::size_t j = i; j < temps.size(); ++j)
        ::unlink(temps[j].c_str());
      return Error::failed(fmt::format("cannot replace {}", files[i].path.string()))
          .because(std::strerror(saved));
    }
  }
  return {};
}

std::optional<std::filesystem::path> installed_data_dir(std::string_view name) {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  auto dir = exe.parent_path().parent_path() / "share" / "envkit" / name;
  if (!std::filesystem::is_directory(dir, ec)) return std::nullopt;
  return dir;
}

}  // namespace envkit::sys
