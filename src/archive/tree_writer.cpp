#include "tree_writer.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

namespace envkit::archive::detail {

namespace {

namespace fs = std::filesystem;

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
constexpr mode_t kDirMode = 0755;

// An OS failure: the reason as a cause (see the class comment).
Error os_error(std::string_view what, std::string_view path) {
  const int saved = errno;
  return Error::failed(fmt::format("cannot {} `{}`", what, path)).because(std::strerror(saved));
}

// The type bits of what is at `name` in `dir`, not following a link.
std::optional<mode_t> kind_at(int dir, const std::string& name) {
  struct stat status {};
  if (::fstatat(dir, name.c_str(), &status, AT_SYMLINK_NOFOLLOW) != 0) return std::nullopt;
  return status.st_mode & S_IFMT;
}

std::string_view describe(std::optional<mode_t> kind) {
  if (!kind) return "missing";
  switch (*kind) {
    case S_IFDIR:
      return "a folder";
    case S_IFLNK:
      return "a symlink";
    case S_IFREG:
      return "a file";
    default:
      return "a special file";
  }
}

// Why `name` in `dir` cannot be a folder on the way to an entry.
Error not_a_folder(int dir, const std::string& name, std::string_view shown) {
  const auto kind = kind_at(dir, name);
  if (kind == S_IFLNK) {
    return Error::failed(
        fmt::format("`{}` is a symlink, and nothing is written through a link", shown));
  }
  return Error::failed(fmt::format("`{}` is {}, not a folder", shown, describe(kind)));
}

// Opens `name` in `dir` as a folder, creating it, never following a link.
Result<UniqueFd> enter(int dir, const std::string& name, std::string_view shown) {
  UniqueFd fd(::openat(dir, name.c_str(), kDirFlags));
  if (fd.valid()) return fd;
  if (errno == ELOOP || errno == ENOTDIR) return not_a_folder(dir, name, shown);
  if (errno != ENOENT) return os_error("open the folder", shown);
  if (::mkdirat(dir, name.c_str(), kDirMode) != 0 && errno != EEXIST) {
    return os_error("create the folder", shown);
  }
  fd = UniqueFd(::openat(dir, name.c_str(), kDirFlags));
  if (!fd.valid()) {
    if (errno == ELOOP || errno == ENOTDIR) return not_a_folder(dir, name, shown);
    return os_error("open the folder", shown);
  }
  // The umask may have narrowed the mode; folders are 0755 whatever it is.
  if (::fchmod(fd.get(), kDirMode) != 0) return os_error("set the mode of", shown);
  return fd;
}

}  // namespace

Result<void> write_all(int fd, std::span<const std::byte> bytes, std::string_view shown) {
  while (!bytes.empty()) {
    const auto n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return os_error("write", shown);
    }
    bytes = bytes.subspan(static_cast<std::size_t>(n));
  }
  return {};
}

Result<TreeWriter> TreeWriter::open(const fs::path& root) {
  std::error_code error;
  fs::create_directories(root, error);
  if (error) {
    return Error::failed(fmt::format("cannot create `{}`", root.string())).because(error.message());
  }
  // The root itself may be reached through links (/tmp on some systems);
  // only what lies below it is walked without following them.
  UniqueFd fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return os_error("open the folder", root.string());
  return TreeWriter(std::move(fd));
}

Result<UniqueFd> TreeWriter::open_dirs(std::span<const std::string> dirs) {
  UniqueFd current(::fcntl(root_.get(), F_DUPFD_CLOEXEC, 0));
  if (!current.valid()) return os_error("open the folder", ".");
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    auto next = enter(current.get(), dirs[i], join_path(dirs.first(i + 1)));
    if (!next) return std::move(next).error();
    current = std::move(*next);
  }
  return current;
}

Result<int> TreeWriter::parent_of(std::span<const std::string> path) {
  const auto dirs = path.first(path.size() - 1);
  if (dirs.empty()) return root_.get();
  if (cached_fd_.valid() &&
      std::equal(dirs.begin(), dirs.end(), cached_dirs_.begin(), cached_dirs_.end())) {
    return cached_fd_.get();
  }
  auto fd = open_dirs(dirs);
  if (!fd) return std::move(fd).error();
  cached_dirs_.assign(dirs.begin(), dirs.end());
  cached_fd_ = std::move(*fd);
  return cached_fd_.get();
}

Result<void> TreeWriter::replace_file(int dir, const std::string& name,
                                      std::span<const std::string> path) {
  const auto kind = kind_at(dir, name);
  if (kind == S_IFREG) {
    if (::unlinkat(dir, name.c_str(), 0) != 0) return os_error("replace", join_path(path));
    return {};
  }
  return Error::failed(fmt::format("`{}` is already {}", join_path(path), describe(kind)));
}

Result<UniqueFd> TreeWriter::create_file(std::span<const std::string> path) {
  auto dir = parent_of(path);
  if (!dir) return std::move(dir).error();
  const auto& name = path.back();
  constexpr int kFlags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  UniqueFd fd(::openat(*dir, name.c_str(), kFlags, 0600));
  if (!fd.valid() && errno == EEXIST) {
    if (auto replaced = replace_file(*dir, name, path); !replaced) return replaced.error();
    fd = UniqueFd(::openat(*dir, name.c_str(), kFlags, 0600));
  }
  if (!fd.valid()) return os_error("create", join_path(path));
  return fd;
}

Result<void> TreeWriter::make_directory(std::span<const std::string> path) {
  auto fd = open_dirs(path);
  if (!fd) return std::move(fd).error();
  // Its files usually come next.
  cached_dirs_.assign(path.begin(), path.end());
  cached_fd_ = std::move(*fd);
  return {};
}

Result<void> TreeWriter::set_directory_mode(std::span<const std::string> path, mode_t mode) {
  auto fd = open_dirs(path);
  if (!fd) return std::move(fd).error();
  if (::fchmod(fd->get(), mode) != 0) return os_error("set the mode of", join_path(path));
  return {};
}

Result<void> TreeWriter::set_file_mode(std::span<const std::string> path, mode_t mode) {
  auto dir = parent_of(path);
  if (!dir) return std::move(dir).error();
  UniqueFd fd(::openat(*dir, path.back().c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid() || ::fchmod(fd.get(), mode) != 0) {
    return os_error("set the mode of", join_path(path));
  }
  return {};
}

Result<void> TreeWriter::make_symlink(std::span<const std::string> path,
                                      const std::string& target) {
  auto dir = parent_of(path);
  if (!dir) return std::move(dir).error();
  const auto& name = path.back();
  if (::symlinkat(target.c_str(), *dir, name.c_str()) == 0) return {};
  if (errno != EEXIST) return os_error("create the symlink", join_path(path));
  const auto kind = kind_at(*dir, name);
  if (kind == S_IFLNK) {
    std::vector<char> existing(target.size() + 2);
    const auto n = ::readlinkat(*dir, name.c_str(), existing.data(), existing.size());
    if (n >= 0 && std::string_view(existing.data(), static_cast<std::size_t>(n)) == target) {
      return {};
    }
  }
  return Error::failed(fmt::format("`{}` is already {}", join_path(path), describe(kind)));
}

Result<std::uint64_t> TreeWriter::make_hardlink(std::span<const std::string> path,
                                                std::span<const std::string> existing) {
  auto from = open_dirs(existing.first(existing.size() - 1));
  if (!from) return std::move(from).error();
  const auto& from_name = existing.back();
  if (const auto kind = kind_at(from->get(), from_name); kind != S_IFREG) {
    return Error::failed(
        fmt::format("the hard link's target `{}` is {}", join_path(existing), describe(kind)));
  }
  auto to = parent_of(path);
  if (!to) return std::move(to).error();
  const auto& name = path.back();
  int linked = ::linkat(from->get(), from_name.c_str(), *to, name.c_str(), 0);
  if (linked != 0 && errno == EEXIST) {
    if (auto replaced = replace_file(*to, name, path); !replaced) return replaced.error();
    linked = ::linkat(from->get(), from_name.c_str(), *to, name.c_str(), 0);
  }
  if (linked == 0) return std::uint64_t{0};
  // Some file systems have no hard links; a copy serves the same.
  if (errno == EPERM || errno == EMLINK || errno == EXDEV || errno == EOPNOTSUPP) {
    return copy_file(from->get(), from_name, *to, path);
  }
  return os_error("create the hard link", join_path(path));
}

Result<std::uint64_t> TreeWriter::copy_file(int from_dir, const std::string& from_name, int to_dir,
                                            std::span<const std::string> path) {
  UniqueFd in(::openat(from_dir, from_name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  struct stat status {};
  if (!in.valid() || ::fstat(in.get(), &status) != 0) return os_error("read", from_name);
  UniqueFd out(::openat(to_dir, path.back().c_str(),
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!out.valid()) return os_error("create", join_path(path));
  std::vector<std::byte> buffer(std::size_t{1} << 16);
  std::uint64_t copied = 0;
  while (true) {
    const auto n = ::read(in.get(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return os_error("read", from_name);
    if (n == 0) break;
    const auto chunk = std::span<const std::byte>(buffer).first(static_cast<std::size_t>(n));
    if (auto written = write_all(out.get(), chunk, join_path(path)); !written) {
      return written.error();
    }
    copied += static_cast<std::uint64_t>(n);
  }
  if (::fchmod(out.get(), status.st_mode & 07777) != 0) {
    return os_error("set the mode of", join_path(path));
  }
  return copied;
}

}  // namespace envkit::archive::detail
