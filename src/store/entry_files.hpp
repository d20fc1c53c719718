#pragma once

// Internal to store: a cache entry's files as an unpack left them, turned into
// the entry's records and made read-only before the entry is committed.

#include <filesystem>
#include <vector>

#include "envkit/archive/extract.hpp"
#include "envkit/store/records.hpp"

namespace envkit::store {

// What was unpacked, one record per path (a later tar entry replaces an earlier one).
[[nodiscard]] std::vector<FileRecord> records_of(
    const std::vector<archive::ExtractedEntry>& entries);

// Read-only from now on: prefixes hard-link these files, and a prefix must
// not be able to change the cache's copy by writing to its own. Only write
// bits go: a file the archive keeps from others (0600, 0750) stays so.
void make_read_only(const std::filesystem::path& root, const std::vector<FileRecord>& files);

}  // namespace envkit::store
