#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/recipes/recipe.hpp"

namespace envkit::recipes {

// What running every offline importer gives.
struct UpstreamImport {
  std::vector<Recipe> recipes;
  // Builds left out because a requirement names versions the data lacks, e.g.
  // "torch 2.14 cu132: needs cuda `<14,>=13.2`" (no manifest here describes
  // CUDA 13.2): a build that can never be chosen is not kept as a false promise.
  std::vector<std::string> left_out;
};

// Runs every offline importer over a folder laid out like envkit's upstream
// metadata collection (nvidia-redist-cuda/, nvidia-driver-compat/, pytorch/,
// ...; docs/recipes.md lists the files) and returns the whole database: cuda,
// cudnn, python, tensorflow, tensorflow-gpu, torch, zlib. Files are named by
// their path inside `upstream_dir`, so the result does not depend on where the
// folder is. Wheels are not included: they come from `import pypi-nvidia`.
[[nodiscard]] Result<UpstreamImport> import_upstream(const std::filesystem::path& upstream_dir);
// The same over several folders: each file is read from the first that has it
// (scripts/regen-recipes: ../shared/upstream, then envkit's own upstream/, which holds
// pytorch-build-scripts/torch_cuda_arch_list.csv).
[[nodiscard]] Result<UpstreamImport> import_upstream(
    const std::vector<std::filesystem::path>& upstream_dirs);

}  // namespace envkit::recipes
