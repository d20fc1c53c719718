#pragma once

#include <optional>
#include <string>
#include <vector>

#include "envkit/specs/artifact.hpp"
#include "envkit/specs/version.hpp"

// What a CUDA release's NVIDIA runfile installer holds, by the era of its payload
// (docs/recipes.md, "Runfiles"). The importer writes it onto runfile artifacts,
// `recipes check` holds the database to it.
namespace envkit::recipes {

struct CudaRunfileEra {
  specs::Layout layout;  // cuda_runfile_nested (9.x-10.0) or cuda_runfile_builds (10.1-11.x)
  // The components inside that envkit places, named like the redist components,
  // sorted by name.
  std::vector<std::string> components;
};

// The era of `cuda`'s runfile; nullopt outside 9.0 <= cuda < 12 (older CUDA is not in
// the database, newer has redist archives and the rule is not stated for it).
//
// Layout, as nixpkgs' runfile builder unpacks them (NixOS/nixpkgs,
// pkgs/development/cuda-modules/cudatoolkit/default.nix at
// b8b61fe8382c9d9a748d5d248e1c399987608eb4, `unpackPhase`/`installPhase`): before 10.1
// the outer runfile holds `run_files/cuda-linux*.run`, a runfile of its own holding the
// toolkit tree; from 10.1 the payload is `builds/`: `builds/cuda-toolkit/` (10.1, 10.2),
// one folder per component (`builds/cuda_nvcc`, `builds/cuda_cupti`, ...) from 11.0.
//
// Components: the runtime, nvcc, NVRTC, CUPTI, cuBLAS, cuFFT, cuRAND, cuSOLVER and
// cuSPARSE in every era (the toolkit tree before 11.0; cuBLAS apart in 10.1/10.2);
// cuda_cccl only from 11.0, before which Thrust/CUB are headers of the toolkit's
// include/. The driver, samples, docs and Nsight are never components.
[[nodiscard]] std::optional<CudaRunfileEra> cuda_runfile_era(const specs::Version& cuda);

}  // namespace envkit::recipes
