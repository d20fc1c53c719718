#pragma once

// Internal to archive: what envkit checks of a zip on disk before libarchive
// reads it through its central directory.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/archive/zip_member.hpp"
#include "envkit/core/result.hpp"

namespace envkit::archive::detail {

struct ZipLayout {
  std::vector<ZipMember> members;          // central directory records, in order
  std::vector<std::uint64_t> data_starts;  // where each member's data starts
  std::uint64_t directory_offset = 0;
};

// Exactly `size` bytes of the zip at `offset`, or an error naming the zip.
using ReadAt = std::function<Result<std::string>(std::uint64_t offset, std::size_t size)>;

struct ZipDirectoryRead {
  std::vector<ZipMember> members;  // central directory records, in order
  std::uint64_t offset = 0;        // where the directory starts
};

// The central directory of a zip of `file_size` bytes, found through its end
// record (zip64 too) and read with `read_at`, which is never asked for bytes
// before `first_readable` when looking for the end record; refused past
// `max_entries` records or 64 MiB. Nothing of the members' local headers is read.
[[nodiscard]] Result<ZipDirectoryRead> read_zip_directory(const ReadAt& read_at,
                                                          std::uint64_t file_size,
                                                          std::uint64_t first_readable,
                                                          std::string_view name,
                                                          std::uint64_t max_entries);

// Reads the zip's end record (zip64 too), its central directory and each
// entry's local header from `fd` (a file of `file_size` bytes), and refuses
// a zip whose entries' data overlap one another or the directory: several
// records reading the same bytes is how "A better zip bomb" (David Fifield)
// multiplies its output. Refuses too a local header that disagrees with its
// directory record (name, method, CRC-32, sizes; check_local_header): one
// reader would see one file, another reader another.
// `name` names the zip in errors; more than `max_entries` records are
// refused as extract's limit refuses them.
[[nodiscard]] Result<ZipLayout> check_zip_layout(int fd, std::uint64_t file_size,
                                                 std::string_view name, std::uint64_t max_entries);

// What a local header says of its entry (APPNOTE 4.3.7), zip64 sizes read.
struct LocalHeader {
  std::string path;
  std::uint16_t flags = 0;
  std::uint16_t method = 0;
  std::uint32_t crc32 = 0;
  std::uint64_t compressed_size = 0;
  std::uint64_t size = 0;
  std::uint64_t header_size = 0;  // 30 + name + extra: the data starts here
  // Bit 3: CRC and sizes come after the data, and are 0 here.
  [[nodiscard]] bool sizes_follow() const { return (flags & 0x08U) != 0; }
};

// The local header whose first 30 bytes are `fixed` (signature checked) and
// whose name and extra field are `rest` (`fixed`'s lengths say how long).
[[nodiscard]] Result<LocalHeader> parse_local_header(std::string_view fixed, std::string_view rest,
                                                     std::string_view name);
// How many bytes follow the fixed part (name and extra field).
[[nodiscard]] std::uint64_t local_header_rest(std::string_view fixed);

// Refuses a local header that disagrees with the directory's record of the
// same entry: name, method, and (unless they follow the data) CRC-32 and sizes.
[[nodiscard]] Result<void> check_local_header(const LocalHeader& local, const ZipMember& member,
                                              std::string_view name);

}  // namespace envkit::archive::detail
