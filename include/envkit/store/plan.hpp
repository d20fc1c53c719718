#pragma once

#include <optional>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/store/records.hpp"

// What `install` will do to a prefix: the lock's packages for this platform
// against the receipts of what is installed.
namespace envkit::store {

// NVIDIA ships CUDA and cuDNN twice: redist archives and PyPI wheels. One
// install uses one packaging for all of a package's components. A package
// with neither, only sources (zlib), is built from them at install.
// Python: `pip` is a wheel of the lock's Python closure, installed by the
// prefix's own pip; `venv` is the prefix made a venv of the machine's Python.
// `machine`: the machine's own library stands in for the lock's artifacts,
// which could not be downloaded here (zlib: libz.so.1); nothing is placed.
enum class Packaging : std::uint8_t { archive, wheel, source, runfile, pip, venv, machine };
[[nodiscard]] std::string_view to_string(Packaging packaging);

struct PlannedPackage {
  std::string name;
  std::string version;  // as the lock writes it
  std::string build;
  Packaging packaging = Packaging::archive;
  std::vector<specs::Artifact> artifacts;  // the chosen packaging's
  // The other packaging covering every component, for when the first is unreachable.
  std::optional<std::vector<specs::Artifact>> fallback;
  // Installed already from the same artifacts: nothing to fetch.
  bool unchanged = false;
  // Artifacts that are wheels of the Python closure (`provides:` in the lock):
  // not fetched for the package, but linked from what pip installed.
  struct Provided {
    specs::Artifact artifact;
    std::string wheel;  // the closure's name for it: `nvidia-cudnn-cu12`
  };
  std::vector<Provided> provided;
  // venv: the machine's Python, as the lock says it (`system`, a path), or
  // the interpreter standing in for the lock's own Python (a path).
  std::string external;
  // The machine's interpreter or library stands in for the lock's artifacts,
  // which this machine cannot download (install/sources.hpp).
  bool stand_in = false;
};

struct InstallPlan {
  std::vector<PlannedPackage> packages;  // what the prefix will hold, by name
  std::vector<std::string> removed;      // installed packages the lock no longer has
  // Packages of the lock this envkit leaves out, one sentence each.
  std::vector<std::string> skipped;

  // Nothing to add, change or remove.
  [[nodiscard]] bool nothing_to_do() const;
};

// The NVIDIA packaging `install` takes for `package` into an empty prefix:
// the preferred one if it covers every component, else the other; nullopt
// when the package has neither archives nor wheels (runfiles, sources).
[[nodiscard]] std::optional<Packaging> packaging_for(const lock::LockedPackage& package,
                                                     Packaging preferred);

// Fails (exit 1) for what cannot be installed at all, e.g. a CUDA that exists
// only as a runfile installer, saying what would be needed.
// A machine's stand-in installed before (a venv of its interpreter for the
// lock's Python, its libz.so.1 for zlib) stays while the lock's version is the
// same; `reinstall` plans every package afresh, stand-ins decided again.
[[nodiscard]] Result<InstallPlan> plan_install(const lock::PlatformLock& lock,
                                               const std::optional<PrefixState>& installed,
                                               Packaging preferred, bool reinstall = false);

}  // namespace envkit::store
