#include "envkit/store/link.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "envkit/core/text.hpp"
#include "envkit/sys/unique_fd.hpp"

namespace envkit::store {

namespace fs = std::filesystem;

namespace {

// read() and write() in a loop: for where copy_file_range cannot go (across
// filesystems on some kernels, tmpfs). Returns 0 or errno.
int copy_by_hand(int in, int out) {
  std::array<char, 1 << 16> buffer{};
  while (true) {
    const auto got = ::read(in, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return errno;
    if (got == 0) return 0;
    for (ssize_t written = 0; written < got;) {
      const auto put =
          ::write(out, buffer.data() + written, static_cast<std::size_t>(got - written));
      if (put < 0) return errno;
      written += put;
    }
  }
}

// Copies with copy_file_range (the kernel copies, or shares blocks), by hand where it cannot.
int copy_content(int in, int out, off_t size) {
  for (off_t left = size; left > 0;) {
    const auto copied =
        ::copy_file_range(in, nullptr, out, nullptr, static_cast<std::size_t>(left), 0);
    if (copied < 0 && left == size &&
        (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP))
      return copy_by_hand(in, out);
    if (copied <= 0) return copied < 0 ? errno : EIO;
    left -= copied;
  }
  return 0;
}

// Copies (or clones) by content into a new file with the source's x bits.
int clone_or_copy(const fs::path& from, const fs::path& to, bool clone_only) {
  const sys::UniqueFd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return errno;
  struct stat info {};
  if (::fstat(in.get(), &info) != 0) return errno;
  // Clones and copies belong to the prefix: writable by their owner, and no
  // more readable than the cache's file (a 0400 key stays its owner's).
  const mode_t mode = (info.st_mode & 0555) | 0200;
  const sys::UniqueFd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (!out.valid()) return errno;
  int failure = 0;
  if (clone_only) {
    if (::ioctl(out.get(), FICLONE, in.get()) != 0) failure = errno;
  } else {
    failure = copy_content(in.get(), out.get(), info.st_size);
  }
  if (failure != 0) ::unlink(to.c_str());
  return failure;
}

// Errors that say "this way of linking does not work here", not "this file is wrong".
bool unsupported(LinkMode mode, int error) {
  switch (mode) {
    case LinkMode::reflink:
      return error == EOPNOTSUPP || error == EXDEV || error == EINVAL || error == ENOTTY ||
             error == ENOSYS || error == EPERM;
    case LinkMode::hardlink:
      return error == EXDEV || error == EPERM || error == EMLINK || error == EACCES;
    case LinkMode::copy:
      return false;
  }
  return false;
}

int place_with(LinkMode mode, const fs::path& from, const fs::path& to) {
  switch (mode) {
    case LinkMode::reflink:
      return clone_or_copy(from, to, true);
    case LinkMode::hardlink:
      return ::link(from.c_str(), to.c_str()) == 0 ? 0 : errno;
    case LinkMode::copy:
      return clone_or_copy(from, to, false);
  }
  return EINVAL;
}

}  // namespace

std::string_view to_string(LinkMode mode) {
  switch (mode) {
    case LinkMode::reflink:
      return "reflink";
    case LinkMode::hardlink:
      return "hardlink";
    case LinkMode::copy:
      return "copy";
  }
  return "copy";
}

std::optional<LinkMode> parse_link_mode(std::string_view text) {
  for (auto mode : {LinkMode::reflink, LinkMode::hardlink, LinkMode::copy}) {
    if (to_string(mode) == text) return mode;
  }
  return std::nullopt;
}

Linker::Linker(std::optional<LinkMode> only) {
  if (only) {
    mode_ = *only;
    fixed_ = true;
  }
}

Result<void> Linker::place(const fs::path& from, const fs::path& to) {
  while (true) {
    const int error = place_with(mode_, from, to);
    if (error == 0) return {};
    if (fixed_ || !unsupported(mode_, error)) {
      Error failure =
          Error::failed(fmt::format("cannot {} {} to {}", to_string(mode_),
                                    text::quoted(from.string()), text::quoted(to.string())))
              .because(std::strerror(error));
      if (error == ENOSPC || error == EDQUOT) failure.hint(std::string(kDiskFullHint));
      return failure;
    }
    // Falls back once for the whole install: the next mode is tried from now on.
    mode_ = mode_ == LinkMode::reflink ? LinkMode::hardlink : LinkMode::copy;
  }
}

}  // namespace envkit::store
