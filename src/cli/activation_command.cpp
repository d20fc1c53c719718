// `envkit run`, `envkit shell` and `envkit activate`: the prefix's environment
// for one command, an interactive shell, or the user's own shell
// (docs/activation.md).
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "command.hpp"
#include "envkit/activation/activation.hpp"
#include "envkit/activation/exec.hpp"
#include "envkit/activation/script.hpp"
#include "envkit/core/env_vars.hpp"
#include "envkit/core/text.hpp"
#include "envkit/store/prefix.hpp"
#include "prefix_option.hpp"

namespace envkit::cli {

namespace {

namespace fs = std::filesystem;

// `envkit shell` starts $SHELL, or this where it is unset.
constexpr std::string_view kDefaultShell = "/bin/bash";

struct ActivationFlags {
  std::optional<fs::path> prefix;
  std::vector<std::string> command;  // run
  std::optional<std::string> shell;  // activate
};

// Replaces envkit with `argv`; returns only the exit code of a failure to start.
int exec_in(const Context& context, const std::vector<std::string>& argv,
            const activation::Environment& environment) {
  const auto failure = activation::exec_command(argv, environment);
  context.console.error(failure.error);
  return failure.exit_code;
}

int run_run(Context& context, const ActivationFlags& flags) {
  auto activated = activate_prefix(context, flags.prefix);
  if (!activated) return report(context, activated.error());
  return exec_in(context, flags.command, activated->environment);
}

int run_shell(Context& context, const ActivationFlags& flags) {
  auto activated = activate_prefix(context, flags.prefix);
  if (!activated) return report(context, activated.error());
  auto shell = env::get(env::kShell).value_or("");
  if (shell.empty()) shell = kDefaultShell;
  // A hint for the prompt (`${ENVKIT_SHELL:+(envkit) }` in PS1): the user's rc
  // files stay as they are, and would reset a PS1 set here anyway.
  activated->environment["ENVKIT_SHELL"] = "1";
  context.console.info(fmt::format("a shell in the environment of {}; `exit` leaves it",
                                   text::quoted(activated->prefix.string())));
  return exec_in(context, {shell}, activated->environment);
}

int run_activate(Context& context, const ActivationFlags& flags) {
  const auto named = flags.shell ? flags.shell : env::get(env::kShell);
  const auto shell = activation::parse_shell(named.value_or(""));
  if (!shell) {
    const auto what = flags.shell ? fmt::format("unknown shell {}", text::quoted(*flags.shell))
                                  : std::string(
                                        "no shell given, and $SHELL is not one envkit "
                                        "writes for");
    return report(context,
                  Error::input(what).hint("use --shell bash, --shell zsh or --shell fish"));
  }
  auto activated = activate_prefix(context, flags.prefix);
  if (!activated) return report(context, activated.error());
  std::cout << activation::activation_script(*shell, activated->prefix, activated->changes);
  return 0;
}

}  // namespace

void register_activation(CLI::App& root, Commands& out) {
  auto flags = std::make_shared<ActivationFlags>();

  auto* run = root.add_subcommand(
      "run", "Run a command in the prefix's environment (PATH, libraries, CUDA_HOME, ...)");
  add_prefix_option(*run, flags->prefix);
  run->add_option("command", flags->command, "The command and its arguments (after `--`)")
      ->required()
      ->option_text("CMD ARGS...");
  // Everything from the command's name on is the command's, flags included
  // (`envkit run nvcc --version` must not print envkit's version).
  run->positionals_at_end();
  out.push_back({run, [flags](Context& context) { return run_run(context, *flags); }});

  auto* shell = root.add_subcommand("shell", "Start $SHELL in the prefix's environment");
  add_prefix_option(*shell, flags->prefix);
  out.push_back({shell, [flags](Context& context) { return run_shell(context, *flags); }});

  auto* activate = root.add_subcommand(
      "activate", "Print a script that puts the prefix's environment into your shell");
  add_prefix_option(*activate, flags->prefix);
  activate
      ->add_option("--shell", flags->shell,
                   "bash, zsh or fish (default: $SHELL's); bash/zsh: eval \"$(envkit activate "
                   "--shell bash)\", fish: envkit activate --shell fish | source")
      ->option_text("SHELL");
  out.push_back({activate, [flags](Context& context) { return run_activate(context, *flags); }});
}

}  // namespace envkit::cli
