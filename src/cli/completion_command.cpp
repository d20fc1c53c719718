// `envkit completion bash|zsh|fish`: a shell completion script made from the command tree
// itself, so it lists exactly the commands and flags this envkit has.

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "command.hpp"
#include "envkit/core/text.hpp"

namespace envkit::cli {
namespace {

// One command of the tree: its path ("" for envkit itself, "recipes import"), its
// subcommands and its flags.
struct Node {
  std::string path;
  std::vector<std::string> subcommands;
  std::vector<const CLI::Option*> options;
};

void collect(const CLI::App& app, const std::string& path, std::vector<Node>& out) {
  Node node{.path = path, .subcommands = {}, .options = {}};
  for (const auto* option : app.get_options()) {
    if (option->nonpositional()) node.options.push_back(option);
  }
  const auto subcommands = app.get_subcommands({});
  for (const auto* sub : subcommands)
    node.subcommands.push_back(sub->get_name());
  out.push_back(std::move(node));
  for (const auto* sub : subcommands)
    collect(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), out);
}

std::vector<std::string> flag_names(const CLI::Option& option) {
  std::vector<std::string> names;
  for (const auto& name : option.get_snames())
    names.push_back("-" + name);
  for (const auto& name : option.get_lnames())
    names.push_back("--" + name);
  return names;
}

bool takes_value(const CLI::Option& option) {
  return option.get_type_size_max() > 0;
}

// What completes an option's value: folders for DIR, nothing for words envkit cannot
// guess (N, SPEC, URL), files for the rest.
std::string value_kind(const CLI::Option& option) {
  const auto& text = option.get_option_text();
  if (text == "DIR") return "dir";
  if (text == "N" || text == "P" || text == "S" || text == "SPEC" || text == "URL" ||
      text == "WHEN" || text == "SHELL")
    return "none";
  return "file";
}

std::string bash_script(const std::vector<Node>& nodes) {
  std::string subcommands;
  std::string options;
  std::vector<std::string> dirs;
  std::vector<std::string> words;
  for (const auto& node : nodes) {
    std::vector<std::string> names;
    for (const auto* option : node.options) {
      for (auto& name : flag_names(*option)) {
        if (takes_value(*option)) {
          const auto kind = value_kind(*option);
          if (kind == "dir") dirs.push_back(name);
          if (kind == "none") words.push_back(name);
        }
        names.push_back(std::move(name));
      }
    }
    subcommands +=
        fmt::format("    \"{}\") echo \"{}\" ;;\n", node.path, text::join(node.subcommands, " "));
    options += fmt::format("    \"{}\") echo \"{}\" ;;\n", node.path, text::join(names, " "));
  }
  const auto patterns = [](std::vector<std::string> names) {
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names.empty() ? std::string("--envkit-none-") : text::join(names, "|");
  };
  return fmt::format(R"BASH(# envkit completion for bash: add to ~/.bashrc
#   eval "$(envkit completion bash)"
_envkit_subcommands() {{
  case "$1" in
{}  esac
}}
_envkit_options() {{
  case "$1" in
{}  esac
}}
_envkit() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}}
  local command_path="" i word
  # The command path so far: the words that name a subcommand of the path before them.
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${{COMP_WORDS[i]}}
    [ "$word" = "--" ] && return 0
    case " $(_envkit_subcommands "$command_path") " in
      *" $word "*) command_path=${{command_path:+$command_path }}$word ;;
    esac
  done
  case "$prev" in
    {}) COMPREPLY=($(compgen -d -- "$cur")); return 0 ;;
    {}) COMPREPLY=(); return 0 ;;
  esac
  if [[ "$cur" == -* ]]; then
    # envkit's own flags go before or after the command.
    COMPREPLY=($(compgen -W "$(_envkit_options "$command_path") $(_envkit_options "")" -- "$cur"))
    return 0
  fi
  local subcommands
  subcommands=$(_envkit_subcommands "$command_path")
  if [ -n "$subcommands" ]; then
    COMPREPLY=($(compgen -W "$subcommands" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}}
complete -o filenames -F _envkit envkit
)BASH",
                     subcommands, options, patterns(dirs), patterns(words));
}

// zsh runs bash's completion through its bashcompinit layer, with arrays numbered from 0
// as the bash function expects.
std::string zsh_script(const std::vector<Node>& nodes) {
  return "# envkit completion for zsh: add to ~/.zshrc\n"
         "#   eval \"$(envkit completion zsh)\"\n"
         "autoload -U +X compinit && compinit\n"
         "autoload -U +X bashcompinit && bashcompinit\n" +
         bash_script(nodes) +
         "_envkit_zsh() { setopt localoptions ksharrays; _envkit \"$@\"; }\n"
         "complete -o filenames -F _envkit_zsh envkit\n";
}

std::string fish_quoted(std::string_view text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

std::string fish_script(const std::vector<Node>& nodes) {
  std::string out =
      "# envkit completion for fish: save as ~/.config/fish/completions/envkit.fish\n"
      "#   envkit completion fish > ~/.config/fish/completions/envkit.fish\n"
      "complete -c envkit -f\n";
  for (const auto& node : nodes) {
    // Where this node's words apply: its own name was typed and none of its children yet.
    std::string condition = "__fish_use_subcommand";
    if (!node.path.empty()) {
      const auto last = node.path.substr(node.path.rfind(' ') + 1);
      condition = "__fish_seen_subcommand_from " + last;
      if (!node.subcommands.empty())
        condition += "; and not __fish_seen_subcommand_from " + text::join(node.subcommands, " ");
    }
    for (const auto& sub : node.subcommands) {
      out += fmt::format("complete -c envkit -n {} -a {}\n", fish_quoted(condition), sub);
    }
    for (const auto* option : node.options) {
      std::string line = "complete -c envkit";
      if (!node.path.empty()) line += " -n " + fish_quoted(condition);
      for (const auto& name : option->get_snames())
        line += " -s " + name;
      for (const auto& name : option->get_lnames())
        line += " -l " + name;
      if (takes_value(*option)) {
        const auto kind = value_kind(*option);
        line += kind == "dir"    ? " -r -a '(__fish_complete_directories)'"
                : kind == "file" ? " -r -F"
                                 : " -r";
      }
      if (!option->get_description().empty())
        line += " -d " + fish_quoted(option->get_description());
      out += line + "\n";
    }
  }
  return out;
}

}  // namespace

void register_completion(CLI::App& root, Commands& out) {
  auto chosen = std::make_shared<std::string>();
  auto* completion =
      root.add_subcommand("completion", "Print a shell completion script (bash, zsh or fish)");
  completion->add_option("shell", *chosen, "bash, zsh or fish")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh", "fish"}))
      ->option_text("SHELL");
  completion->footer(
      "bash: eval \"$(envkit completion bash)\" in ~/.bashrc; zsh: the same with zsh in "
      "~/.zshrc; fish: envkit completion fish > ~/.config/fish/completions/envkit.fish");
  out.push_back({completion, [&root, chosen](Context&) {
                   std::vector<Node> nodes;
                   collect(root, "", nodes);
                   if (*chosen == "bash") std::cout << bash_script(nodes);
                   if (*chosen == "zsh") std::cout << zsh_script(nodes);
                   if (*chosen == "fish") std::cout << fish_script(nodes);
                   return 0;
                 }});
}

}  // namespace envkit::cli
