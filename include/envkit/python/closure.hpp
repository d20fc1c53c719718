#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

// What a Python resolver (pip, uv) answers: the wheels of one environment.
namespace envkit::python {

// One wheel of a resolved closure.
struct ResolvedWheel {
  std::string name;     // PEP 503 normalized (specs::canonical_package_name)
  std::string version;  // as the metadata spells it
  std::string url;  // where to download the wheel; credentials removed (url::without_credentials)
  std::string sha256;                      // 64 lowercase hex digits
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
