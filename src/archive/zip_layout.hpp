#pragma once

// Internal to archive: what envkit checks of a zip on disk before libarchive
// reads it through its central directory.

#include <cstdint>
#include <string_view>

#include "envkit/core/result.hpp"

namespace envkit::archive::detail {

struct ZipLayout {
  std::uint64_t entries = 0;  // central directory records
};

// Reads the zip's end record (zip64 too), its central directory and each
// entry's local header from `fd` (a file of `file_size` bytes), and refuses
// a zip whose entries' data overlap one another or the directory: several
// records reading the same bytes is how "A better zip bomb" (David Fifield)
// multiplies its output, and libarchive would silently unpack one of them.
// `name` names the zip in errors; more than `max_entries` records are
// refused as extract's limit refuses them.
[[nodiscard]] Result<ZipLayout> check_zip_layout(int fd, std::uint64_t file_size,
                                                 std::string_view name, std::uint64_t max_entries);

}  // namespace envkit::archive::detail
