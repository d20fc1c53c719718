#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/project/requirement.hpp"
#include "envkit/solve/solve.hpp"
#include "envkit/specs/platform.hpp"

// Lines of a project's requirement files that name a CUDA or cuDNN (`jax[cuda12]`,
// `torch==2.1.0+cu118`, `cupy-cuda11x`, `nvidia-cudnn-cu12==8.9.*`) as requirements
// of the solve, each naming its line (docs/solver.md, "Requirements that name a CUDA").
// They hold whether or not the Python closure runs: uv would install what the line
// says, so the CUDA stack must be the one it was built for.
namespace envkit::locking {

// The origin of these requirements: the envkit.yaml key that lists their files.
inline constexpr std::string_view kRequirementFileOrigin = "python-requirements";

// What one requirement says of CUDA and cuDNN: requirements on `cuda` and `cudnn`
// (none when it names neither), with origin kRequirementFileOrigin and `written_at`
// its location (`requirements.txt:3`) and text. `platforms` is left empty (every
// platform). An error names the line whose version constraint cannot be read.
[[nodiscard]] Result<std::vector<solve::Requirement>> cuda_requirements_of(
    const project::Requirement& requirement);

// Every requirement of `files` (envkit.yaml `python-requirements`, relative to
// `directory`; requirements.txt with its `-r` includes, pyproject.toml,
// setup.py, setup.cfg, environment.yml's `pip:` list), read with the project
// module's parsers. A line whose environment marker is false on every platform
// of `platforms` is passed over; one false on some holds on the others.
struct FileCudaRequirements {
  std::vector<solve::Requirement> requirements;
  // What was passed over, each naming file:line:column: a file or version
  // constraint envkit cannot read (uv, which resolves the closure, judges it).
  std::vector<std::string> warnings;
};
[[nodiscard]] FileCudaRequirements cuda_requirements_of_files(
    const std::filesystem::path& directory, const std::vector<std::string>& files,
    std::span<const specs::Platform> platforms);

}  // namespace envkit::locking
