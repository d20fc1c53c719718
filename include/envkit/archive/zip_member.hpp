#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"

// One member of a zip read from pieces of it, without the rest: a wheel's
// METADATA from HTTP ranges of the wheel (`envkit recipes import pypi-jax`,
// where the index serves no PEP 658 metadata). The end record locates the
// central directory, the directory locates the member. A zip64 end record is not
// read (a wheel never needs one); a record's zip64 sizes and offset are.
namespace envkit::archive {

// Where a zip's central directory lies, and where in the file the bytes
// given to zip_directory_location() start.
struct ZipDirectory {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint64_t tail_offset = 0;
};

// From `tail`, the last bytes of a zip (at least its end-of-central-directory
// record, comment included). `name` names the zip in errors.
[[nodiscard]] Result<ZipDirectory> zip_directory_location(std::string_view tail,
                                                          std::string_view name);

struct ZipMember {
  std::string path;
  std::uint64_t offset = 0;  // of its local header
  std::uint64_t compressed_size = 0;
  std::uint64_t size = 0;
  // As the directory record states them (APPNOTE 4.4): what the unpacker
  // checks the local header and the data against, and the mode.
  std::uint16_t method = 0;  // 0 stored, 8 deflate
  std::uint16_t flags = 0;   // bit 0 encrypted, bit 3 data descriptor, bit 11 UTF-8
  std::uint32_t crc32 = 0;
  std::uint16_t made_by = 0;              // the high byte: 3 = Unix, whose modes are in
  std::uint32_t external_attributes = 0;  // the high 16 bits
};

// The members a central directory (its bytes) lists, in order.
[[nodiscard]] Result<std::vector<ZipMember>> zip_directory_members(std::string_view directory,
                                                                   std::string_view name);

// How many bytes from a member's local header hold the member (its data
// descriptor included), given the first 30 (the fixed part of the header).
[[nodiscard]] Result<std::uint64_t> zip_member_span(std::string_view local_header,
                                                    const ZipMember& member, std::string_view name);

// The content of `member` from the bytes starting at its local header (at
// least zip_member_span() of them), inflated (stored and deflate) and checked
// against the directory's size.
[[nodiscard]] Result<std::string> zip_member_content(std::string_view local,
                                                     const ZipMember& member,
                                                     std::string_view name);

}  // namespace envkit::archive
