#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/specs/version.hpp"

// What a Python resolver (uv) is asked, and what it answers: the
// distributions of one environment, wheels wherever one fits.
namespace envkit::python {

// What a closure's file is: a wheel pip installs as it is, or a source
// distribution (.tar.gz, .zip) built into a wheel at install.
enum class Distribution : std::uint8_t { wheel, sdist };

// One package of a resolved closure: its wheel, or its sdist when it has no
// wheel for the target (html5lib 0.9999999, termcolor 1.1.0).
struct ResolvedWheel {
  std::string name;     // PEP 503 normalized (specs::canonical_package_name)
  std::string version;  // as the metadata spells it
  Distribution kind = Distribution::wheel;
  std::string url;     // where to download the file; credentials removed (url::without_credentials)
  std::string sha256;  // 64 lowercase hex digits
  std::optional<std::uint64_t> size;       // bytes, when the index says
  std::vector<std::string> requires_dist;  // the metadata's Requires-Dist, as written
  bool requested = false;                  // named by the request, not pulled in by another
};

// The wheels one resolution chose.
struct Closure {
  std::vector<ResolvedWheel> wheels;  // sorted by name
  std::string resolver;               // who resolved: "uv 0.13.9 (for CPython 3.6.9, ...)"
  // The date horizon the build dependencies of its source builds were taken as of
  // ("2019-11-27"), where it decided something: a declared `as-of` with sdists in the
  // closure, or a build that failed with today's tools. Empty: today's tools.
  std::string build_as_of;
  // Packages whose build environment had the framework (mmcv imports torch in its setup.py).
  std::vector<std::string> built_with_framework;  // PEP 503 names, sorted
};

// A release of a build tool and the day it was uploaded (its first file's `upload-time`).
struct ToolRelease {
  std::string version;   // "42.0.2"
  std::string uploaded;  // "2019-12-03"
  friend bool operator==(const ToolRelease&, const ToolRelease&) = default;
};

// The date horizon of source builds: the day their build dependencies are taken as of,
// why that day, and the releases of the build tools with their upload days.
struct BuildEra {
  std::string as_of;  // "2019-11-27"
  // "albumentations 0.4.3, the newest release the project pins, was uploaded on
  // 2019-11-27", or "envkit.yaml's `resolution.as-of`".
  std::string because;
  // Build tool (PEP 503 name: setuptools, wheel, cython) -> its final releases.
  std::map<std::string, std::vector<ToolRelease>> tools;
};

// How the source distributions a resolution builds for metadata are built
// (docs/python.md, "Source builds in the project's era"). Empty: as uv would.
struct BuildOptions {
  // The date horizon. With `as_of_declared` (envkit.yaml's `resolution.as-of`) it applies
  // from the first run; otherwise it is asked for only after a build failed with today's
  // tools. Empty function: no horizon is known.
  std::function<Result<BuildEra>()> era;
  bool as_of_declared = false;
  // The framework's distribution ("torch"): its requirement of the request is what a
  // package whose build imports it gets in its build environment. Empty: none.
  std::string framework;
  // Packages whose build gets the framework from the first run (envkit.yaml's
  // `resolution.build-with-framework`); others are added when their build fails for it.
  std::vector<std::string> with_framework;
  // envkit's own interpreter of a version's minor, from its cache; nullopt when none.
  std::function<std::optional<std::filesystem::path>(const specs::Version&)> own_python;
};

// What to resolve, and where from.
struct ResolveRequest {
  std::vector<std::string> requirements;  // PEP 508 lines: "torch==2.4.0", "numpy>=1.24"
  std::vector<std::filesystem::path> requirement_files;  // requirements.txt files, -r FILE
  // The first is the index (--index-url), the rest extra ones (--extra-index-url).
  // Empty: the resolver's own configuration decides.
  std::vector<std::string> index_urls;
  std::optional<std::filesystem::path> cwd;  // where relative requirement files are
  std::chrono::seconds timeout{600};         // the resolver is stopped after this long
  // Wheels only (uv gets `--only-binary :all:`): a requirement with nothing but a
  // source distribution is an error naming it. Off: a package without a wheel for
  // the target is locked as its sdist and built into a wheel at install.
  bool only_binary = false;
  // The requirements themselves, not what they require (uv's `--no-deps`):
  // whether a release has a file for the target at all.
  bool no_deps = false;
  // Read the indexes' pages again (uv's `--refresh`): when envkit has just read today's
  // releases, the resolver must see the same index, not its cached pages.
  bool refresh = false;
  // How source distributions are built for their metadata.
  BuildOptions build;
};

}  // namespace envkit::python
