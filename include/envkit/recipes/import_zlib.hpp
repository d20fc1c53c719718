#pragma once

#include <string_view>

#include "envkit/core/result.hpp"
#include "envkit/recipes/recipe.hpp"

namespace envkit::recipes {

// Recipe `zlib` from zlib_releases.csv (columns version, url, sha256): the
// source tarballs of zlib 1.2.11 … 1.3.1, pinned by sha256 (upstream serves
// them over plain http). Linux only: the source tree builds with configure and
// make, and what Windows cuDNN 8 needs is a zlibwapi.dll build, not this
// (cuDNN 9 on Windows needs no zlib). Bad rows are errors at `file:line`.
[[nodiscard]] Result<Recipe> import_zlib(std::string_view csv_text, std::string_view file);

}  // namespace envkit::recipes
