#pragma once

#include <optional>
#include <string>

#include "envkit/core/error.hpp"
#include "envkit/core/result.hpp"
#include "envkit/project/scan.hpp"
#include "envkit/specs/version_spec.hpp"

namespace envkit::project {

// A version constraint the project states, and where.
struct Pin {
  std::string name;         // canonical: torch, tensorflow, tensorflow-gpu, jax, python
  specs::VersionSpec spec;  // PEP 440; empty: any version
  SourceLocation source;    // where it is written (the first place, when several agree)
  std::string written;      // the requirement as written there
  std::string marker;       // its PEP 508 environment marker, "" when unconditional
};

// The framework the project pins: torch (or pytorch), tensorflow, tensorflow-gpu
// or jax. Input errors: none named (hint: `--framework`), two different
// frameworks, or one framework pinned differently in two places (each listed
// with its file:line).
[[nodiscard]] Result<Pin> infer_framework(const ProjectScan& scan);

// The Python versions the project accepts (requires-python, Poetry's `python`,
// conda's `python=`): every stated constraint holds, so they are intersected.
// nullopt when the project states none.
[[nodiscard]] Result<std::optional<Pin>> infer_python(const ProjectScan& scan);

// The CUDA versions the project's conda packages fix: `cudatoolkit`,
// `cuda-version`, `pytorch-cuda`, `cuda-toolkit`, `cuda-runtime` (conda pins
// only), intersected. An exact version keeps only its series:
// `cudatoolkit=10.1.243=h6bb024c_0` -> `==10.1.*`. nullopt when none is pinned.
[[nodiscard]] Result<std::optional<Pin>> infer_cuda(const ProjectScan& scan);

}  // namespace envkit::project
