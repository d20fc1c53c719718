#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "envkit/specs/platform.hpp"

// PEP 508 environment markers (`sys_platform == 'win32' and python_version < "3.9"`),
// evaluated where only part of the environment is known: `envkit init` knows
// the lock targets Linux but not yet which Python the solver will choose, so
// a marker can be true, false, or undecided until then.
namespace envkit::project {

enum class Truth : std::uint8_t { no, yes, unknown };

// Marker variables with known values (`sys_platform` -> `linux`); a variable
// not in the map is unknown.
using MarkerEnvironment = std::map<std::string, std::string, std::less<>>;

// The variables every Linux target of a lock shares (CPython on Linux); the
// machine (`platform_machine`) and the Python version stay unknown.
[[nodiscard]] MarkerEnvironment linux_cpython_environment();

// The variables a lock platform fixes for CPython there (`sys_platform`, `platform_system`,
// `platform_machine`, ...); the Python version stays unknown.
[[nodiscard]] MarkerEnvironment cpython_environment(specs::Platform platform);

// Three-valued (Kleene) evaluation: `and`/`or`, parentheses, the PEP 440
// comparisons for version variables and string equality, `in`/`not in`.
// An empty marker is `yes`; one that does not parse is `unknown` (envkit does
// not refuse a project for a marker pip would judge).
[[nodiscard]] Truth evaluate_marker(std::string_view marker, const MarkerEnvironment& environment);

}  // namespace envkit::project
