#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/python/closure.hpp"
#include "envkit/specs/version.hpp"

// The build environments of source distributions a resolution builds for their
// metadata (docs/python.md, "Source builds in the project's era"): build tools as
// of the project's date horizon, the framework for packages whose build imports it.
namespace envkit::python {

// The build tools whose releases the date horizon caps (PEP 503 names): the ones an
// old setup.py meets first (`import pkg_resources`, `bdist_wheel`, Cython 3's
// changed defaults). Binary build dependencies (numpy) are left to uv: their old
// releases have no wheels for newer Pythons.
inline constexpr std::string_view kBuildTools[] = {"cython", "setuptools", "wheel"};

// Packages known to import the framework in their setup.py: their build gets the
// locked framework whenever their build fails, whatever the failure says.
inline constexpr std::string_view kFrameworkBuilds[] = {
    "apex",          "detectron2",        "flash-attn",    "mmcv",
    "mmcv-full",     "pytorch3d",         "torch-scatter", "torch-sparse",
    "torch-cluster", "torch-spline-conv", "xformers"};

// The day CPython `python`'s minor version was released ("2019-10-14" for 3.8);
// nullopt for a minor envkit does not know (older than 3.5, newer than 3.14).
[[nodiscard]] std::optional<std::string> python_release_day(const specs::Version& python);

// The day build tools are taken as of for an interpreter of `python`: the era's
// horizon, but never before that Python was released (setuptools 41 cannot build on
// 3.12, whose standard library has no distutils). nullopt: today's tools (a Python
// newer than envkit knows).
[[nodiscard]] std::optional<std::string> build_day(const BuildEra& era,
                                                   const specs::Version& python);

// The lines of uv's `--build-constraints` file for an interpreter of `python`: each
// build tool capped at its newest release uploaded on or before build_day()
// (`setuptools<=42.0.2`), sorted; a tool with no release by then is left out.
[[nodiscard]] std::vector<std::string> build_constraints(const BuildEra& era,
                                                         const specs::Version& python);

// The module a framework's distribution is imported as: torch -> torch,
// tensorflow-gpu -> tensorflow, jax -> jax; "" for another package.
[[nodiscard]] std::string framework_module(std::string_view framework);

// uv.toml text giving each of `packages` the requirement `framework` (the locked
// `torch==2.1.2`) as an extra build dependency: `[extra-build-dependencies]`.
[[nodiscard]] std::string build_config_toml(std::string_view framework,
                                            const std::vector<std::string>& packages);

// What uv said about a source build that failed: the package (`albumentations`, PEP 503)
// and its version, from `Failed to build `albumentations==0.4.3``; nullopt when no
// build failed.
struct FailedBuild {
  std::string name;
  std::string version;
};
[[nodiscard]] std::optional<FailedBuild> failed_build(std::string_view uv_output);

// Whether a build's output says it could not import `module` (`No module named 'torch'`).
[[nodiscard]] bool lacks_module(std::string_view output, std::string_view module);

}  // namespace envkit::python
