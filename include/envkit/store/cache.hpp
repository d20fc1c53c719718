#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/specs/artifact.hpp"
#include "envkit/store/records.hpp"
#include "envkit/sys/file_lock.hpp"

// The content-addressed cache of unpacked artifacts (docs/how-it-works.md):
//   <cache>/store/v1/entries/<id>/       the artifact unpacked in prefix layout (read-only files)
//   <cache>/store/v1/entries/<id>.json   its record, renamed in last (the commit point): an
//                                        entry without it is incomplete, and cleaned up
//   <cache>/store/v1/locks/<id>.lock     held while an entry is made or removed
//   <cache>/store/v1/locks/<id>.use      held (shared) by each install linking from the entry
//   <cache>/store/v1/tmp/                entries being unpacked, wheels being downloaded
//   <cache>/store/v1/prefixes/<hash>     the prefixes that use the cache (for `cache prune`)
//   <cache>/store/v1/logs/<id>.log       how an entry was built (from source, or an sdist's wheel)
// Several envkit processes share it safely: an entry is made under its lock
// and appears by a rename.
namespace envkit::store {

// An artifact of the lock and the package it belongs to.
struct ArtifactTarget {
  std::string package;
  std::string version;
  specs::Artifact artifact;

  // "cuda_cudart 12.4.127 (wheel)": how progress and messages name it.
  [[nodiscard]] std::string label() const;
  // The download of the artifact's patch `index` (0-based): NVIDIA's patch
  // runfile as an artifact of its own, named `<component> patch <index+1>`.
  [[nodiscard]] ArtifactTarget patch(std::size_t index) const;
};

struct CacheInfo {
  std::filesystem::path root;
  std::size_t entries = 0;
  std::uint64_t bytes = 0;  // unpacked
  // Left by a run that died or hit a full disk before its commit point: entries
  // without a record, staging, half-written records (no envkit is making them).
  std::size_t incomplete = 0;
  std::vector<std::filesystem::path> prefixes;
};

struct CleanReport {
  std::size_t removed = 0;
  std::uint64_t bytes = 0;
  std::size_t in_use = 0;      // made or linked from by a running envkit, left alone
  std::size_t incomplete = 0;  // leftovers of runs that died before their commit point, removed
};

// A cache entry whose files are not what its record says.
struct BrokenEntry {
  std::string id;
  std::string package;
  std::string component;
  std::vector<std::string> problems;  // "lib/libfoo.so.1 (modified)"
  bool removed = false;               // by `cache verify --repair`
};

struct VerifyReport {
  std::size_t entries = 0;
  std::size_t files = 0;  // hashed
  std::vector<BrokenEntry> broken;
  std::size_t in_use = 0;  // broken, but --repair left them to a running envkit
};

class Cache {
 public:
  // `root` is the cache directory (--cache-dir); the store lives in root/store/v1.
  explicit Cache(std::filesystem::path root);

  [[nodiscard]] const std::filesystem::path& store_root() const { return store_; }

  // The artifact's sha256 and a tag of how it is laid out (the same bytes
  // unpacked for another layout are another entry).
  [[nodiscard]] static std::string entry_id(const ArtifactTarget& target);
  // A source artifact built on this machine (`<sha256>-source-<tag>`): the tag
  // covers the layout key, the build system (declared or detected) and the
  // toolchain's identity (Toolchain::identity), so another compiler builds another entry.
  [[nodiscard]] static std::string source_entry_id(const ArtifactTarget& target,
                                                   std::string_view toolchain_identity);
  // The wheel built from a Python sdist by an environment's Python
  // (`<sdist sha256>-wheel-<tag>`): the tag covers the interpreter's version
  // (3.11.7), so another Python builds another wheel.
  [[nodiscard]] static std::string sdist_wheel_id(std::string_view sdist_sha256,
                                                  std::string_view python_version);
  // The log of building entry `id` from source, kept after the build:
  // <cache>/store/v1/logs/<id>.log.
  [[nodiscard]] std::filesystem::path build_log(const std::string& id) const;
  [[nodiscard]] std::filesystem::path entry_dir(const std::string& id) const;

  // The finished entry, or nullopt.
  [[nodiscard]] Result<std::optional<EntryRecord>> find(const std::string& id) const;

  // Held while an entry is made; whoever holds it may clear leftovers of a crashed run.
  [[nodiscard]] Result<sys::FileLock> lock_entry(const std::string& id) const;
  // An empty staging folder for `id` (anything a crashed run left there is removed).
  [[nodiscard]] Result<std::filesystem::path> fresh_staging(const std::string& id) const;
  // Held (shared) while an install links from entry `id`, from before it
  // looks the entry up until its generation is committed: `clean` and `prune`
  // leave an entry alone while anyone holds it.
  [[nodiscard]] Result<sys::FileLock> use_entry(const std::string& id) const;
  // Moves the staged tree in as entry `record.id`, its files' stamps taken and
  // written in its record. The record is written to a temporary file first and
  // renamed in last: a full disk or a kill before that leaves no entry, only
  // leftovers that `remove_leftovers` clears.
  [[nodiscard]] Result<void> commit(const std::filesystem::path& staging, EntryRecord record) const;
  // The files of `record` whose stat no longer matches their stamp (written
  // through a prefix's hard link, replaced, removed), "path (how)" each. Empty
  // for an entry whose record has no stamps.
  [[nodiscard]] std::vector<std::string> changed_files(const EntryRecord& record) const;
  // Takes a changed entry out of the cache (its record first), so that it is
  // made again; the caller holds its lock (lock_entry).
  void discard_entry(const std::string& id) const;
  // Removes what runs that died (or ran out of disk) before their commit point
  // left: record-less entries, staging, temporary records. Those of an entry
  // being made now are left to the envkit making it. Returns how many.
  std::size_t remove_leftovers() const;

  // Fails with a clear error when the cache cannot be written.
  [[nodiscard]] Result<void> check_writable() const;

  // Remembers that `prefix` uses the cache, so `prune` keeps what it uses.
  [[nodiscard]] Result<void> register_prefix(const std::filesystem::path& prefix) const;

  [[nodiscard]] Result<CacheInfo> info() const;
  // Removes every entry (but those in use).
  [[nodiscard]] Result<CleanReport> clean() const;
  // Removes the entries no registered prefix uses.
  [[nodiscard]] Result<CleanReport> prune() const;
  // Hashes every file of every entry against its record; `repair` removes the
  // broken entries (not those in use), so the next install makes them again.
  [[nodiscard]] Result<VerifyReport> verify(bool repair) const;

 private:
  // The ids of the entries with a record (finished ones), in order.
  [[nodiscard]] std::set<std::string> record_ids() const;
  [[nodiscard]] Result<CleanReport> remove_entries(
      const std::function<bool(const std::string&)>& keep) const;
  // What runs that died before their commit point may have left (some may be
  // an entry being made now: its lock says).
  [[nodiscard]] std::vector<std::filesystem::path> leftovers() const;
  // Both of `id`'s locks, exclusive, or nullopt when an envkit makes or uses it.
  [[nodiscard]] std::optional<std::pair<sys::FileLock, sys::FileLock>> claim_for_removal(
      const std::string& id) const;
  std::filesystem::path store_;
};

// The cache directory: `configured` when given (--cache-dir, ENVKIT_CACHE_DIR
// or config.yaml's cache-dir, as envkit::config resolves them), else
// $XDG_CACHE_HOME/envkit, else ~/.cache/envkit.
[[nodiscard]] std::filesystem::path default_cache_dir(
    const std::optional<std::filesystem::path>& configured);

}  // namespace envkit::store
