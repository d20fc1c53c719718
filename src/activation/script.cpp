#include "envkit/activation/script.hpp"

#include <fmt/format.h>

#include "envkit/core/text.hpp"

namespace envkit::activation {

namespace {

constexpr std::string_view kFunction = "envkit_deactivate";

// The prefix for the script's first comment line: a newline in a path would
// end the comment and run the rest as code, so control characters become `?`.
std::string for_comment(Shell shell, const std::filesystem::path& prefix) {
  auto text = quote(shell, prefix.string());
  for (auto& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return text;
}

// Where a variable's previous value waits for envkit_deactivate. Not exported:
// a child shell has no envkit_deactivate to use it.
std::string saved(const Assignment& change) {
  return "_ENVKIT_OLD_" + change.name;
}

// bash and zsh share one script: both take POSIX parameter expansion,
// `typeset -f`, `unset -f` and `hash -r`.
std::string posix_script(Shell shell, const std::filesystem::path& prefix,
                         std::span<const Assignment> changes) {
  std::string out = fmt::format(
      "# envkit: the environment of {} for {}.\n"
      "# Load it with: eval \"$(envkit activate --shell {})\"; leave it with: {}\n"
      "if typeset -f {} >/dev/null 2>&1; then {}; fi\n",
      for_comment(shell, prefix), shell == Shell::bash ? "bash" : "zsh",
      shell == Shell::bash ? "bash" : "zsh", kFunction, kFunction, kFunction);
  // ${NAME+x} tells unset from empty, and is safe under `set -u`.
  for (const auto& change : changes) {
    out += fmt::format("if [ -n \"${{{0}+x}}\" ]; then {1}=\"${0}\"; else unset {1}; fi\n",
                       change.name, saved(change));
    out += change.value ? fmt::format("export {}={}\n", change.name, quote(shell, *change.value))
                        : fmt::format("unset {}\n", change.name);
  }
  // A shell remembers where it found commands; the new PATH must win at once.
  out += "hash -r 2>/dev/null\n";
  out += fmt::format("{}() {{\n", kFunction);
  for (const auto& change : changes) {
    out += fmt::format(
        "  if [ -n \"${{{1}+x}}\" ]; then export {0}=\"${1}\"; unset {1}; else unset {0}; fi\n",
        change.name, saved(change));
  }
  out += "  hash -r 2>/dev/null\n";
  out += fmt::format("  unset -f {}\n}}\n", kFunction);
  return out;
}

// fish: `set -gx NAME a b` with lists as lists (fish joins a *PATH variable
// with colons when it exports it), `set -q` for "is it set", functions instead
// of typeset.
std::string fish_script(const std::filesystem::path& prefix, std::span<const Assignment> changes) {
  std::string out = fmt::format(
      "# envkit: the environment of {} for fish.\n"
      "# Load it with: envkit activate --shell fish | source; leave it with: {}\n"
      "if functions -q {}; {}; end\n",
      for_comment(Shell::fish, prefix), kFunction, kFunction, kFunction);
  for (const auto& change : changes) {
    out += fmt::format("set -q {0}; and set -g {1} ${0}\n", change.name, saved(change));
    if (!change.value) {
      out += fmt::format("set -q {0}; and set -e {0}\n", change.name);
      continue;
    }
    std::string words;
    for (const auto part : change.list ? text::split(*change.value, ':')
                                       : std::vector<std::string_view>{*change.value}) {
      words += " " + quote(Shell::fish, part);
    }
    out += fmt::format("set -gx {}{}\n", change.name, words);
  }
  out += fmt::format("function {} --description 'Leave the envkit environment'\n", kFunction);
  for (const auto& change : changes) {
    out += fmt::format(
        "    if set -q {1}\n"
        "        set -gx {0} ${1}\n"
        "        set -e {1}\n"
        "    else\n"
        "        set -e {0}\n"
        "    end\n",
        change.name, saved(change));
  }
  out += fmt::format("    functions -e {}\nend\n", kFunction);
  return out;
}

}  // namespace

std::optional<Shell> parse_shell(std::string_view name) {
  if (const auto slash = name.rfind('/'); slash != std::string_view::npos) {
    name = name.substr(slash + 1);
  }
  if (name == "bash") return Shell::bash;
  if (name == "zsh") return Shell::zsh;
  if (name == "fish") return Shell::fish;
  return std::nullopt;
}

std::string quote(Shell shell, std::string_view text) {
  std::string out = "'";
  for (const char c : text) {
    if (shell == Shell::fish) {
      // fish's single quotes take two escapes: \' and \\.
      if (c == '\'' || c == '\\') out += '\\';
      out += c;
    } else if (c == '\'') {
      out += "'\\''";  // close, an escaped quote, reopen
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string activation_script(Shell shell, const std::filesystem::path& prefix,
                              std::span<const Assignment> changes) {
  return shell == Shell::fish ? fish_script(prefix, changes) : posix_script(shell, prefix, changes);
}

}  // namespace envkit::activation
