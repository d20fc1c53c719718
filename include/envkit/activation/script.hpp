#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "envkit/activation/activation.hpp"

// `envkit activate`: the assignments as a script the user's shell evaluates,
// with an `envkit_deactivate` function that puts the previous values back.
namespace envkit::activation {

enum class Shell { bash, zsh, fish };

// "bash", "zsh" or "fish" (also the basename of a $SHELL such as /usr/bin/zsh).
[[nodiscard]] std::optional<Shell> parse_shell(std::string_view name);

// `text` as one word of `shell`, taken literally: spaces, quotes, `$`,
// backslashes and newlines included.
[[nodiscard]] std::string quote(Shell shell, std::string_view text);

// The script: it first deactivates an environment it activated before (so
// activating twice, or another prefix, restores the true originals), saves each
// variable it changes, sets them, and defines `envkit_deactivate`.
[[nodiscard]] std::string activation_script(Shell shell, const std::filesystem::path& prefix,
                                            std::span<const Assignment> changes);

}  // namespace envkit::activation
