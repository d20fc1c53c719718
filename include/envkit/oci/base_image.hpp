#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/oci/image_layout.hpp"
#include "envkit/specs/platform.hpp"

// `export --base LAYOUT:REF`: a base image's layers (taken by digest from a
// local OCI layout) under the environment's, its Env merged with the image's.
namespace envkit::oci {

struct BaseImage {
  std::string name;                  // LAYOUT:REF as given
  std::vector<Layer> layers;         // blobs in the base layout
  std::vector<std::string> env;      // its config.Env
  std::optional<std::string> glibc;  // "2.36": the glibc its layers hold, when they hold one
};

// The image `ref` of `layout` for `platform` (or its only image of that ref).
// Its layers are read once to find a libc.so.6 and its version.
[[nodiscard]] Result<BaseImage> read_base_image(const std::filesystem::path& layout,
                                                const std::string& ref, specs::Platform platform);

// The glibc version a libc file states: its name (libc-2.31.so) or its
// banner ("release version 2.36"); nullopt when neither says.
[[nodiscard]] std::optional<std::string> glibc_version_of(std::string_view name,
                                                          std::string_view content);

// Fails, naming both, when the base's glibc is older than the newest manylinux
// tag among the lock's wheels needs (a wheel of manylinux_2_28 on glibc 2.17).
[[nodiscard]] Result<void> check_base_glibc(const BaseImage& base,
                                            const lock::PlatformLock& locked);

// `base` with each variable of `ours` replacing its namesake or added after.
[[nodiscard]] std::vector<std::string> merged_env(const std::vector<std::string>& base,
                                                  const std::vector<std::string>& ours);

}  // namespace envkit::oci
