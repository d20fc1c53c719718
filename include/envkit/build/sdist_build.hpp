#pragma once

#include <chrono>
#include <filesystem>
#include <set>
#include <string>

#include "envkit/core/result.hpp"
#include "envkit/store/cache.hpp"
#include "envkit/store/records.hpp"

// Python source distributions of a lock's closure (`kind: sdist`: html5lib
// 0.9999999 has no wheel) built into wheels at install (docs/python.md), by
// the environment's own Python after the closure's wheels are installed, so
// the closure's setuptools and wheel do the build. The wheel is a cache entry
// keyed by the sdist's sha256 and the interpreter's version; its build log is
// kept like a source build's (<cache>/store/v1/logs/).
namespace envkit::build {

// What a closure's sdists are built with.
struct SdistContext {
  std::filesystem::path python;   // the environment's interpreter: <generation>/bin/python3
  std::string python_version;     // its version, 3.11.7: part of the cache key
  std::set<std::string> closure;  // the closure's package names (PEP 503), for hints
};

// One sdist to build into a wheel.
struct SdistBuild {
  std::string label;            // "html5lib 0.9999999": names the package in errors
  std::filesystem::path sdist;  // the verified download
  std::filesystem::path out;    // an empty folder: the wheel is written there
  std::filesystem::path log;    // the build log, kept
  SdistContext context;
  std::chrono::milliseconds timeout = std::chrono::minutes(30);
};

// Runs `PYTHON -I -m pip wheel --no-deps --no-build-isolation --no-index
// --no-cache-dir --disable-pip-version-check --no-input -w OUT SDIST` (PIP_CONFIG_FILE=/dev/null:
// no configuration sends pip elsewhere), its output in `build.log`. Returns the wheel it wrote. A
// failure is an error naming the package and the step, with pip's last 20 lines and the log's path
// (run_build_step); when the build could not import setuptools (or lacked
// `wheel`'s bdist_wheel), it says so, and whether the closure has it, with a
// hint to add it to the project's Python requirements.
[[nodiscard]] Result<std::filesystem::path> build_sdist(const SdistBuild& build);

// The wheel of the closure package `name` `version` whose sdist is the cache
// entry `sdist` (its one file): entry Cache::sdist_wheel_id(sdist's sha256,
// context.python_version), found in the cache or built there with build_sdist
// (the log at Cache::build_log(id)). The entry holds the wheel unpacked, as a
// downloaded wheel's entry does; its record's sha256 is the wheel file's.
[[nodiscard]] Result<store::EntryRecord> sdist_wheel_entry(const store::Cache& cache,
                                                           const std::string& name,
                                                           const std::string& version,
                                                           const store::EntryRecord& sdist,
                                                           const SdistContext& context);

}  // namespace envkit::build
