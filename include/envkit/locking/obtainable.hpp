#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/locking/inputs.hpp"
#include "envkit/net/reachability.hpp"
#include "envkit/python/interpreters.hpp"
#include "envkit/recipes/database.hpp"
#include "envkit/specs/artifact.hpp"
#include "envkit/specs/platform.hpp"
#include "envkit/specs/version.hpp"

// What this machine can obtain, decided before the solve (docs/python.md#which-python):
// among the Pythons a project allows, the lock prefers one this machine can download (a
// host it reaches, a mirror, Debian's copy of python.org's tarball) or already has (an
// interpreter of that minor), and a zlib it cannot download is the machine's own. After
// the solve, the locked sources no host of which answers are named in one warning.
namespace envkit::locking {

// A shared library the machine has: its version and the file it was loaded from.
struct MachineLibrary {
  specs::Version version;      // 1.2.13
  std::filesystem::path path;  // /lib/x86_64-linux-gnu/libz.so.1
};

// What this machine reaches and has, behind narrow interfaces: the production ones ask
// the network and the machine (cli/locking.cpp), tests give fixed answers.
struct MachineSources {
  // Answers per host (net::reachability_host) for `urls`; a host left out is unknown and
  // taken as reachable (`--offline` with nothing kept).
  std::function<std::map<std::string, net::HostReachability>(const std::vector<std::string>&)>
      reach;
  // The machine's newest interpreter of a Python's major.minor; nullopt: none.
  std::function<std::optional<python::MachineInterpreter>(const specs::Version&)> interpreter;
  // The machine's zlib (libz.so.1); nullopt: none, or one whose version does not parse.
  std::function<std::optional<MachineLibrary>()> zlib;
  // Download mirrors, tried before every URL (`mirrors`, ENVKIT_MIRRORS).
  std::vector<std::string> mirrors;
  // This machine's platform: its interpreters and libraries serve a lock of it alone.
  specs::Platform platform = specs::host_platform();
};

// Every URL `artifact` is fetched from, in the order install tries them: each mirror's
// copy, its `url`, then its `also-at` URLs (store::candidate_urls).
[[nodiscard]] std::vector<std::string> artifact_urls(const specs::Artifact& artifact,
                                                     const std::vector<std::string>& mirrors);

// Decides, before the solve, what a lock of THIS machine (facts probed here, no
// `system:` section, no ENVKIT_OVERRIDE_*) takes from the machine, and records it in
// `inputs` (as `external:` would, plus builds the solver cannot use):
//   - the newest Python allowed, when it can be downloaded here: nothing changes;
//   - else the newest release of that minor whose prebuilt download is reachable;
//   - else the newest allowed minor the machine has an interpreter of, provided by it
//     (recorded as its path, like `external: {python: /path/to/python3.X}`);
//   - else the newest allowed release it can download at all (a source tarball);
//   - else nothing (unreachable_sources() warns).
// zlib: when the one chosen cannot be downloaded and the machine's own satisfies every
// requirement, the machine's (recorded as its version). Never overrides envkit.yaml's
// `external:`; `requires:` is respected (the preference is among what it allows).
// Returns one note per decision, saying why; inputs are unchanged when nothing is taken.
[[nodiscard]] Result<std::vector<std::string>> prefer_obtainable(const recipes::Database& database,
                                                                 LockInputs& inputs,
                                                                 const MachineSources& sources);

// The Python walk's turn (lock_pipeline.cpp): the closure does not resolve for the machine's
// Python `failed`, which prefer_obtainable chose; the machine's interpreter of the next older
// allowed minor takes its place in `inputs`. False when the Python is not one envkit chose
// from this machine (envkit.yaml's own `external:`) or the machine has no older one.
[[nodiscard]] bool take_older_machine_python(LockInputs& inputs, const specs::Version& failed);

// The notes `envkit lock` prints for `lockfile`: inputs.notes, the Python's being that of the
// machine's interpreter the lock took (the walk may have taken an older one).
[[nodiscard]] std::vector<std::string> obtainable_notes(const LockInputs& inputs,
                                                        const lock::Lockfile& lockfile);

// After the lock: one warning naming each locked artifact whose every URL (mirrors,
// `url`, `also-at`) is on a host this machine does not reach, with the host and why, and
// the fixes; a component another artifact of (NVIDIA's wheel beside its archive) is
// reachable is not named. nullopt when every source is reachable (or unknown).
[[nodiscard]] std::optional<std::string> unreachable_sources(const lock::Lockfile& lockfile,
                                                             const MachineSources& sources);

// The machine's zlib: libz.so.1 loaded and asked zlibVersion(); nullopt without one.
[[nodiscard]] std::optional<MachineLibrary> machine_zlib();

}  // namespace envkit::locking
