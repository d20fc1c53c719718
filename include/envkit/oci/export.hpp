#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/oci/base_image.hpp"
#include "envkit/oci/layer_encoder.hpp"
#include "envkit/oci/layer_plan.hpp"
#include "envkit/store/records.hpp"

// `envkit export --oci DIR`: an installed prefix as an OCI image (docs/export.md).
namespace envkit::oci {

struct ExportOptions {
  std::filesystem::path out;  // the layout folder
  std::string ref = "latest";
  Compression compression = Compression::gzip;
  std::filesystem::path cache_root;  // envkit's cache: layers in <cache>/oci/v1/layers
  std::string lock_text;             // envkit.lock as the project has it
  const lock::Lockfile* lockfile = nullptr;
  int jobs = 1;
  std::optional<std::filesystem::path> archive;  // also the layout as one tar (oci-archive)
  std::optional<BaseImage> base;                 // its layers first, its Env merged
  std::function<void(const std::string&)> note;
  std::map<std::string, std::string> labels;  // more image labels (the smoke test's record)
};

struct ExportReport {
  std::string manifest_digest;
  std::size_t layers = 0;
  std::size_t built = 0;    // compressed now
  std::size_t cached = 0;   // taken from the layer cache
  std::uint64_t bytes = 0;  // of the image's layers, compressed
};

// The image's config.Env: the prefix's activation at /opt/envkit over the
// usual system PATH, and what the NVIDIA container toolkit, enroot and
// `apptainer --nv` read (NVIDIA_VISIBLE_DEVICES, NVIDIA_DRIVER_CAPABILITIES,
// NVIDIA_REQUIRE_CUDA from the lock's CUDA and driver floor).
// `base_env` is the base image's (none: a bare image, the usual system PATH).
[[nodiscard]] std::vector<std::string> image_env(const lock::Lockfile& lockfile,
                                                 specs::Platform platform, bool has_python,
                                                 const std::vector<std::string>& base_env = {});

// "cuda>=12.4 driver>=525.60.13": the lock's CUDA release and, when the lock
// states a driver floor (">=X"), that floor; empty without a locked CUDA.
[[nodiscard]] std::string nvidia_require_cuda(const lock::Lockfile& lockfile,
                                              specs::Platform platform);

// Exports the generation `paths.generation` (whose state is `state`).
[[nodiscard]] Result<ExportReport> export_image(const PrefixPaths& paths,
                                                const store::PrefixState& state,
                                                const ExportOptions& options);

}  // namespace envkit::oci
