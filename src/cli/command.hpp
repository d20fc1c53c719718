#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

#include "context.hpp"

namespace envkit::cli {

// A (sub)command: its CLI11 node and what runs when it is chosen. The runner
// returns the process exit code (CLI.md).
struct Command {
  CLI::App* app = nullptr;
  std::function<int(Context&)> run;
};
using Commands = std::vector<Command>;

// One function per command file; each adds its subcommands to `root`.
void register_init(CLI::App& root, Commands& out);
void register_debug(CLI::App& root, Commands& out);
void register_recipes(CLI::App& root, Commands& out);
void register_lock(CLI::App& root, Commands& out);
void register_why(CLI::App& root, Commands& out);
void register_install(CLI::App& root, Commands& out);
void register_activation(CLI::App& root, Commands& out);  // run, shell, activate
void register_mirror(CLI::App& root, Commands& out);
void register_export(CLI::App& root, Commands& out);
void register_config(CLI::App& root, Commands& out);
void register_doctor(CLI::App& root, Commands& out);
void register_smoke(CLI::App& root, Commands& out);
void register_completion(CLI::App& root, Commands& out);  // after the others: it lists them

// Prints `error` (and, with --json, {"error": ...} on stdout); returns its exit code.
int report(const Context& context, const Error& error);

}  // namespace envkit::cli
