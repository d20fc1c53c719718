#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "envkit/core/result.hpp"
#include "envkit/recipes/recipe.hpp"
#include "envkit/specs/platform.hpp"
#include "envkit/specs/version.hpp"
#include "envkit/specs/version_spec.hpp"

// Importer for NVIDIA's redistributable manifests (`redistrib_<label>.json`,
// https://developer.download.nvidia.com/compute/<product>/redist/), the
// source of every CUDA >= 11.4.2 and cuDNN >= 8.5 archive in the database.
namespace envkit::recipes {

struct RedistOptions {
  // Replaces `https://developer.download.nvidia.com/compute/<product>/redist/`
  // (a mirror); one trailing slash is added when missing.
  std::optional<std::string> base_url;
};

// Turns one manifest into a recipe with one version (merge several with
// merge_into). `file` is how the caller names the manifest, for errors and for
// Recipe::sources (`<folder>/<file name>`).
//
// The product is `release_product`, else (CUDA 11.x-12.1.x manifests lack it)
// the manifest's own main component: `cuda_cudart` means cuda, `cudnn` cudnn.
// The CUDA release label is `release_label`, else the `<label>` of the file
// name `redistrib_<label>.json`.
//
// Platforms: `linux-x86_64`, `linux-sbsa` (envkit's linux-aarch64) and
// `windows-x86_64` are kept; NVIDIA's `linux-aarch64` (Jetson), `linux-ppc64le`,
// `linux-all` and `source` entries are skipped.
//
// cuda: version = release label; components = every manifest component with
// its version; one build "" with all archives, `platforms` = where cuda_cudart
// has one; default_components = the runtime, compiler and math libraries
// present (cuda_cudart, cuda_nvcc, cuda_nvrtc, cuda_cccl, cuda_cupti,
// libcublas, libcufft, libcurand, libcusolver, libcusparse, libnvjitlink).
//
// cudnn: version = the `cudnn` component's version (9.1.0.70); one build per
// CUDA major variant, id `cuda<N>`, requiring cuda `>=N,<N+1` (and zlib from
// cuDNN 8.3 on, only on Linux from cuDNN 9 on); its platforms are where the
// `cudnn` component has an archive. The variant is the `cuda<N>` key under
// each platform, or, for a manifest that lists the archive directly under the
// platform, the `_cuda<N>` in its file name (an archive without one goes to
// build "" with no cuda requirement). default_components = {cudnn} (samples and the JIT-only
// library are recorded, not installed by default).
//
// Errors are input errors naming the file: malformed JSON (file:line:column),
// no product or label, a bad sha256 or size, an unknown archive format.
[[nodiscard]] Result<Recipe> import_nvidia_redist(std::string_view json_text, std::string_view file,
                                                  const RedistOptions& options = {});

// Small facts shared by the NVIDIA importers (this one and import_cuda_facts).
namespace nvidia {

// NVIDIA's platform name as an envkit platform; nullopt for those envkit does
// not serve (`linux-aarch64` is Jetson there, `linux-ppc64le`, `linux-all`, `source`).
[[nodiscard]] std::optional<specs::Platform> envkit_platform(std::string_view nvidia_platform);

// The archive format from a file name or URL: tar.xz, tar.gz, tar.bz2, tgz,
// zip, whl, run; nullopt when it is none of these.
[[nodiscard]] std::optional<std::string> archive_format(std::string_view file_name);

// 64 hex digits, lowercased; nullopt when `text` is not a sha256.
[[nodiscard]] std::optional<std::string> normalize_sha256(std::string_view text);

// `<folder>/<file name>` of a path, the provenance string for Recipe::sources.
[[nodiscard]] std::string provenance(std::string_view file);

// cuda `>=major,<major+1`.
[[nodiscard]] specs::VersionSpec cuda_major_range(std::uint64_t major);

// Adds what every cuDNN build needs besides CUDA: zlib (any version) from
// cuDNN 8.3 on (NVIDIA's installation guides from 8.3.0 on list it). From
// cuDNN 9 on only on Linux (NVIDIA: "Linux: Add -lz ... Windows: No additional
// linker flags are required"); cuDNN 8.x keeps it on every platform, Windows
// included, where it stands for the zlibwapi envkit does not model.
void add_cudnn_runtime_requirements(Build& build, const specs::Version& cudnn_version);

}  // namespace nvidia

}  // namespace envkit::recipes
