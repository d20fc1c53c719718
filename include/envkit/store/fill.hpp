#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <semaphore>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/net/transport.hpp"
#include "envkit/store/cache.hpp"

// Filling a cache entry: one streaming pass from the socket through sha256
// into the extractor and onto disk in staging; the entry appears only when the
// hash matches. Tar archives stream; zips and wheels are spooled to a file
// (hashed on the way) and unpacked from it while it arrives, entry by entry from
// their local headers; their central directory, at the end, is checked last.
namespace envkit::store {

struct FillContext {
  // nullptr: offline, the cache only.
  net::Transport* transport = nullptr;
  std::vector<std::string> mirrors;
  // xz decoders running at once (each may need a 64 MiB dictionary).
  std::counting_semaphore<>* xz_slots = nullptr;
  // Where a URL that failed before the next one was tried is reported (any thread).
  std::function<void(const std::string& line)> note;
};

// How `target`'s artifact is downloaded (install and `mirror` alike): each
// mirror's copy, then its URL, at its locked size. A URL that failed is
// reported through `note`: a mirror that failed is a warning even when the
// original URL then delivers.
[[nodiscard]] net::DownloadRequest artifact_request(
    const ArtifactTarget& target, const std::vector<std::string>& mirrors,
    const std::function<void(const std::string&)>& note);

struct FillOutcome {
  std::optional<EntryRecord> record;
  std::optional<Error> error;
  // The error is that no URL could be reached: another packaging may do.
  bool unreachable = false;
  // Missing from the cache while offline.
  bool missing_offline = false;
  std::uint64_t downloaded_bytes = 0;
  // What the user should know about a source build's result (CPython's missing modules).
  std::vector<std::string> warnings;
  // The entry's use lock (Cache::use_entry), held by whoever keeps this
  // outcome: `cache clean` leaves the entry alone until it is dropped.
  std::shared_ptr<sys::FileLock> in_use;
};

// The cache entry for `target`, downloading and unpacking it unless it is
// there, or when its files changed since (a stat against their stamps: written
// through a prefix's hard link). Safe to call from several threads and
// processes for the same target; the outcome holds the entry's use lock.
[[nodiscard]] FillOutcome fill_entry(const Cache& cache, const ArtifactTarget& target,
                                     const FillContext& context);

// The URLs to try for the artifact at `url` whose sha256 is `sha256`: each
// mirror's copy (a registry's blob of that digest), then the original.
[[nodiscard]] std::vector<std::string> candidate_urls(const std::vector<std::string>& mirrors,
                                                      const std::string& url,
                                                      const std::string& sha256);
// The same for an artifact, with its `also-at` URLs last (the same file elsewhere).
[[nodiscard]] std::vector<std::string> candidate_urls(const std::vector<std::string>& mirrors,
                                                      const specs::Artifact& artifact);

}  // namespace envkit::store
