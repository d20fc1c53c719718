#pragma once

#include <filesystem>

#include "envkit/core/result.hpp"

// `--archive FILE.tar`: an OCI layout as one tar (an "oci-archive", as
// Apptainer and skopeo read it), deterministic like the layers.
namespace envkit::oci {

// Writes `layout` (oci-layout, index.json, blobs/sha256/*) into `archive`
// through a temporary file renamed over it.
[[nodiscard]] Result<void> write_layout_archive(const std::filesystem::path& layout,
                                                const std::filesystem::path& archive);

}  // namespace envkit::oci
