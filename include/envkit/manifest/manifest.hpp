#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/specs/platform.hpp"
#include "envkit/specs/version.hpp"
#include "envkit/specs/version_spec.hpp"

namespace envkit::manifest {

// `framework: tensorflow-gpu ==1.6.0`: canonical package name and its spec
// (an empty spec means any version).
struct FrameworkRequirement {
  std::string name;  // canonical: torch, tensorflow, tensorflow-gpu, jax
  specs::VersionSpec spec;
};

// `external:` — a package the machine provides instead of envkit.
struct ExternalSystem {};  // `system`: detect it on the host (e.g. python3 on PATH)
struct ExternalPath {      // a path to the tool (e.g. /usr/bin/python3.6)
  std::filesystem::path path;
};
using ExternalSource = std::variant<specs::Version, ExternalSystem, ExternalPath>;

// `system:` — the machines the lock must serve; wins over the host probe.
struct SystemSection {
  std::optional<specs::VersionSpec> driver;         // ">=390.30" or a bare fleet driver
  std::vector<specs::ComputeCapability> cuda_arch;  // ["6.1", "7.0"]
  std::optional<specs::VersionSpec> glibc;
};

struct SmokeOptions {
  int steps = 200;
};

// `resolution:` — how the Python closure's source distributions are built
// (docs/python.md, "Source builds in the project's era").
struct ResolutionOptions {
  // `as-of: 2022-08-01`: the date horizon of build dependencies (setuptools,
  // wheel, Cython as they were on that day). nullopt: the upload date of the
  // newest release the project pins. Always a valid date from 2015-01-01 to today.
  std::optional<std::string> as_of;
  // `build-with-framework: [mmcv]`: packages whose build imports the framework
  // (PEP 503 names, sorted, once each); their build environment gets the locked one.
  std::vector<std::string> build_with_framework;
  friend bool operator==(const ResolutionOptions&, const ResolutionOptions&) = default;
};

struct Manifest {
  std::string name;
  std::optional<FrameworkRequirement> framework;
  std::map<std::string, specs::VersionSpec> requires_;  // `requires:` canonical name -> spec
  std::map<std::string, ExternalSource> external;
  std::vector<specs::Platform> platforms;  // never empty after parsing: default host
  SystemSection system;
  SmokeOptions smoke;
  // `python-requirements:` files with the project's other Python requirements,
  // relative to the manifest (requirements.txt, pyproject.toml, environment.yml).
  std::vector<std::string> python_requirements;
  // `indexes:` Python package indexes (PEP 503 simple URLs) to resolve from, in
  // order: the first replaces pip's default index, the others are extra.
  // Empty: what pip is configured with (PIP_INDEX_URL, pip.conf), else PyPI.
  std::vector<std::string> indexes;
  // `only-binary: true`: the Python closure is wheels only (uv's `--only-binary
  // :all:`); a requirement with nothing but a source distribution is an error.
  // Off: such a requirement is locked as its sdist and built at install.
  bool only_binary = false;
  // `resolution:` source builds: their date horizon, the packages built with the framework.
  ResolutionOptions resolution;
};

// The `framework:` syntax, shared by the manifest and `envkit init --framework`:
// a name, then an optional spec in envkit syntax (`torch 2.1.*`, `torch==2.1.0`,
// `tensorflow >=2.10,<2.11`, `torch`). The name runs to the first character
// that cannot be in a package name.
struct FrameworkText {
  std::string_view name;
  std::string_view spec;  // trimmed; empty for any version
};
[[nodiscard]] FrameworkText split_framework(std::string_view written);

// The canonical framework for a written name (`PyTorch` -> `torch`). Errors
// carry no location (callers place them): an unknown name with a did-you-mean,
// or a package that is not a framework (`cuda`).
[[nodiscard]] Result<std::string> framework_name(std::string_view name);

// Parses envkit.yaml text (docs/manifest.md). `file` names the source in error
// messages (`envkit.yaml:3:12: ...`); a bad manifest is ErrorCode::input. Versions
// in the manifest use envkit's spec syntax (a bare `12.1` means `==12.1.*`).
// `name` stays empty when the manifest has none.
[[nodiscard]] Result<Manifest> parse(std::string_view text, std::string_view file);

// Reads and parses a manifest file; errors name the path as given. A manifest
// without `name:` is named after the folder it is in.
[[nodiscard]] Result<Manifest> load(const std::filesystem::path& path);

// "sha256:<64 hex>" of the manifest's content: every value that influences
// solving and locking, in a canonical form, so comments, key order, quoting and
// whitespace do not count, and specifiers count as normalized (`12.1` and
// `==12.1.*` are one). The lock records it (docs/lockfile.md). Hash what load()
// returns: it names a manifest without `name:` after its folder.
[[nodiscard]] std::string content_hash(const Manifest& manifest);

// Reads a `resolution.as-of` date (`YYYY-MM-DD`) that must lie from 2015-01-01 to
// `today` (also `YYYY-MM-DD`). Errors carry no location (the caller places them):
// not a date, a day that does not exist, before 2015, after today.
[[nodiscard]] Result<std::string> parse_as_of(std::string_view written, std::string_view today);

// Today's date in UTC, `YYYY-MM-DD`.
[[nodiscard]] std::string today_utc();

inline constexpr std::string_view kFileName = "envkit.yaml";

}  // namespace envkit::manifest
