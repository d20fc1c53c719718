#pragma once

#include <filesystem>
#include <optional>
#include <string_view>

#include "envkit/elf/fatbin.hpp"

// Kernel coverage read once from an artifact (a wheel, an archive), kept in
// envkit's cache by the artifact's sha256 so that the next lock knows it
// before downloading: <cache>/kernels/<sha256>.json (docs/doctor.md).
namespace envkit::store {

// The coverage recorded for the artifact with this sha256, if any (a damaged
// record reads as none).
[[nodiscard]] std::optional<elf::KernelCoverage> cached_coverage(
    const std::filesystem::path& cache_dir, std::string_view artifact_sha256);

// Records it (written to a temporary name, renamed into place).
[[nodiscard]] Result<void> remember_coverage(const std::filesystem::path& cache_dir,
                                             std::string_view artifact_sha256,
                                             const elf::KernelCoverage& coverage);

}  // namespace envkit::store
