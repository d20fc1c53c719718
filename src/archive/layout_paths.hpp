#pragma once

// Internal to archive: path helpers the layouts share (layout.cpp, runfile_layout.cpp).

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "envkit/archive/extract.hpp"
#include "envkit/archive/layout.hpp"

namespace envkit::archive::detail {

// The first component of `path` and what follows its '/' ("" when none).
[[nodiscard]] std::pair<std::string_view, std::string_view> split_first(std::string_view path);

// A file directly at this level (folders end with '/').
[[nodiscard]] bool is_top_level_file(std::string_view path);

// Licences go under share/licenses/<package>/<component>/: two components'
// LICENSE files never land on each other.
[[nodiscard]] std::string licence_path(const LayoutTarget& target, std::string_view name);

// NVIDIA runfiles (runfile_layout.cpp): the map of both eras' payloads, the
// nested toolkit runfile of the 9.x-10.0 era, and a patch runfile's map.
[[nodiscard]] PathMap cuda_runfile_map(const LayoutTarget& target);
[[nodiscard]] bool is_cuda_toolkit_runfile(std::string_view entry_path);
[[nodiscard]] PathMap cuda_patch_map(const LayoutTarget& target);
// `libcublas.so.9.0.176` -> `libcublas`: the redist component that ships a library.
[[nodiscard]] std::optional<std::string_view> component_of_library(std::string_view file);

}  // namespace envkit::archive::detail
