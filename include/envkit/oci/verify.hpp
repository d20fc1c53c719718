#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

#include "envkit/core/result.hpp"

// `envkit export --verify DIR[:REF]`: a layout checked the way a registry or a
// runtime would trust it.
namespace envkit::oci {

struct VerifyReport {
  std::size_t manifests = 0;
  std::size_t blobs = 0;  // checked (a blob shared by two manifests counts once)
};

// Every blob of the manifests of `ref` (all manifests when nullopt) against its
// descriptor's sha256 and size, and every layer decompressed against its
// config's diff_id. The first mismatch is an input error naming the blob.
[[nodiscard]] Result<VerifyReport> verify_layout(const std::filesystem::path& dir,
                                                 const std::optional<std::string>& ref);

}  // namespace envkit::oci
