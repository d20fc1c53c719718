#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/recipes/import_pypi.hpp"
#include "envkit/recipes/recipe.hpp"

// Refines the torch versions the compatibility tables key by minor (2.1) into
// the patch releases PyPI has (2.1.0, 2.1.1, 2.1.2), reading the CUDA and cuDNN
// pins of each release's default wheel (its PEP 658 metadata: `Requires-Dist:
// nvidia-cudnn-cu12==8.9.2.26`). The result is an overlay for recipes/pypi/torch.yaml.
namespace envkit::recipes {

// The NVIDIA pins of one wheel's METADATA, as written (nullopt: not pinned).
struct TorchWheelPins {
  std::optional<std::string> cuda_runtime;  // -cuXX, -runtime, cuda-toolkit[cudart]
  std::optional<std::string> cudnn;         // nvidia-cudnn-cuXX
  std::optional<std::string> cublas;        // nvidia-cublas-cuXX / nvidia-cublas
  friend bool operator==(const TorchWheelPins&, const TorchWheelPins&) = default;
};

// Reads the `Requires-Dist:` lines of a METADATA text; markers after `;` are
// ignored, both `name==V` and `name (==V)` are read, and only exact pins count.
[[nodiscard]] TorchWheelPins parse_torch_wheel_pins(std::string_view metadata);

// The torch build id of a CUDA runtime version (`12.1.105` -> `cu121`).
[[nodiscard]] std::optional<std::string> cuda_build_id(std::string_view cuda_runtime);

// What one patch release was refined from.
struct TorchPatch {
  std::string version;                  // 2.1.2
  std::string minor;                    // 2.1, the version it replaces
  std::string wheel;                    // the wheel whose metadata was asked for; empty when none
  bool metadata_read = false;           // false when the index serves no metadata of `wheel`
  TorchWheelPins pins;                  // empty when no metadata was read or it pins nothing
  std::optional<std::string> build_id;  // the build given `tested` (cu121), when it exists
};

struct PypiTorchImport {
  // The overlay: the patch versions, with `replaces` naming the minors they refine.
  Recipe torch;
  std::vector<TorchPatch> patches;
  std::size_t metadata_fetched = 0;  // .metadata files asked for
  std::size_t python_ranges = 0;     // releases given the Python range of their wheels
};

// Releases before 1.12, which the tables give no Python range, get the range of their
// wheels' CPython tags (1.9.1: cp36 … cp39 -> >=3.6,<3.10).
// Asks the index for the `torch` page once and for one `.metadata` file per patch release
// (of a manylinux x86_64 CPython wheel: advertised metadata first, then the newest CPython).
[[nodiscard]] Result<PypiTorchImport> import_pypi_torch(const Recipe& torch,
                                                        const PypiImportOptions& options);

}  // namespace envkit::recipes
