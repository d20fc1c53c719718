#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace envkit::specs {

// PEP 503 normalization: lowercase, runs of `-`, `_`, `.` become one `-`.
[[nodiscard]] std::string canonical_package_name(std::string_view name);

// The packages of envkit's recipe database (issue: recipe format), canonical
// spelling. `pytorch` is accepted as an alias of `torch`.
inline constexpr std::string_view kKnownPackages[] = {
    "cuda", "cudnn", "python", "zlib", "torch", "tensorflow", "tensorflow-gpu", "jax"};
// The subset that can be a project's `framework:`.
inline constexpr std::string_view kFrameworks[] = {"torch", "tensorflow", "tensorflow-gpu", "jax"};

// Canonical name for a user-written package name, resolving aliases
// (`PyTorch` -> `torch`); nullopt when it is not a known package.
[[nodiscard]] std::optional<std::string> known_package(std::string_view name);
[[nodiscard]] bool is_framework(std::string_view canonical_name);

}  // namespace envkit::specs
