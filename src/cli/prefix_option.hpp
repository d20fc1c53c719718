#pragma once

#include <CLI/CLI.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "context.hpp"
#include "envkit/activation/activation.hpp"
#include "envkit/core/result.hpp"

// The prefix a command works on: `--prefix DIR` (relative to -C), else the
// project's `.envkit/env`. One rule for install, list, run, shell, activate,
// doctor and smoke.
namespace envkit::cli {

[[nodiscard]] std::filesystem::path prefix_path(const Context& context,
                                                const std::optional<std::filesystem::path>& flag);

// The installed prefix's environment (what `envkit run` gives a command), with
// what the user should know said on the console: replaced values as details,
// CUDA files taken from outside the prefix as warnings.
struct Activated {
  std::filesystem::path prefix;  // as installed_prefix gives it
  std::vector<activation::Assignment> changes;
  activation::Environment environment;  // inherited, with the changes applied
};
[[nodiscard]] Result<Activated> activate_prefix(const Context& context,
                                                const std::optional<std::filesystem::path>& flag);

// Adds `--prefix DIR` to `command`.
void add_prefix_option(CLI::App& command, std::optional<std::filesystem::path>& prefix,
                       const std::string& help = "The prefix (default: .envkit/env)");

}  // namespace envkit::cli
