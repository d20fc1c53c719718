#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/python/closure.hpp"
#include "envkit/python/interpreter.hpp"

// Resolving Python requirements with pip's own resolver (docs/python.md).
namespace envkit::python {

// What to resolve, and where from.
struct ResolveRequest {
  std::vector<std::string> requirements;  // PEP 508 lines: "torch==2.4.0", "numpy>=1.24"
  std::vector<std::filesystem::path> requirement_files;  // requirements.txt files, -r FILE
  // The first is the index (--index-url), the rest extra ones (--extra-index-url).
  // Empty: the resolver's own configuration decides (pip: PIP_INDEX_URL, pip.conf).
  std::vector<std::string> index_urls;
  std::optional<std::filesystem::path> cwd;  // where relative requirement files are
  std::chrono::seconds timeout{600};         // the resolver is stopped after this long
  // Wheels only (uv gets `--only-binary :all:`): a requirement with nothing but a
  // source distribution is an error naming it. Off: a package without a wheel for
  // the target is locked as its sdist and built into a wheel at install. pip
  // (resolve_with_pip) resolves wheels only either way.
  bool only_binary = false;
  // The requirements themselves, not what they require (uv's `--no-deps`):
  // whether a release has a file for the target at all.
  bool no_deps = false;
};

// Runs `python -I -m pip install --dry-run --ignore-installed --report FILE
// --only-binary=:all: --disable-pip-version-check --no-input --no-color
// [--index-url URL [--extra-index-url URL]...] [-r FILE]... REQUIREMENT...` in
// `request.cwd` and reads the report (parse_pip_report). Not --quiet: pip explains a
// conflict at its info level. pip's environment is envkit's (PIP_* variables and
// pip.conf apply). Errors (failed): pip refusing (no matching distribution,
// conflicting requirements), quoting its `ERROR:` lines and its conflict explanation,
// with a hint; pip not finishing within `request.timeout`. A requirement that starts
// with `-` is an input error. URLs in messages are redacted (`https://***@host/`).
// An empty request gives an empty closure without running pip.
[[nodiscard]] Result<Closure> resolve_with_pip(const Interpreter& python,
                                               const ResolveRequest& request);

// Reads pip's installation report (https://pip.pypa.io/en/stable/reference/installation-report/,
// format version 1): for each `install[]` item metadata.name (normalized), metadata.version,
// metadata.requires_dist, download_info.url (credentials removed), the sha256 of
// download_info.archive_info.hashes (or of its older `hash`: "sha256=..."), and `requested`.
// Closure::resolver is "pip <pip_version> (<implementation> <python_full_version>)" from the
// report's `pip_version` and `environment`. Errors (input) name `source` and the item
// (`install[2]` (`foo` 1.0)): not JSON, a report of another major version, a missing field,
// an item without a sha256 or that is not a wheel (a .tar.gz, a directory, a VCS checkout).
[[nodiscard]] Result<Closure> parse_pip_report(std::string_view json, std::string_view source);

}  // namespace envkit::python
