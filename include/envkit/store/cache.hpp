#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/specs/artifact.hpp"
#include "envkit/store/records.hpp"
#include "envkit/sys/file_lock.hpp"

// The content-addressed cache of unpacked artifacts (docs/how-it-works.md):
//   <cache>/store/v1/entries/<id>/       the artifact unpacked in prefix layout (read-only files)
//   <cache>/store/v1/entries/<id>.json   its record, written last: an entry without it is
//   unfinished <cache>/store/v1/locks/<id>.lock     held while an entry is made or removed
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
  std::vector<std::filesystem::path> prefixes;
};

struct CleanReport {
  std::size_t removed = 0;
  std::uint64_t bytes = 0;
  std::size_t in_use = 0;  // locked by a running envkit, left alone
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
  // Moves the staged tree in as entry `record.id` and writes its record.
  [[nodiscard]] Result<void> commit(const std::filesystem::path& staging,
                                    const EntryRecord& record) const;

  // Fails with a clear error when the cache cannot be written.
  [[nodiscard]] Result<void> check_writable() const;

  // Remembers that `prefix` uses the cache, so `prune` keeps what it uses.
  [[nodiscard]] Result<void> register_prefix(const std::filesystem::path& prefix) const;

  [[nodiscard]] Result<CacheInfo> info() const;
  // Removes every entry (but those in use).
  [[nodiscard]] Result<CleanReport> clean() const;
  // Removes the entries no registered prefix uses.
  [[nodiscard]] Result<CleanReport> prune() const;

 private:
  [[nodiscard]] Result<CleanReport> remove_entries(
      const std::function<bool(const std::string&)>& keep) const;
  std::filesystem::path store_;
};

// The cache directory: `configured` when given (--cache-dir, ENVKIT_CACHE_DIR
// or config.yaml's cache-dir, as envkit::config resolves them), else
// $XDG_CACHE_HOME/envkit, else ~/.cache/envkit.
[[nodiscard]] std::filesystem::path default_cache_dir(
    const std::optional<std::filesystem::path>& configured);

}  // namespace envkit::store
