#pragma once

#include <string_view>

#include "envkit/core/result.hpp"
#include "envkit/recipes/recipe.hpp"

namespace envkit::recipes {

// Recipe `python` from uv's download-metadata.json (python-build-standalone
// archives): final CPython 3.8 … 3.14, every patch the metadata has, for
// linux-x86_64 (x86_64 gnu, baseline arch, not v2/v3/v4), linux-aarch64 (gnu)
// and windows-x86_64 (msvc). One archive per version and platform: an
// `install_only` archive (stripped first), else a "full" one (layout
// python-standalone-full: the installation under `python/install/`); entries
// without a sha256 are skipped, debug and freethreaded builds are separate
// variants, left out. One build "" per version listing the platforms that have
// an archive. `file` names the source in errors.
[[nodiscard]] Result<Recipe> import_python_standalone(std::string_view json_text,
                                                      std::string_view file);

}  // namespace envkit::recipes
