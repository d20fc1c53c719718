#include "envkit/recipes/cuda_runfile.hpp"

#include <array>
#include <string_view>

namespace envkit::recipes {

namespace {

using specs::Version;

struct RunfileComponent {
  std::string_view name;
  Version since;  // the first CUDA whose runfile holds it as a component of its own
};

// Sorted by name, as recipes and locks write components.
const std::array<RunfileComponent, 10>& runfile_components() {
  static const std::array<RunfileComponent, 10> kComponents = {{
      {"cuda_cccl", Version::from_release({11, 0})},
      {"cuda_cudart", Version::from_release({9, 0})},
      {"cuda_cupti", Version::from_release({9, 0})},
      {"cuda_nvcc", Version::from_release({9, 0})},
      {"cuda_nvrtc", Version::from_release({9, 0})},
      {"libcublas", Version::from_release({9, 0})},
      {"libcufft", Version::from_release({9, 0})},
      {"libcurand", Version::from_release({9, 0})},
      {"libcusolver", Version::from_release({9, 0})},
      {"libcusparse", Version::from_release({9, 0})},
  }};
  return kComponents;
}

}  // namespace

std::optional<CudaRunfileEra> cuda_runfile_era(const specs::Version& cuda) {
  static const Version kFirst = Version::from_release({9, 0});
  static const Version kFirstBuilds = Version::from_release({10, 1});
  static const Version kAfterLast = Version::from_release({12});
  if (cuda < kFirst || cuda >= kAfterLast) return std::nullopt;
  CudaRunfileEra era{.layout = cuda < kFirstBuilds ? specs::Layout::cuda_runfile_nested
                                                   : specs::Layout::cuda_runfile_builds,
                     .components = {}};
  for (const auto& component : runfile_components()) {
    if (cuda >= component.since) era.components.emplace_back(component.name);
  }
  return era;
}

}  // namespace envkit::recipes
