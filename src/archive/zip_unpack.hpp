#pragma once

// Internal to archive: envkit's own zip reader, for wheels and zips on disk.
// The central directory (check_zip_layout) says what is there; each entry's
// data is read with pread, inflated by ISA-L (raw_inflate.hpp), its CRC-32
// and size checked, hashed (sha256) as it is written, and checked against the
// wheel's RECORD (wheel_record.hpp). Files are spread over threads, largest
// first. Every rule of the libarchive Extractor holds: the same placement
// (place_entry: no absolute path, no `..`, strip and map), the same modes,
// the same byte and entry limits, the same TreeWriter; and more is refused:
// a name stored twice, an encrypted entry, a method other than stored and
// deflate.

#include <cstdint>
#include <filesystem>
#include <string_view>

#include "envkit/archive/extract.hpp"
#include "zip_layout.hpp"

namespace envkit::archive::detail {

// Unpacks the zip open as `fd`, whose layout check_zip_layout has read, under
// `destination` (which exists). `name` names the zip in errors.
[[nodiscard]] Result<ExtractResult> unpack_zip(int fd, const ZipLayout& layout,
                                               std::string_view name,
                                               const std::filesystem::path& destination,
                                               const ExtractOptions& options);

}  // namespace envkit::archive::detail
