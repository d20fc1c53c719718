#pragma once

// Internal to archive: a zip on disk (wheels above all) unpacked on several
// threads. Each thread has its own libarchive reader on the same file and
// unpacks the entries given to it, so a wheel's large libraries inflate side
// by side; everything else (checks, limits, the writer) is the one Extractor.

#include <filesystem>
#include <optional>
#include <vector>

#include "envkit/archive/extract.hpp"

namespace envkit::archive::detail {

// Which entries (by index in archive order) each thread unpacks.
using ZipThreadPlan = std::vector<std::vector<bool>>;

// A plan for `options.threads` threads, or nullopt when the archive is better
// (or only correctly) unpacked by one: not a zip, small, holding links, or
// two entries landing on the same path (archive order must decide those).
// An archive this cannot read is also left to the one-thread path, which
// names the damage.
[[nodiscard]] std::optional<ZipThreadPlan> plan_zip_threads(const std::filesystem::path& archive,
                                                            const ExtractOptions& options);

// Unpacks the archive as planned. The result is the one a single thread would
// give: entries in archive order, each path once.
[[nodiscard]] Result<ExtractResult> extract_zip_parallel(const std::filesystem::path& archive,
                                                         const std::filesystem::path& destination,
                                                         const ExtractOptions& options,
                                                         const ZipThreadPlan& plan);

}  // namespace envkit::archive::detail
