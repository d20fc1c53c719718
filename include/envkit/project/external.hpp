#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "envkit/core/result.hpp"
#include "envkit/manifest/manifest.hpp"
#include "envkit/specs/version.hpp"

// The packages a machine provides instead of envkit (the manifest's `external:`,
// docs/manifest.md), as versions the solver can use.
namespace envkit::project {

// The version of a package the machine provides, and where it was read
// (`python3 on PATH (/usr/bin/python3)`, `/opt/py/bin/python3`, `given in envkit.yaml`).
struct ExternalVersion {
  specs::Version version;
  std::string description;
};

// The version of `package` (canonical name) that `source` stands for:
//   a version    as given, for any package;
//   `system`     detected on the host: python `python3 --version` and cuda
//                `nvcc --version`, each found on PATH;
//   a path       the tool at that path, relative paths relative to `manifest_dir`:
//                python: the file itself if it is a file, else DIR/bin/python3;
//                cuda: the file itself (an nvcc) if it is a file, else DIR/bin/nvcc,
//                else DIR/version.json's "cuda" "version".
// nvcc's version is its `V` number (`release 13.0, V13.0.88` gives 13.0.88).
// Errors: a package envkit cannot detect (only python and cuda; input), a tool
// that is not found or fails (naming what was looked for) or whose output
// envkit does not understand (quoting it); each hints at giving the version instead.
[[nodiscard]] Result<ExternalVersion> resolve_external(std::string_view package,
                                                       const manifest::ExternalSource& source,
                                                       const std::filesystem::path& manifest_dir);

// The version in `python --version` output (stdout, or stderr for Python 2):
// `Python 3.6.9`, `Python 3.12.0rc1`; a trailing `+` (a build from a
// development branch) is dropped.
[[nodiscard]] Result<specs::Version> parse_python_version(std::string_view output);

// The version in `nvcc --version` output, from its
// `Cuda compilation tools, release 13.0, V13.0.88` line: 13.0.88.
[[nodiscard]] Result<specs::Version> parse_nvcc_version(std::string_view output);

// The toolkit version in a CUDA installation's version.json: `"cuda": {"version": "12.4.1"}`.
// `file` names it in errors.
[[nodiscard]] Result<specs::Version> parse_cuda_version_json(std::string_view text,
                                                             std::string_view file);

}  // namespace envkit::project
