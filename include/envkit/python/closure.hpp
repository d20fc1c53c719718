#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

// What a Python resolver (pip, uv) answers: the distributions of one
// environment, wheels wherever one fits.
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
  std::optional<std::uint64_t> size;       // bytes, when the resolver says (pip does not)
  std::vector<std::string> requires_dist;  // the metadata's Requires-Dist, as written
  bool requested = false;                  // named by the request, not pulled in by another
};

// The wheels one resolution chose.
struct Closure {
  std::vector<ResolvedWheel> wheels;  // sorted by name
  std::string resolver;               // who resolved: "pip 23.2.1 (CPython 3.11.7)"
};

}  // namespace envkit::python
