#include "zip_layout.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "envkit/archive/zip_member.hpp"
#include "zip_format.hpp"

namespace envkit::archive::detail {

namespace {

// A larger directory (a million short names) is refused rather than read.
constexpr std::uint64_t kMaxDirectoryBytes = std::uint64_t{64} << 20;

Error unreadable(std::string_view name, std::string what) {
  return Error::failed(fmt::format("cannot unpack `{}`", name))
      .because(std::move(what))
      .hint("the archive is truncated, damaged, or not a zip archive");
}

Error refused(std::string_view name, std::string what) {
  return Error::failed(fmt::format("refused to unpack `{}`", name)).because(std::move(what));
}

// Exactly `size` bytes at `offset` of the file open as `fd`.
Result<std::string> read_file_at(int fd, std::uint64_t offset, std::size_t size,
                                 std::string_view name) {
  std::string bytes(size, '\0');
  std::size_t done = 0;
  while (done < size) {
    const auto n = ::pread(fd, bytes.data() + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return Error::failed(fmt::format("cannot read `{}`", name)).because(std::strerror(errno));
    }
    if (n == 0) return unreadable(name, fmt::format("it ends before byte {}", offset + size));
    done += static_cast<std::size_t>(n);
  }
  return bytes;
}

struct Directory {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint64_t entries = 0;
};

// The central directory's place, from the end record or, where it says
// "zip64", from the zip64 end record its locator points to.
Result<Directory> locate_directory(const ReadAt& read_at, std::uint64_t file_size,
                                   std::uint64_t first_readable, std::string_view name) {
  using namespace zip;
  const auto tail_size =
      std::min<std::uint64_t>(file_size - first_readable, kEndSize + kMaxComment);
  auto tail = read_at(file_size - tail_size, static_cast<std::size_t>(tail_size));
  if (!tail) return std::move(tail).error();
  const auto at = find_end_record(*tail);
  if (at == std::string_view::npos) {
    return unreadable(name, "no end-of-central-directory record in its last bytes");
  }
  const std::uint64_t end_record = file_size - tail_size + at;
  Directory directory{.offset = le(*tail, at + 16, 4),
                      .size = le(*tail, at + 12, 4),
                      .entries = le(*tail, at + 10, 2)};
  if (directory.offset == kZip64 || directory.size == kZip64 || directory.entries == 0xffff) {
    if (end_record < kZip64LocatorSize) return unreadable(name, "its zip64 locator is missing");
    auto locator = read_at(end_record - kZip64LocatorSize, kZip64LocatorSize);
    if (!locator) return std::move(locator).error();
    if (le(*locator, 0, 4) != kZip64LocatorSignature) {
      return unreadable(name, "its end record says zip64, but no zip64 locator precedes it");
    }
    const auto zip64_end = le(*locator, 8, 8);
    if (zip64_end > end_record || end_record - zip64_end < kZip64EndSize) {
      return unreadable(name, "its zip64 end record lies outside the file");
    }
    auto record = read_at(zip64_end, kZip64EndSize);
    if (!record) return std::move(record).error();
    if (le(*record, 0, 4) != kZip64EndSignature) {
      return unreadable(name, "no zip64 end record where its locator points");
    }
    directory = {
        .offset = le(*record, 48, 8), .size = le(*record, 40, 8), .entries = le(*record, 32, 8)};
  }
  if (directory.offset > file_size || directory.size > file_size - directory.offset) {
    return unreadable(name, fmt::format("its central directory ({} bytes at byte {}) lies outside "
                                        "the file ({} bytes)",
                                        directory.size, directory.offset, file_size));
  }
  return directory;
}

struct LocalHeaders {
  std::vector<std::uint64_t> data_starts;
  std::vector<LocalHeader> headers;
};

// Each member's local header and where its data starts (in `members`' order).
Result<LocalHeaders> read_local_headers(int fd, const std::vector<ZipMember>& members,
                                        std::uint64_t directory_offset, std::string_view name) {
  using namespace zip;
  LocalHeaders read;
  read.data_starts.reserve(members.size());
  read.headers.reserve(members.size());
  for (const auto& member : members) {
    if (member.offset > directory_offset || directory_offset - member.offset < kLocalHeaderSize) {
      return unreadable(name, fmt::format("entry `{}`: its local header (at byte {}) is not "
                                          "before the central directory",
                                          member.path, member.offset));
    }
    auto fixed = read_file_at(fd, member.offset, kLocalHeaderSize, name);
    if (!fixed) return std::move(fixed).error();
    if (le(*fixed, 0, 4) != kLocalSignature) {
      return unreadable(
          name, fmt::format("entry `{}`: no local header at byte {}", member.path, member.offset));
    }
    // No sum can wrap: the data's start is within the file, and the size is
    // compared with what is left before the directory.
    const auto data_start = member.offset + kLocalHeaderSize + local_header_rest(*fixed);
    if (data_start > directory_offset || member.compressed_size > directory_offset - data_start) {
      return refused(
          name, fmt::format("entry `{}`: its data ({} bytes from byte {}) runs into the "
                            "central directory (at byte {})",
                            member.path, member.compressed_size, data_start, directory_offset));
    }
    auto rest = read_file_at(fd, member.offset + kLocalHeaderSize,
                             static_cast<std::size_t>(local_header_rest(*fixed)), name);
    if (!rest) return std::move(rest).error();
    auto local = parse_local_header(*fixed, *rest, name);
    if (!local) return std::move(local).error();
    read.headers.push_back(std::move(*local));
    read.data_starts.push_back(data_start);
  }
  return read;
}

}  // namespace

Result<ZipDirectoryRead> read_zip_directory(const ReadAt& read_at, std::uint64_t file_size,
                                            std::uint64_t first_readable, std::string_view name,
                                            std::uint64_t max_entries) {
  auto directory = locate_directory(read_at, file_size, first_readable, name);
  if (!directory) return std::move(directory).error();
  if (directory->size > kMaxDirectoryBytes) {
    return refused(name, fmt::format("its central directory is {} bytes, more than the {} MiB "
                                     "envkit reads",
                                     directory->size, kMaxDirectoryBytes >> 20));
  }
  // The count the end record states is checked before the records are read;
  // the records actually there after.
  const auto too_many = [&] {
    return refused(name,
                   fmt::format("the archive has more than {} entries, the limit", max_entries));
  };
  if (directory->entries > max_entries) return too_many();
  auto bytes = read_at(directory->offset, static_cast<std::size_t>(directory->size));
  if (!bytes) return std::move(bytes).error();
  auto members = zip_directory_members(*bytes, name);
  if (!members) return std::move(members).error();
  if (members->size() > max_entries) return too_many();
  return ZipDirectoryRead{.members = std::move(*members), .offset = directory->offset};
}

Result<ZipLayout> check_zip_layout(int fd, std::uint64_t file_size, std::string_view name,
                                   std::uint64_t max_entries) {
  auto directory = read_zip_directory(
      [&](std::uint64_t offset, std::size_t size) { return read_file_at(fd, offset, size, name); },
      file_size, 0, name, max_entries);
  if (!directory) return std::move(directory).error();
  auto* members = &directory->members;
  auto locals = read_local_headers(fd, *members, directory->offset, name);
  if (!locals) return std::move(locals).error();
  const auto& starts = locals->data_starts;
  // In file order, each member's data must end before the next one starts.
  std::vector<std::size_t> order(members->size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return (*members)[a].offset < (*members)[b].offset;
  });
  for (std::size_t i = 1; i < order.size(); ++i) {
    const auto& before = (*members)[order[i - 1]];
    const auto before_end = starts[order[i - 1]] + before.compressed_size;
    const auto& after = (*members)[order[i]];
    if (after.offset >= before_end) continue;
    return refused(name,
                   fmt::format("entries `{}` and `{}` overlap in the file (bytes {} to {} and {} "
                               "on): several entries reading the same bytes is a zip bomb's "
                               "technique",
                               before.path, after.path, before.offset, before_end, after.offset))
        .hint("a zip made by a zip tool never does this; do not use this archive");
  }
  // After the overlap check: records sharing one local header disagree with
  // it too, and "overlap" says better what they are.
  for (std::size_t i = 0; i < members->size(); ++i) {
    if (auto agree = check_local_header(locals->headers[i], (*members)[i], name); !agree) {
      return agree.error();
    }
  }
  return ZipLayout{.members = std::move(*members),
                   .data_starts = std::move(locals->data_starts),
                   .directory_offset = directory->offset};
}

std::uint64_t local_header_rest(std::string_view fixed) {
  return zip::le(fixed, 26, 2) + zip::le(fixed, 28, 2);
}

Result<LocalHeader> parse_local_header(std::string_view fixed, std::string_view rest,
                                       std::string_view name) {
  using namespace zip;
  if (fixed.size() < kLocalHeaderSize || le(fixed, 0, 4) != kLocalSignature) {
    return unreadable(name, "no local header where one should start");
  }
  const auto name_length = static_cast<std::size_t>(le(fixed, 26, 2));
  if (rest.size() < local_header_rest(fixed))
    return unreadable(name, "a local header is cut short");
  LocalHeader local{.path = std::string(rest.substr(0, name_length)),
                    .flags = static_cast<std::uint16_t>(le(fixed, 6, 2)),
                    .method = static_cast<std::uint16_t>(le(fixed, 8, 2)),
                    .crc32 = static_cast<std::uint32_t>(le(fixed, 14, 4)),
                    .compressed_size = le(fixed, 18, 4),
                    .size = le(fixed, 22, 4),
                    .header_size = kLocalHeaderSize + local_header_rest(fixed)};
  std::uint64_t no_offset = 0;
  read_zip64_extra(rest.substr(name_length, le(fixed, 28, 2)), local.size, local.compressed_size,
                   no_offset);
  return local;
}

Result<void> check_local_header(const LocalHeader& local, const ZipMember& member,
                                std::string_view name) {
  const auto disagree = [&](std::string_view what, auto in_directory, auto in_header) {
    return refused(name, fmt::format("entry `{}`: its central directory says {} {}, its local "
                                     "header {}",
                                     member.path, what, in_directory, in_header))
        .hint("a zip made by a zip tool never does this; do not use this archive");
  };
  if (local.path != member.path) return disagree("name", member.path, local.path);
  if (local.method != member.method) return disagree("method", member.method, local.method);
  // With a data descriptor the header's CRC and sizes are 0 (or, from some
  // writers, the real ones): only a different non-zero value disagrees.
  const bool follow = local.sizes_follow();
  if (!(follow && local.crc32 == 0) && local.crc32 != member.crc32) {
    return disagree("CRC-32", fmt::format("{:08x}", member.crc32),
                    fmt::format("{:08x}", local.crc32));
  }
  if (!(follow && local.size == 0) && local.size != member.size) {
    return disagree("size", member.size, local.size);
  }
  if (!(follow && local.compressed_size == 0) && local.compressed_size != member.compressed_size) {
    return disagree("compressed size", member.compressed_size, local.compressed_size);
  }
  return {};
}

}  // namespace envkit::archive::detail
