#include "file_reader.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace envkit::elf::detail {

namespace fs = std::filesystem;

Result<FileReader> FileReader::open(const fs::path& path, ErrorCode missing) {
  sys::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat info {};
  if (!fd.valid() || ::fstat(fd.get(), &info) != 0) {
    return Error(errno == ENOENT ? missing : ErrorCode::failed,
                 fmt::format("cannot read {}", path.string()))
        .because(std::strerror(errno));
  }
  if (!S_ISREG(info.st_mode)) {
    return Error::input(fmt::format("{} is not an ELF file", path.string()))
        .because("it is not a regular file");
  }
  return FileReader(path, std::move(fd), {}, static_cast<std::uint64_t>(info.st_size));
}

FileReader FileReader::of_bytes(std::string_view bytes, const fs::path& name) {
  return FileReader(name, sys::UniqueFd(), bytes, bytes.size());
}

Result<std::string> FileReader::read_some(std::uint64_t offset, std::uint64_t length) const {
  if (offset >= size_) return std::string();
  const auto count = static_cast<std::size_t>(std::min(length, size_ - offset));
  if (!fd_.valid()) return std::string(bytes_.substr(static_cast<std::size_t>(offset), count));
  std::string buffer(count, '\0');
  std::size_t done = 0;
  while (done < buffer.size()) {
    const auto got = ::pread(fd_.get(), buffer.data() + done, buffer.size() - done,
                             static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      return Error::failed(fmt::format("cannot read {}", path_.string()))
          .because(std::strerror(errno));
    }
    if (got == 0) break;  // the file shrank under us
    done += static_cast<std::size_t>(got);
  }
  buffer.resize(done);
  return buffer;
}

Result<std::string> FileReader::read(std::uint64_t offset, std::uint64_t length) const {
  if (offset > size_ || length > size_ - offset) return shrank(offset);
  auto bytes = read_some(offset, length);
  if (bytes && bytes->size() != length) return shrank(offset + bytes->size());
  return bytes;
}

Error FileReader::shrank(std::uint64_t offset) const {
  return Error::failed(fmt::format("cannot read {}", path_.string()))
      .because(fmt::format("it ends at offset {:#x}, before the {} bytes it had when opened",
                           offset, size_));
}

}  // namespace envkit::elf::detail
