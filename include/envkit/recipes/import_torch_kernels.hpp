#pragma once

#include "envkit/core/result.hpp"
#include "envkit/recipes/recipe.hpp"

// The GPU architectures PyTorch's own wheel build scripts compile torch for
// (TORCH_CUDA_ARCH_LIST per release line and CUDA variant), as kernel facts of
// torch's builds: which GPUs a build has SASS for, and which PTX it carries
// (docs/solver.md, "Kernel architectures"; docs/recipes.md).
namespace envkit::recipes {

// Reads `torch,cuda,platform,torch_cuda_arch_list,...` rows (upstream/pytorch-build-scripts/
// torch_cuda_arch_list.csv) and sets `cuda_arch` (SASS) and `cuda_ptx` (`+PTX` entries) of
// the build `cu<major><minor>` of every version of `torch` the row's `torch` names: a
// release line (`2.8`: 2.8 and every 2.8.x) or one release (`1.8.2`). A row's `method` says
// where its list came from: `build-script` (the script's TORCH_CUDA_ARCH_LIST) or `fatbin`
// (read from a PyPI wheel's libtorch_cuda.so; `source_commit` is the wheel's sha256). Either
// is what made or is in the wheels, so it replaces the support matrix's list. A row naming no
// build of the database, a platform other than linux-x86_64, an unreadable list, an unknown
// method or a list differing from another row's for the same build is an input error at its
// line.
[[nodiscard]] Result<void> add_torch_kernel_archs(Recipe& torch, const SourceText& arch_lists);

}  // namespace envkit::recipes
