#pragma once

// A wheel file on this machine (one built from an sdist,
// one of ensurepip's) unpacked into a cache entry, as a downloaded wheel's
// entry is, so that envkit's wheel installer places its files.

#include <filesystem>
#include <string>

#include "envkit/core/result.hpp"
#include "envkit/store/cache.hpp"
#include "envkit/store/records.hpp"

namespace envkit::store {

// Unpacks `wheel` into a fresh staging folder of entry `record.id` and commits
// it with `record` (its files filled in, and its sha256 where empty). The caller
// holds the entry's lock (Cache::lock_entry) and found no entry.
[[nodiscard]] Result<EntryRecord> commit_unpacked_wheel(const Cache& cache,
                                                        const std::filesystem::path& wheel,
                                                        EntryRecord record);

// The entry of the local wheel file `wheel` of package `name`: the one a
// download of the same bytes gets (Cache::entry_id of a closure wheel), found
// in the cache or unpacked there.
[[nodiscard]] Result<EntryRecord> local_wheel_entry(const Cache& cache,
                                                    const std::filesystem::path& wheel,
                                                    const std::string& name);

}  // namespace envkit::store
