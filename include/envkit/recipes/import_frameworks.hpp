#pragma once

#include <string_view>

#include "envkit/core/result.hpp"
#include "envkit/recipes/recipe.hpp"
#include "envkit/specs/version.hpp"
#include "envkit/specs/version_spec.hpp"

// Importers for the deep-learning frameworks (torch, tensorflow, tensorflow-gpu)
// from the compatibility tables their projects publish. The tables give no
// wheel URLs or hashes, so the builds carry requirements and facts but no
// artifacts (docs/recipes.md).
namespace envkit::recipes {

// The text of one upstream file and the name errors use for it.
using UpstreamText = SourceText;

// The CUDA versions a build made with CUDA `tested` works with. From CUDA 11 on
// NVIDIA keeps minor-version compatibility within a major: `>=11.8,<12`. Before
// 11 each minor was its own ABI, so the exact major.minor: `==10.2.*` (`9` reads
// as `==9.0.*`).
[[nodiscard]] specs::VersionSpec cuda_series_spec(const specs::Version& tested);

// The cuDNN versions a build made with cuDNN `tested` works with: the same
// major, at least the tested major.minor (`8.7.0.84` -> `>=8.7,<9`, `7` -> `>=7,<8`).
[[nodiscard]] specs::VersionSpec cudnn_series_spec(const specs::Version& tested);

// Reads a Python support range as the framework tables write it:
//   ">=3.8, <=3.11"                      -> >=3.8,<3.12
//   ">=3.9, <=3.13, (3.13t experimental)" -> >=3.9,<3.14 (free-threaded note dropped)
//   ">=3.10, <=(3.14, 3.14t experimental)" -> >=3.10,<3.14 (experimental 3.14 excluded)
//   "3.7-3.10" -> >=3.7,<3.11;  "2.7, 3.3-3.6" -> >=3.3,<3.7 (Python 2 dropped);  "3.5" ->
//   >=3.5,<3.6
// Experimental versions are never included. The error says which part it could not read.
[[nodiscard]] Result<specs::VersionSpec> parse_python_range(std::string_view text);

// The PyTorch tables: RELEASE.md's Release Compatibility Matrix (as CSV), the
// "Previous PyTorch Versions" wheel variants, and the PyTorch CUDA arch matrix.
struct TorchTables {
  UpstreamText release_matrix;     // pytorch_release_compat_matrix.csv
  UpstreamText previous_versions;  // previous_versions_wheel_cuda_variants.csv
  UpstreamText arch_matrix;        // pytorch_cuda_arch_support_matrix.csv
};

// Recipe `torch`: patch versions where the tables name them (1.0.0 … 2.0.1),
// otherwise versions keyed by the minor (`2.1`). One build per CUDA variant
// (`cu118`); a platform whose arch list differs gets its own build (`cu126-aarch64`).
[[nodiscard]] Result<Recipe> import_torch(const TorchTables& tables);

// TensorFlow's "Tested build configurations" GPU tables (as CSV).
struct TensorflowTables {
  UpstreamText linux_gpu;    // tensorflow_tested_linux_gpu.csv
  UpstreamText windows_gpu;  // tensorflow_tested_windows_gpu.csv
};

struct TensorflowRecipes {
  Recipe tensorflow;      // rows `tensorflow-2.x.y`
  Recipe tensorflow_gpu;  // rows `tensorflow_gpu-1.x.y` / `tensorflow_gpu-2.x.y`
};

// Versions as written (2.10.0); one build per CUDA `cuda<major.minor>` listing
// the platforms whose table has the row. When the Linux and Windows rows of a
// version disagree (Python range, cuDNN), the Windows one becomes its own build
// `cuda<major.minor>-windows`.
[[nodiscard]] Result<TensorflowRecipes> import_tensorflow(const TensorflowTables& tables);

}  // namespace envkit::recipes
