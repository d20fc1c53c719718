#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "envkit/archive/extract.hpp"
#include "envkit/core/result.hpp"
#include "envkit/elf/fatbin.hpp"

// What the store writes down: the files of an unpacked artifact (a cache
// entry's record) and the packages installed in a prefix (its receipts).
// Both are JSON with sorted keys, so they diff and hash the same everywhere.
namespace envkit::store {

// One file, directory or symlink, relative to its root ('/'-separated).
struct FileRecord {
  std::string path;
  archive::EntryType type = archive::EntryType::file;
  std::uint64_t size = 0;
  bool executable = false;
  std::string sha256;       // files
  std::string link_target;  // symlinks

  friend bool operator==(const FileRecord&, const FileRecord&) = default;
};

// A cache entry: one artifact, verified and unpacked in prefix layout.
// A patch applied over an artifact in its cache entry (NVIDIA's CUDA patch runfiles).
struct PatchRecord {
  std::string sha256;
  std::string url;  // without credentials
};

// How a cache file stood on disk when its entry was committed. A prefix that
// hard-links the file can write through the link (root ignores 0444): the
// size, mtime or inode then differ, which a stat shows without hashing.
// ctime is kept for the record but not compared: every hard link made or
// removed (each install, each old generation dropped) moves it.
struct FileStamp {
  std::uint64_t size = 0;
  std::uint64_t inode = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;

  friend bool operator==(const FileStamp&, const FileStamp&) = default;
};

struct EntryRecord {
  std::string id;      // the entry's folder name (the artifact's sha256 + layout tag)
  std::string sha256;  // of the artifact as downloaded
  std::string url;     // where it came from, without credentials
  std::string package;
  std::string component;
  std::string layout;
  std::vector<PatchRecord> patches;  // in the order applied
  std::vector<FileRecord> files;
  // The regular files' stamps at commit, by path (empty in records written
  // before envkit kept them: those entries are checked by `cache verify` only).
  std::map<std::string, FileStamp> stamps;
};

// One artifact a package was installed from.
struct ReceiptArtifact {
  std::string component;
  std::string sha256;
  std::string url;                   // without credentials
  std::string entry;                 // cache entry id
  std::vector<PatchRecord> patches;  // applied over it, in order
};

// One CUDA ELF file of a package and the kernels its fatbinaries hold.
struct KernelFile {
  std::string path;  // relative to the prefix, as in the receipt's files
  elf::KernelCoverage coverage;
  std::string error;  // why its fatbinaries could not be read (coverage then empty)

  friend bool operator==(const KernelFile&, const KernelFile&) = default;
};

// What a package's CUDA files can run on (docs/doctor.md, "Kernel coverage").
struct PackageKernels {
  elf::KernelCoverage coverage;   // all its files together
  std::vector<KernelFile> files;  // each file with a fatbinary, by path

  friend bool operator==(const PackageKernels&, const PackageKernels&) = default;
};

// A package in a prefix: what it was installed from and every file it put there.
struct PackageReceipt {
  std::string name;
  std::string version;
  std::string build;
  std::string packaging;  // "archive" or "wheel"
  std::vector<ReceiptArtifact> artifacts;
  std::vector<FileRecord> files;
  // Read from its files at install; nullopt in receipts written before envkit
  // read kernels (doctor reads the files then).
  std::optional<PackageKernels> kernels;
};

// A prefix generation's state: its packages and the links envkit made for it.
struct PrefixState {
  int generation = 0;
  std::string platform;
  std::string link_mode;  // reflink, hardlink or copy: how files came from the cache
  std::vector<PackageReceipt> packages;
  std::vector<FileRecord> links;  // lib64 -> lib, targets/<arch>-linux/{include,lib}
};

[[nodiscard]] std::string to_json(const EntryRecord& record);
[[nodiscard]] Result<EntryRecord> parse_entry_record(std::string_view text,
                                                     const std::filesystem::path& file);

// Every file, folder and symlink under `root`, sorted by path, files hashed:
// the record of a tree envkit made itself (a source build's install).
// Anything else (a fifo, a socket) is an error naming it.
[[nodiscard]] Result<std::vector<FileRecord>> record_tree(const std::filesystem::path& root);

// <root>/.envkit/state.json and <root>/.envkit/receipts/<name>.json.
[[nodiscard]] Result<void> write_state(const std::filesystem::path& root, const PrefixState& state);
// nullopt when `root` has no state (not made by envkit).
[[nodiscard]] Result<std::optional<PrefixState>> read_state(const std::filesystem::path& root);

}  // namespace envkit::store
