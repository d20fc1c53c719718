#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "context.hpp"
#include "envkit/config/config.hpp"
#include "envkit/core/result.hpp"
#include "envkit/locking/inputs.hpp"
#include "envkit/locking/live_facts.hpp"
#include "envkit/locking/lock_pipeline.hpp"
#include "envkit/locking/machine.hpp"
#include "envkit/locking/obtainable.hpp"
#include "envkit/recipes/database.hpp"

// What `lock`, `why` and `install` share on top of the lock pipeline
// (envkit/locking): the project as the command line opens it, the resolver
// envkit provides, how a failed solve is printed.
namespace envkit::cli {

using locking::LockAttempt;
using locking::LockInputs;

// The recipe database (--recipes) and the project's lock inputs, as `lock`,
// `why` and `install` all start.
struct Project {
  recipes::Database database;
  LockInputs inputs;
  // What this machine reaches and has: the lock preferred from it (inputs.notes say what),
  // and `lock` warns with it about sources it cannot reach.
  locking::MachineSources machine;
};

// How a command treats the package index's live overlay (`--offline`, `--refresh`).
struct IndexFlags {
  bool offline = false;
  bool refresh = false;
};

// The database with today's index laid over it (docs/recipes.md, "Today's index"); what
// the user should know about the overlay goes into inputs.warnings.
[[nodiscard]] Result<Project> open_project(const Context& context,
                                           const std::vector<specs::Platform>& platforms,
                                           const IndexFlags& index = {});

// This machine's network and interpreters as `lock` asks them: hosts asked at once and kept per
// network in <cache>/net/reachability.json (`--refresh` asks again, `--offline` asks nothing);
// ENVKIT_ASSUME_REACHABLE=1 leaves them unasked (`reach` empty).
[[nodiscard]] locking::MachineSources machine_sources(const Context& context,
                                                      const config::Settings& settings,
                                                      const IndexFlags& index);

// Adds `--offline` and `--refresh` to a command that locks.
void add_index_flags(CLI::App& command, IndexFlags& flags);

// Which index's overlay to lay over a database, and how.
struct IndexOverlay {
  std::string index_url;
  std::optional<std::string> mirror;    // the download mirror the index is read through
  std::vector<std::string> frameworks;  // of recipes::kLiveFrameworks
  IndexFlags flags;
};

// Lays the index's live overlay over `database` (reading the index when the policy says
// so); the warnings are the caller's to print.
[[nodiscard]] Result<locking::LiveFacts> lay_index_over(const Context& context,
                                                        recipes::Database& database,
                                                        const IndexOverlay& overlay);

// The first configured mirror that serves files (not a registry), for reading indexes.
[[nodiscard]] std::optional<std::string> download_mirror(const config::Settings& settings);

// The production resolver: uv (ENVKIT_UV, else the uv envkit provides), asked
// through the first configured mirror; `--verbose` says which uv runs.
[[nodiscard]] locking::ResolverFactory closure_resolver(const Context& context,
                                                        const LockInputs& inputs);

// `--platform P` flags (repeatable), repeats dropped; errors name the flag.
[[nodiscard]] Result<std::vector<specs::Platform>> parse_platform_flags(
    const std::vector<std::string>& flags);

// Prints an unsatisfiable platform's explanation (and, with --json, the
// {"error": "unsatisfiable", ...} object); returns exit code 1.
int report_unsolvable(const Context& context, specs::Platform platform,
                      const solve::Unsolvable& unsolvable);

}  // namespace envkit::cli
