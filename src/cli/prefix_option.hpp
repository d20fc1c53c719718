#pragma once

#include <filesystem>
#include <optional>

#include "context.hpp"
#include "envkit/core/result.hpp"

// The prefix a command works on: `--prefix DIR` (relative to -C), else the
// project's `.envkit/env`. One rule for install, run, doctor and smoke.
namespace envkit::cli {

[[nodiscard]] std::filesystem::path prefix_path(const Context& context,
                                                const std::optional<std::filesystem::path>& flag);

// The installed prefix's path: absolute, but still the symlink, never the
// generation it points at, so a later install's switch reaches what was
// activated. Fails when nothing is installed there, or when the path holds a
// `:` (PATH and LD_LIBRARY_PATH would cut it in two).
[[nodiscard]] Result<std::filesystem::path> installed_prefix(
    const Context& context, const std::optional<std::filesystem::path>& flag);

}  // namespace envkit::cli
