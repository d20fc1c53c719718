#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/specs/version.hpp"
#include "envkit/specs/version_spec.hpp"

// Finding a Python interpreter whose pip can resolve requirements (docs/python.md).
namespace envkit::python {

// A Python interpreter and its pip.
struct Interpreter {
  std::filesystem::path path;         // as found (not resolved through symlinks)
  specs::Version version;             // 3.11.7, 3.13.0rc1
  std::optional<specs::Version> pip;  // nullopt: no importable `pip` module
  std::string implementation;         // sys.implementation.name: "cpython", "pypy"
  std::string platform_tag;           // sysconfig.get_platform(): "linux-x86_64"

  // "CPython 3.11.7", for messages and Closure::resolver.
  [[nodiscard]] std::string description() const;
};

// The oldest Python and pip that can resolve: pip writes installation reports
// (`--report`) since 22.2, and pip 22.2 needs Python 3.7; envkit asks for 3.8.
[[nodiscard]] specs::Version minimum_python();  // 3.8
[[nodiscard]] specs::Version minimum_pip();     // 22.2

// Runs `path -I -c <probe>` (timeout 30 s). The probe prints one JSON line,
//   {"version": "3.11.7", "implementation": "cpython", "platform": "linux-x86_64",
//    "pip": "23.2.1"}
// with "pip" null when `import pip` fails (a stand-in interpreter in a test prints the
// same). Errors (failed) name the path and quote what it printed:
// "`/x/python3` did not start: ...", "... did not answer within 30 s",
// "... printed something other than the probe's answer: ...".
[[nodiscard]] Result<Interpreter> inspect(const std::filesystem::path& path);

// The interpreter to resolve with. Candidates, in order: each of `preferred` (the
// prefix's bin/python3, then a manifest's external python), then `python3` and
// `python` on PATH, then `python3.14` ... `python3.8` on PATH; a file reached twice
// (through links, or named twice) is tried once. The first that runs with Python
// >= 3.8, pip >= 22.2 and, when `python_spec` is given, a version it contains wins.
// When none qualifies, the error (failed) gives every candidate tried and why it was
// refused (`/usr/bin/python3`: Python 3.11.2 has no pip), the names not on PATH, and
// hints: install pip, upgrade it (`python3 -m pip install -U pip`), or install a Python.
[[nodiscard]] Result<Interpreter> find_resolver(
    const std::vector<std::filesystem::path>& preferred,
    const std::optional<specs::VersionSpec>& python_spec = std::nullopt);

}  // namespace envkit::python
