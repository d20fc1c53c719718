#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/locking/inputs.hpp"
#include "envkit/locking/python_closure.hpp"
#include "envkit/recipes/database.hpp"
#include "envkit/solve/solve.hpp"

// The lock pipeline shared by `lock`, `why` and `install`: envkit.yaml + the
// machines' facts -> solutions -> envkit.lock, with the Python closure and the
// solver brought to agree.
namespace envkit::locking {

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
  // Facts of locked versions that no index states and envkit inferred (today's index: a
  // CUDA newer than the driver tables takes its family's minimum driver), one line each.
  std::vector<std::string> notes;
  // The solutions the lock was made from, with why each version was chosen.
  std::optional<Solved> solved;
};

// The recipe hashes a lock records: one per package it holds, over the
// versions it holds (a change to another version does not make it stale).
[[nodiscard]] Result<std::map<std::string, std::string>> recipe_hashes(
    const recipes::Database& database, const lock::Lockfile& lockfile);

// Makes the resolver of Python closures when one is first needed (finding or
// downloading uv); a lock without a closure, or whose closures the previous
// lock lends, never calls it.
using ResolverFactory = std::function<Result<ClosureResolver>()>;

// With a Python closure when the project has one; `previous` (the lock being
// replaced) lends its closures where their inputs did not change. The solver
// and the closure are brought to agree: the CUDA and cuDNN the closure's
// NVIDIA wheels pin, the framework build the indexes really serve.
[[nodiscard]] Result<LockAttempt> solve_lock(const recipes::Database& database,
                                             const LockInputs& inputs,
                                             const lock::Lockfile* previous,
                                             const ResolverFactory& resolver);

// Writes `text` to `path` unless the file holds exactly it already.
[[nodiscard]] Result<void> write_lock_text(const std::filesystem::path& path,
                                           const std::string& text);

// Solves the lock (solve_lock) and writes it to `path` when there is one; a
// failed solve writes nothing, so the previous envkit.lock stays as it was.
[[nodiscard]] Result<LockAttempt> relock(const recipes::Database& database,
                                         const LockInputs& inputs, const lock::Lockfile* previous,
                                         const ResolverFactory& resolver,
                                         const std::filesystem::path& path);

// The lock at `path`; nullopt when there is none.
[[nodiscard]] Result<std::optional<lock::Lockfile>> read_lock(const std::filesystem::path& path);

// "envkit.lock is out of date", because of each reason.
[[nodiscard]] Error out_of_date(const std::filesystem::path& path,
                                const std::vector<std::string>& reasons);

// Why `lockfile` no longer matches the inputs: the manifest's content (its
// `system:` section included), the recipe files it was made from, the
// platforms asked for, the Python closure's inputs. Never this machine.
[[nodiscard]] Result<lock::Staleness> lock_staleness(const recipes::Database& database,
                                                     const LockInputs& inputs,
                                                     const lock::Lockfile& lockfile);

}  // namespace envkit::locking
