#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "context.hpp"
#include "envkit/core/result.hpp"
#include "envkit/gpu/host_probe.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/manifest/manifest.hpp"
#include "envkit/recipes/database.hpp"
#include "envkit/solve/solve.hpp"
#include "python_lock.hpp"

// The lock pipeline shared by `lock`, `why` (and later `install`):
// envkit.yaml + host facts -> solve requests -> solutions -> envkit.lock.
namespace envkit::cli {

// Everything a solve needs besides the recipe database, read once.
struct LockInputs {
  std::filesystem::path manifest_path;
  manifest::Manifest manifest;
  std::string manifest_hash;
  std::vector<specs::Platform> platforms;  // --platform flags, else the manifest's
  solve::SystemFacts facts;                // what the solver assumes about the machines
  lock::SystemAssumptions assumptions;     // the same, as the lock records it
  std::map<std::string, solve::External> external;
  std::vector<std::string> warnings;  // e.g. no driver known: locked without a constraint
  // Requirements that do not come from envkit.yaml: the CUDA and cuDNN the
  // framework's wheels pin, a Python for `python-requirements`.
  std::vector<solve::Requirement> extra_requirements;
  // Framework builds the configured indexes do not serve.
  std::vector<solve::UnavailableBuild> unavailable;
  // How the Python closure is resolved: the index when envkit.yaml names none
  // (configuration `index-url`), the download mirror indexes are asked through,
  // the time a resolution may take, wheels only.
  std::string default_index;
  std::optional<std::string> mirror;
  std::chrono::seconds resolve_timeout{60};
  bool only_binary = false;
};

// Reads envkit.yaml in `directory` and settles the machines' facts: the
// manifest's `system:` section when it has one (it describes every machine the
// lock serves and wins), else the ENVKIT_OVERRIDE_* variables, else the probe.
[[nodiscard]] Result<LockInputs> gather_lock_inputs(const std::filesystem::path& directory,
                                                    const std::vector<specs::Platform>& platforms,
                                                    const gpu::ProbeSources& sources);

// The recipe database (--recipes) and the project's lock inputs, as `lock`,
// `why` and `install` all start.
struct Project {
  recipes::Database database;
  LockInputs inputs;
};
[[nodiscard]] Result<Project> open_project(const Context& context,
                                           const std::vector<specs::Platform>& platforms);

struct Solved {
  std::map<specs::Platform, solve::Solution> solutions;
  // The first platform that has no solution, with the explanation.
  std::optional<std::pair<specs::Platform, solve::Unsolvable>> failure;
};

[[nodiscard]] Result<Solved> solve_platforms(const recipes::Database& database,
                                             const LockInputs& inputs);

// The lock file for solutions of every platform: each package's artifacts for
// its platform (CUDA: the recipe's default components), hashes of the inputs.
[[nodiscard]] Result<lock::Lockfile> make_lockfile(const recipes::Database& database,
                                                   const LockInputs& inputs, const Solved& solved);

// A solved and made lock, or the first platform's explanation of why there is none.
struct LockAttempt {
  std::optional<lock::Lockfile> lockfile;
  std::optional<std::pair<specs::Platform, solve::Unsolvable>> failure;
  // What the user should know: platforms without a Python closure, pins added.
  std::vector<std::string> warnings;
};
// Makes the resolver of Python closures when one is first needed (finding or
// downloading uv); a lock without a closure never calls it.
using ResolverFactory = std::function<Result<ClosureResolver>()>;

// With a Python closure when the project has one; `previous` (the lock being
// replaced) lends its closures where their inputs did not change. The solver
// and the closure are brought to agree: the CUDA and cuDNN the closure's
// NVIDIA wheels pin, the framework build the indexes really serve.
[[nodiscard]] Result<LockAttempt> solve_lock(const recipes::Database& database,
                                             const LockInputs& inputs,
                                             const lock::Lockfile* previous,
                                             const ResolverFactory& resolver);

// The production resolver: uv (ENVKIT_UV, else the uv envkit provides), asked
// through the first configured mirror; `--verbose` says which uv runs.
[[nodiscard]] ResolverFactory closure_resolver(const Context& context, const LockInputs& inputs);

// Writes `text` to `path` unless the file holds exactly it already.
[[nodiscard]] Result<void> write_lock_text(const std::filesystem::path& path,
                                           const std::string& text);

// Why `lockfile` no longer matches the inputs: the manifest's content, the
// recipe files it was made from, the platforms asked for, or (when the facts
// came from this machine) the machine's facts.
[[nodiscard]] Result<lock::Staleness> lock_staleness(const recipes::Database& database,
                                                     const LockInputs& inputs,
                                                     const lock::Lockfile& lockfile);

// Whether this machine meets what the lock needs of a machine (`system:`
// `driver: ">=525.60.13"` of a lock solved with a machine's facts): an error
// naming the unmet requirement, with a hint, when it does not. A machine
// without a driver, or a lock that needs none, passes: install puts the stack
// in place and `envkit doctor` says what is missing to run it.
[[nodiscard]] Result<void> check_machine(const lock::Lockfile& lockfile,
                                         const gpu::ProbeSources& sources);

// `--platform P` flags (repeatable), repeats dropped; errors name the flag.
[[nodiscard]] Result<std::vector<specs::Platform>> parse_platform_flags(
    const std::vector<std::string>& flags);

// Prints an unsatisfiable platform's explanation (and, with --json, the
// {"error": "unsatisfiable", ...} object); returns exit code 1.
int report_unsolvable(const Context& context, specs::Platform platform,
                      const solve::Unsolvable& unsolvable);

}  // namespace envkit::cli
