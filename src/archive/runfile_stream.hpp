#pragma once

// Internal to archive: extract_runfile for a runfile whose first bytes were
// already read from its source (the extractor reads a nested entry's start to
// tell a runfile from a plain file).

#include <filesystem>
#include <string>

#include "envkit/archive/extract.hpp"
#include "envkit/core/result.hpp"

namespace envkit::archive::detail {

// extract_runfile of the bytes `already_read` followed by what `source` gives.
[[nodiscard]] Result<ExtractResult> extract_runfile_after(Source& source, std::string already_read,
                                                          const std::filesystem::path& destination,
                                                          const ExtractOptions& options);

}  // namespace envkit::archive::detail
