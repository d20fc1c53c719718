#include "app.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "envkit/core/env_vars.hpp"
#include "envkit/core/text.hpp"
#include "envkit/version.hpp"

namespace envkit::cli {

int report(const Context& context, const Error& error) {
  context.console.error(error);
  if (context.options.json) {
    nlohmann::json out = {{"error", error.headline()}, {"exit_code", error.exit_code()}};
    if (!error.causes().empty()) out["causes"] = error.causes();
    if (!error.hints().empty()) out["hints"] = error.hints();
    std::cout << out.dump() << '\n';
  }
  return error.exit_code();
}

namespace {

void add_global_options(CLI::App& app, GlobalOptions& options) {
  app.add_option("-C", options.directory, "Run as if envkit was started in DIR")
      ->option_text("DIR");
  app.add_flag("--json", options.json, "Machine-readable output on stdout (human text on stderr)");
  app.add_flag("-q,--quiet", options.quiet, "Print only warnings and errors");
  app.add_flag("-v,--verbose", options.verbosity, "Say more (repeatable)");
  app.add_option("--color", options.color, "Colour: auto (a TTY without NO_COLOR), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->option_text("WHEN");
  app.add_option("--recipes", options.recipes,
                 fmt::format("Recipe database directory (default: ${}, else the database "
                             "installed with envkit)",
                             env::kRecipes.name))
      ->option_text("DIR");
  app.add_option("--cache-dir", options.cache_dir,
                 fmt::format("Cache directory (default: ${}/envkit, override ${})",
                             env::kXdgCacheHome.name, env::kCacheDir.name))
      ->option_text("DIR");
}

ColorMode color_mode(const std::string& text) {
  if (text == "always") return ColorMode::always;
  if (text == "never") return ColorMode::never;
  return ColorMode::auto_detect;
}

std::string help_hint(const CLI::App* app) {
  std::string path;
  for (auto* a = app; a != nullptr; a = a->get_parent()) {
    path = a->get_parent() ? " " + a->get_name() + path : "envkit" + path;
  }
  return fmt::format("run `{} --help` to see the usage", path);
}

// The first word of the command line that is neither a flag nor a flag's value:
// the command the user meant.
std::optional<std::string> first_word(int argc, char** argv) {
  constexpr std::string_view kTakesValue[] = {"-C", "--color", "--recipes", "--cache-dir"};
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (std::find(std::begin(kTakesValue), std::end(kTakesValue), arg) != std::end(kTakesValue)) {
      ++i;
    } else if (!arg.starts_with('-')) {
      return std::string(arg);
    }
  }
  return std::nullopt;
}

// `envkit frobnicate`: name the word and suggest the closest command.
std::optional<Error> unknown_command(const CLI::App& app, int argc, char** argv) {
  const auto word = first_word(argc, argv);
  if (!word) return std::nullopt;
  std::vector<std::string> names;
  for (const auto* sub : app.get_subcommands({}))
    names.push_back(sub->get_name());
  if (std::find(names.begin(), names.end(), *word) != names.end()) return std::nullopt;
  Error error = Error::input(fmt::format("unknown command {}", text::quoted(*word)));
  const std::vector<std::string_view> candidates(names.begin(), names.end());
  if (auto guess = text::did_you_mean(*word, candidates)) {
    error.hint(fmt::format("did you mean {}?", text::quoted(*guess)));
  }
  return error.hint(help_hint(&app));
}

}  // namespace

int run(int argc, char** argv) {
  CLI::App app{"envkit: reproducible CUDA, cuDNN and deep-learning stacks, solved and locked",
               "envkit"};
  app.fallthrough();  // global flags are accepted after the subcommand too
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("envkit ") + std::string(kVersion));
  GlobalOptions options;
  add_global_options(app, options);
  app.footer(
      "Exit codes: 0 success, 1 failed (actionable), 2 usage or input error, "
      "3 internal error, 77 skipped (no GPU).\n"
      "Another machine than this one: ENVKIT_OVERRIDE_DRIVER=535.104.05 (or none), "
      "ENVKIT_OVERRIDE_CUDA_ARCH=8.0,9.0, ENVKIT_OVERRIDE_GLIBC=2.28.\n"
      "Every command, flag, exit code, --json shape and variable: docs/cli.md. Errors you "
      "searched for: docs/troubleshooting.md. Shell completion: envkit completion bash|zsh|fish.");

  Commands commands;
  register_init(app, commands);
  register_lock(app, commands);
  register_why(app, commands);
  register_install(app, commands);
  register_activation(app, commands);
  register_mirror(app, commands);
  register_export(app, commands);
  register_config(app, commands);
  register_doctor(app, commands);
  register_smoke(app, commands);
  register_recipes(app, commands);
  register_debug(app, commands);
  register_completion(app, commands);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    Context context{options, Console(color_mode(options.color), false, 0)};
    const CLI::App* where = &app;
    for (const auto& command : commands) {
      if (command.app->parsed()) where = command.app;
    }
    if (where == &app) {
      if (auto error = unknown_command(app, argc, argv)) return report(context, *error);
    }
    return report(context, Error::input(e.what()).hint(help_hint(where)));
  }

  Context context{options, Console(color_mode(options.color), options.quiet, options.verbosity)};
  // The innermost chosen command runs (`debug specs`, not `debug`).
  const Command* chosen = nullptr;
  for (const auto& command : commands) {
    if (command.app->parsed() && command.run) chosen = &command;
  }
  if (chosen == nullptr) {
    return report(context, Error::input("no command given").hint(help_hint(&app)));
  }
  return chosen->run(context);
}

}  // namespace envkit::cli
