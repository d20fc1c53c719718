#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/gpu/host_probe.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/manifest/manifest.hpp"
#include "envkit/net/reachability.hpp"
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
  // What the lock takes from this machine because it cannot download it, and why
  // (prefer_obtainable, obtainable.hpp): printed as `note:` lines. `manifest.external` and
  // `external` then hold it as if envkit.yaml said so; `manifest_hash` is envkit.yaml's.
  std::vector<std::string> notes;
  // The machine's interpreters of the Pythons envkit.yaml allows, newest minor first, when
  // the lock takes one because it can download none (obtainable.hpp): the first is in
  // `external`; the Python walk (lock_pipeline.cpp) takes the next older one where the
  // closure does not resolve for it. Each with its note. Empty otherwise.
  struct MachinePython {
    std::filesystem::path path;
    specs::Version version;
    std::string why;   // the solver's description of the external Python
    std::string note;  // printed when the lock takes this one
  };
  std::vector<MachinePython> machine_pythons;
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
  // envkit's cache (--cache-dir): its own interpreters build sdists where the machine has
  // none of the lock's minor (era.hpp). Empty: none looked for.
  std::filesystem::path cache_root;
  std::chrono::seconds resolve_timeout{60};
  bool only_binary = false;
  // Which hosts this machine reaches, per host (net::reachability_host), for the index
  // options of requirement files (docs/python.md, "Indexes in requirement files"): the
  // command line's MachineSources::reach. Empty: every host is taken as reachable.
  std::function<std::map<std::string, net::HostReachability>(const std::vector<std::string>&)>
      reach;
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
