#include "envkit/sys/fs.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

namespace envkit::sys {

namespace fs = std::filesystem;

Result<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error::input(fmt::format("cannot read {}", path.string())).because(std::strerror(errno));
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    return Error::failed(fmt::format("cannot read {}", path.string()))
        .because(std::strerror(errno));
  }
  return buffer.str();
}

Result<void> write_file_atomic(const fs::path& path, std::string_view content) {
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::random_device seed;
  const fs::path temp = dir / fmt::format(".{}.tmp-{:08x}", path.filename().string(), seed());
  const auto fail = [&](std::string_view what) {
    const int saved = errno;
    ::unlink(temp.c_str());
    return Error::failed(fmt::format("cannot {} {}", what, path.string()))
        .because(std::strerror(saved));
  };
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return fail("write");
  std::size_t written = 0;
  while (written < content.size()) {
    const auto n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return fail("write");
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) return fail("write");
  if (::rename(temp.c_str(), path.c_str()) != 0) return fail("replace");
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
