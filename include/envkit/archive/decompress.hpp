#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "envkit/archive/extract.hpp"
#include "envkit/core/result.hpp"

namespace envkit::archive {

// Reads `source` to its end decompressed, as the extractor does: the format
// by its magic number (gzip, xz, bzip2, zstd, lz4; anything else passes as
// it is), every member's trailer checked, bytes after the last member
// refused. `on_bytes` gets the output in order. Returns the format found
// ("gzip", ..., "none"). Errors name the source and what was wrong.
[[nodiscard]] Result<std::string> decompress_all(
    Source& source, const std::function<void(std::string_view bytes)>& on_bytes);

}  // namespace envkit::archive
