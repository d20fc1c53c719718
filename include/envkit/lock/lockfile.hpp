#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/specs/artifact.hpp"
#include "envkit/specs/fact_source.hpp"
#include "envkit/specs/platform.hpp"
#include "envkit/specs/version.hpp"

// The lock file model (docs/lockfile.md): what `envkit lock` chose, exactly,
// per platform, with every artifact `envkit install` will fetch. The text form
// is canonical: the same Lockfile always writes the same bytes.
namespace envkit::lock {

// The newest lock format this envkit reads and writes. Format 2 added `also-at:` (other URLs
// of an artifact); a lock that has none is written as format 1, which older envkits read.
inline constexpr int kFormatVersion = 2;
inline constexpr std::string_view kFileName = "envkit.lock";

// The facts about the machines the lock was solved for.
struct SystemAssumptions {
  // Where the facts came from. From the manifest they describe every machine;
  // otherwise they are what the locked stack needs of a machine.
  specs::FactSource source = specs::FactSource::none;
  // The NVIDIA driver(s): a specifier for a fleet (">=390.30") or one driver
  // ("535.104.05"); absent when no driver was known (no driver constraint).
  std::optional<std::string> driver;
  std::vector<specs::ComputeCapability> cuda_arch;  // sorted, unique
  std::optional<std::string> glibc;                 // specifier or version
  friend bool operator==(const SystemAssumptions&, const SystemAssumptions&) = default;
};

struct LockedPackage {
  std::string name;        // canonical package name
  specs::Version version;  // original() is what is written (8.9.7.29, 450.80.02)
  std::string build;       // build id (`cu121`, `cuda12`); empty when the version has one build
  // Set when the machine provides the package (`external:` in the manifest):
  // what the manifest said (`3.6.9`, `system`, `/usr/bin/python3.6`). No artifacts.
  std::optional<std::string> external;
  // The build's requirements as the recipe states them (package -> spec text, "" = any).
  std::map<std::string, std::string> requires_;
  // Sorted by (component, kind, url). Artifacts of other platforms never appear here.
  std::vector<specs::Artifact> artifacts;
  friend bool operator==(const LockedPackage&, const LockedPackage&) = default;
};

// What a closure package's file is: a wheel, or a source distribution that
// install builds into a wheel with the environment's own Python (`kind: sdist`).
enum class Distribution : std::uint8_t { wheel, sdist };
[[nodiscard]] std::string_view to_string(Distribution kind);
[[nodiscard]] std::optional<Distribution> parse_distribution(std::string_view text);

// One package of the project's Python closure (the framework, its dependencies
// and the project's `python-requirements`), as the resolver chose it: its wheel,
// or its sdist when no wheel fits (html5lib 0.9999999 on Python 3.6).
struct PythonWheel {
  std::string name;     // PEP 503 normalized: `nvidia-cudnn-cu12`, `numpy`
  std::string version;  // as the wheel's metadata spells it
  Distribution kind = Distribution::wheel;
  std::string url;     // never with credentials
  std::string sha256;  // 64 lowercase hex digits
  std::optional<std::uint64_t> size;
  // The lock package this NVIDIA wheel also is (`cudnn`, `cuda`): install puts
  // its libraries in the prefix's lib/ and include/ as links to the very files
  // in site-packages, so the framework and the prefix share one copy.
  std::string provides;
  friend bool operator==(const PythonWheel&, const PythonWheel&) = default;
};

struct PythonClosure {
  // "sha256:<hex>" of what decided the closure (requirements, their files'
  // text, indexes, the Python series): the same inputs reuse the closure.
  std::string inputs;
  std::string resolver;               // "pip 23.2.1 (CPython 3.11.7)": who resolved it
  std::string python;                 // the Python version markers were evaluated for
  std::vector<PythonWheel> packages;  // sorted by name
  // `build-as-of`: the day its source builds' build dependencies were taken as of, where
  // that decided something (python.md, "Source builds in the project's era"); empty: today's.
  std::string build_as_of;
  // `built-with-framework`: packages whose build had the locked framework (mmcv), sorted.
  std::vector<std::string> built_with_framework;
  friend bool operator==(const PythonClosure&, const PythonClosure&) = default;
};

// A closure package as an artifact envkit downloads, kept whole: a wheel
// (kind wheel, format whl) pip installs, or an sdist (kind source, format
// tar.gz, zip, ...) built into a wheel first. Layout `none` for both.
[[nodiscard]] specs::Artifact wheel_artifact(const PythonWheel& wheel, specs::Platform platform);

struct PlatformLock {
  specs::Platform platform = specs::Platform::linux_x86_64;
  std::vector<LockedPackage> packages;  // sorted by name
  // The Python closure; nullopt when the project has none or no resolver could
  // make one for this platform.
  std::optional<PythonClosure> python;
  friend bool operator==(const PlatformLock&, const PlatformLock&) = default;
};

struct Lockfile {
  // The format: as read, or the lowest that holds what the lock says (format_needed);
  // write() writes the higher of the two.
  int version = 1;
  // "sha256:<hex>" of the manifest's content (manifest::content_hash): comments
  // and formatting do not count.
  std::string manifest_hash;
  // Recipe package -> "sha256:<hex>" of the database files the lock read for it.
  std::map<std::string, std::string> recipes;
  // Recipe package -> where the facts of its locked versions came from when a package
  // index's live overlay gave them ("https://pypi.org/simple (read 2026-11-29)"); a
  // package absent here was locked from the built-in database alone.
  std::map<std::string, std::string> index_facts;
  SystemAssumptions system;
  std::vector<PlatformLock> platforms;  // sorted by platform name
  friend bool operator==(const Lockfile&, const Lockfile&) = default;
};

// The lowest format that holds `lockfile`: 2 when an artifact has `also-at:` or a Python
// closure `build-as-of:` or `built-with-framework:`, else 1.
[[nodiscard]] int format_needed(const Lockfile& lockfile);

// Sorts everything into the canonical order (platforms, packages, artifacts,
// cuda_arch) so that write() is deterministic whatever order values came in,
// and gives each artifact the platform of the entry that holds it.
void canonicalize(Lockfile& lockfile);

// The canonical YAML text: fixed key order, sorted lists, LF, final newline,
// a header comment. canonicalize() is applied to a copy first.
[[nodiscard]] std::string write(const Lockfile& lockfile);

// Parses lock text; errors are ErrorCode::input and name file:line:column.
// A lock of a newer format major than kFormatVersion is refused with a hint to
// upgrade envkit.
[[nodiscard]] Result<Lockfile> parse(std::string_view text, std::string_view file);
[[nodiscard]] Result<Lockfile> load(const std::filesystem::path& path);

// What differs between a lock and the inputs it should have been made from.
struct Staleness {
  std::vector<std::string> reasons;  // one sentence each, e.g. "the manifest changed"
  [[nodiscard]] bool stale() const { return !reasons.empty(); }
};

// Compares the lock's hashes with the current manifest hash and the current
// recipe hashes (package -> "sha256:<hex>", for the packages the lock lists).
// Reasons name the package (`recipe \`cuda\` changed`) or the manifest.
[[nodiscard]] Staleness compare(const Lockfile& lockfile, std::string_view manifest_hash,
                                const std::map<std::string, std::string>& recipe_hashes);

}  // namespace envkit::lock
