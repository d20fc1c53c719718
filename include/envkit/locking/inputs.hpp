#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/gpu/host_probe.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/manifest/manifest.hpp"
#include "envkit/recipes/live_index.hpp"
#include "envkit/solve/solve.hpp"

// What a lock is made from besides the recipe database: envkit.yaml, the
// machines' facts, how Python closures are resolved.
namespace envkit::locking {

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
  // The package index's live overlay laid over the recipe database (live_facts.hpp);
  // nullopt when the lock reads the built-in database alone.
  std::optional<recipes::LiveState> live_index;
  // The overlay was read from the index by this very lock: the resolver reads its pages
  // again too, so that both see the same releases.
  bool live_index_read_now = false;
};

// Reads envkit.yaml in `directory` and settles the machines' facts: the
// manifest's `system:` section when it has one (it describes every machine the
// lock serves and wins), else the ENVKIT_OVERRIDE_* variables, else the probe.
[[nodiscard]] Result<LockInputs> gather_lock_inputs(const std::filesystem::path& directory,
                                                    const std::vector<specs::Platform>& platforms,
                                                    const gpu::ProbeSources& sources);

}  // namespace envkit::locking
