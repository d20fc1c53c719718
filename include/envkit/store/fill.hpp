#pragma once

#include <cstdint>
#include <filesystem>
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

// How a source artifact (zlib, CPython's tarball) becomes a cache entry: the
// build module's (build::ToolchainBuilder), given by whoever fills. The store
// only downloads, unpacks and commits; what a build needs is the builder's.
class SourceBuilder {
 public:
  virtual ~SourceBuilder() = default;
  // What decides the built bytes besides the sources (the compiler's path and
  // version): part of the entry's id, so another compiler builds another entry.
  // An error when the machine cannot build at all (no compiler).
  [[nodiscard]] virtual Result<std::string> identity(const std::string& label) const = 0;
  // What the build runs with, for the progress note ("gcc (Debian 12.2.0-14) 12.2.0").
  [[nodiscard]] virtual std::string description() const = 0;
  // Whether `build_system`'s tools are here, asked before anything is downloaded.
  [[nodiscard]] virtual Result<void> check_tools(specs::BuildSystem build_system,
                                                 const std::string& label) const = 0;
  struct Request {
    std::string label;                   // "zlib 1.3.1"
    std::filesystem::path source;        // the unpacked tree
    std::filesystem::path work;          // private scratch
    std::filesystem::path prefix;        // where the files will live: the entry's folder
    std::filesystem::path install_root;  // where they are put now: the staging folder
    std::filesystem::path log;           // the build log
    std::optional<specs::BuildSystem> build_system;  // nullopt: detect
  };
  // Builds and installs into `request.install_root`; answers what the user
  // should know of the result (CPython's missing modules).
  [[nodiscard]] virtual Result<std::vector<std::string>> build(const Request& request) const = 0;
};

struct FillContext {
  // nullptr: offline, the cache only.
  net::Transport* transport = nullptr;
  std::vector<std::string> mirrors;
  // xz decoders running at once (each may need a 64 MiB dictionary).
  std::counting_semaphore<>* xz_slots = nullptr;
  // Builds source artifacts; nullptr: a source artifact cannot be filled (an error).
  const SourceBuilder* source_builder = nullptr;
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
