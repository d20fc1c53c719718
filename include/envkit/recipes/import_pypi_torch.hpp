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
// pins of each release's default wheel (its METADATA: `Requires-Dist:
// nvidia-cudnn-cu12==8.9.2.26`). A release whose wheel pins a CUDA the tables list
// no build of (2.14.1: CUDA 13.0, the tables say cu126), or that is newer than the
// tables (2.15.0), gets a build made from its wheels. The result is an overlay for
// recipes/pypi/torch.yaml, or the live overlay's torch (live_index.hpp).
namespace envkit::recipes {

// The NVIDIA pins of one wheel's METADATA, as written (nullopt: not pinned).
struct TorchWheelPins {
  std::optional<std::string> cuda_runtime;  // -cuXX, -runtime, cuda-toolkit[cudart]
  std::optional<std::string> cudnn;         // nvidia-cudnn-cuXX
  std::optional<std::string> cublas;        // nvidia-cublas-cuXX / nvidia-cublas
  friend bool operator==(const TorchWheelPins&, const TorchWheelPins&) = default;
};

// Reads the `Requires-Dist:` lines of a METADATA text that can apply on `platform`
// (a marker false there, `platform_system == "Linux"` in a Windows wheel, drops its
// line; one that cannot be decided, `extra == ...`, keeps it), both `name==V` and
// `name (==V)`; only exact pins count.
[[nodiscard]] TorchWheelPins parse_torch_wheel_pins(
    std::string_view metadata, specs::Platform platform = specs::Platform::linux_x86_64);

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
  bool from_wheels = false;             // that build was made from the wheels: the tables have none
};

struct PypiTorchImport {
  // The overlay: the patch versions, with `replaces` naming the minors they refine.
  Recipe torch;
  std::vector<TorchPatch> patches;
  std::size_t metadata_fetched = 0;  // .metadata files asked for
  std::size_t python_ranges = 0;     // releases given the Python range of their wheels
  // Releases left out, one sentence each: METADATA that contradicts its file name, a
  // platform whose wheel pins another CUDA major.
  std::vector<std::string> problems;
};

// Releases before 1.12, which the tables give no Python range, get the range of their
// wheels' CPython tags (1.9.1: cp36 … cp39 -> >=3.6,<3.10).
// Asks the index for the `torch` page once and for the METADATA of one wheel per patch
// release (a manylinux x86_64 CPython wheel: advertised metadata first, then the newest
// CPython; PEP 658, else read out of the wheel), and of its aarch64 twin for a build made
// from the wheels. Releases `options.is_known` names are left alone.
[[nodiscard]] Result<PypiTorchImport> import_pypi_torch(const Recipe& torch,
                                                        const PypiImportOptions& options);

}  // namespace envkit::recipes
