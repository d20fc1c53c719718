#pragma once

// Helpers shared by the activation sources: comparing and splitting the
// folders of PATH-like lists.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace envkit::activation {

// `dir` as a comparable key: lexically normal, without a trailing slash
// ("/p/./bin/" and "/p/bin" are one folder).
[[nodiscard]] std::string normal_dir(std::string_view dir);

// The non-empty elements of a colon-separated list.
[[nodiscard]] std::vector<std::filesystem::path> list_elements(std::string_view list);

// Whether `a` and `b` are the same folder, through symlinks too (the prefix's
// symlink and the generation it points at), or equal as text where neither exists.
[[nodiscard]] bool same_dir(const std::filesystem::path& a, const std::filesystem::path& b);

}  // namespace envkit::activation
