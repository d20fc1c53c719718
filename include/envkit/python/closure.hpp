#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

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
};

}  // namespace envkit::python
