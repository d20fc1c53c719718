#pragma once

#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/recipes/import_pypi.hpp"
#include "envkit/recipes/recipe.hpp"

// CUDA and cuDNN releases newer than the recipe database, from NVIDIA's wheels on a
// package index (the live overlay's, live_index.hpp). NVIDIA publishes every CUDA
// release as `cuda-toolkit` (a metadata-only wheel whose extras pin each component's
// wheel: `nvidia-cuda-runtime==13.2.86.*; extra == 'cudart'`) and every cuDNN as
// `nvidia-cudnn-cuNN`, often weeks before the redist manifests the database is built
// from reach envkit. What no index says is taken from the database's newest release of
// the same family, and a note says so: a CUDA gets its family's minimum driver
// (minor-version compatibility, CUDA 11 on) and architecture list, no native driver;
// a cuDNN build gets the requirements of the newest build of the same id.
namespace envkit::recipes {

struct PypiCudaReleases {
  Recipe cuda;   // the new versions: components, family driver minimum, wheel artifacts
  Recipe cudnn;  // the new versions: one build per cuNN project, wheel artifacts
  std::vector<std::string> notes;     // what was taken from the database, per version
  std::vector<std::string> problems;  // releases left out, and why
};

// `cuda` and `cudnn` are the database's merged facts (their newest versions and the CUDA
// default components decide what is new and what is read). Asks the index for
// `cuda-toolkit`, `nvidia-cudnn-cu11/12/13`, the METADATA of each new toolkit release and
// the component projects of the new CUDA releases. Releases `options.is_known` names are
// left alone.
[[nodiscard]] Result<PypiCudaReleases> import_pypi_cuda_releases(const Recipe& cuda,
                                                                 const Recipe& cudnn,
                                                                 const PypiImportOptions& options);

// The component version a `cuda-toolkit` requirement pins: `==13.2.86.*` and `>=13.2.86,<14`
// -> 13.2.86; nullopt for a specifier that names no lowest version.
[[nodiscard]] std::optional<std::string> pinned_component_version(std::string_view spec);

}  // namespace envkit::recipes
