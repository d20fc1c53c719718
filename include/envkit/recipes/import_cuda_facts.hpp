#pragma once

#include <string_view>

#include "envkit/core/result.hpp"
#include "envkit/recipes/recipe.hpp"

// Importers for the CUDA and cuDNN facts that are not in NVIDIA's redist
// manifests: driver minimums, minor-version compatibility, GPU compute
// capabilities, CUDA 9.0-11.4.1 (runfiles) and cuDNN 7-8 tarballs.
//
// Two shapes, both pure (text in, values out):
// - `add_*` enrich an existing `cuda` recipe in place (every version it holds,
//   every build of it), so run them after all cuda versions are merged;
// - `import_*` return a partial recipe to overlay with recipes::merge_into.
// A full cuda recipe is therefore built as:
//   merge_into(cuda, import_nvidia_redist(...)) for each manifest;
//   merge_into(cuda, import_cuda_runfiles(...));
//   add_min_drivers, add_minor_version_compat, add_compute_capabilities.
// Each function adds its files to Recipe::sources.
namespace envkit::recipes {

// One CSV table and how the caller names it (for errors and provenance).
using CsvSource = SourceText;

// nvidia-driver-compat/cuda_toolkit_driver_versions.csv (NVIDIA release notes
// Table 3): Build.min_driver per platform, linux-x86_64 and linux-aarch64 from
// `min_driver_linux`, windows-x86_64 from `min_driver_windows` (`N/A` or empty:
// absent), the text as upstream spells it. A version takes the row of the same
// version, else the newest row of its major.minor that is not newer than it
// (9.0.176 <- 9.0.76, 10.1.243 <- 10.1.105, 12.3.2 <- 12.3.1); versions with
// neither are left alone.
[[nodiscard]] Result<void> add_min_drivers(Recipe& cuda, CsvSource driver_table);

// nvidia-driver-compat/minor_version_compat.csv: Build.min_driver_compat from
// the `<major>.x` rows (`exact_min_linux` / `exact_min_windows`) for every
// version of that major; minor-version compatibility starts with CUDA 11, so
// rows for earlier releases are not used.
[[nodiscard]] Result<void> add_minor_version_compat(Recipe& cuda, CsvSource compat_table);

// gpu-arch-and-compiler-support/nixpkgs_cuda_capabilities_current.csv:
// Build.cuda_arch = the capabilities whose [min_cuda_major_minor,
// max_cuda_major_minor] holds the version's major.minor (max inclusive, as the
// data means it; empty max = still supported). Jetson rows and arch-/family-
// specific ones (9.0a, 10.0f) are skipped. The table starts at CUDA 10.0, so
// 9.x versions get no list (unknown, not "none").
[[nodiscard]] Result<void> add_compute_capabilities(Recipe& cuda, CsvSource capabilities);

// CUDA versions before the redist manifests (9.0 <= version < 11.4.2) as a
// partial `cuda` recipe: every Table 3 row in that range, plus the runfile
// installers of cuda-runfile-installers/cuda_runfiles.csv (10.0 on) and
// legacy-cuda-cudnn-nixpkgs-old/cuda_runfiles_6_to_10_nixpkgs_old.csv (9.x). One
// build "" per version; where there is a runfile it is its artifact (kind runfile,
// format run, linux-x86_64, component `cuda`) and the build's platform, with the
// layout and components of its era (cuda_runfile_era) and its patch runfiles in
// order: the table's `runfile-patch` rows of the same nixpkgs_version, then CUDA
// 9.0's patches 2-4, which the table lacks, from nixpkgs (cited in the .cpp and
// in the recipe's sources).
// A version is spelled as its runfile spells it: a Table 3 row without a
// runfile of its own is paired with the one runfile of its major.minor that
// has no row of its own (9.0.76 is the 9.0.176 runfile, 10.1.105 the 10.1.243
// one), otherwise it stays a version of its own without artifacts (9.2.88).
[[nodiscard]] Result<Recipe> import_cuda_runfiles(CsvSource driver_table, CsvSource runfiles,
                                                  CsvSource legacy_runfiles);

// Legacy cuDNN as a partial `cudnn` recipe from cudnn-legacy-tarballs/
// cudnn_releases_nixpkgs.csv (7.4.2 ... 9.8.0, min/max CUDA per tarball) and
// legacy-cuda-cudnn-nixpkgs-old/cudnn_4_to_7_tarballs_nixpkgs_old.csv (only
// cuDNN >= 7, only builds for CUDA >= 9.0, the CUDA envkit knows).
//
// Versions missing from `redist_cudnn` (the merged redist cudnn recipe) get one
// build per CUDA range, id `cuda<MIN>` when the range is one minor (`cuda9.0`)
// and `cuda<MIN>-<MAX>` otherwise (`cuda11.0-11.7`), requiring cuda
// `>=MIN,<MAX+0.1` (max 12.6 -> `<12.7`) and zlib from 8.3 on; `.tgz` archives
// are layout cudnn_legacy, redist-style `.tar.xz` ones nvidia_redist. A
// version is spelled with the four parts of its file name where the table
// gives fewer (7.3.0 -> 7.3.0.29, from cudnn-9.0-linux-x64-v7.3.0.29.tgz).
//
// Versions in `redist_cudnn` keep NVIDIA's artifacts and `cuda<N>` builds: the
// partial recipe only raises the lower bound of an existing build's cuda
// requirement to nixpkgs' minCudaVersion (`cuda10` of 8.5.0.96 -> `>=10.2,<11`,
// `cuda11` of 9.x -> `>=11.8,<12`). The upper bound stays at the next major:
// nixpkgs' maxCudaVersion is the newest CUDA when its table was written, not a
// limit NVIDIA states, and a cuda<N> build serves the whole major.
[[nodiscard]] Result<Recipe> import_legacy_cudnn(CsvSource releases, CsvSource old_tarballs,
                                                 const Recipe& redist_cudnn);

}  // namespace envkit::recipes
