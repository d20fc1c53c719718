#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/elf/loader.hpp"

namespace envkit::elf {

// The library folders of a prefix, as envkit runs programs in it.
struct PrefixLibraries {
  // Resolved files under it count as the prefix's own; empty: under a library dir.
  std::filesystem::path root;
  // Scanned for *.so* files, and searched first, as LD_LIBRARY_PATH starts with them.
  std::vector<std::filesystem::path> library_dirs;
};

// One DT_NEEDED entry of one scanned library, and where ld.so would find it.
struct Dependency {
  std::filesystem::path needed_by;  // the scanned library with the entry
  std::string name;                 // the needed soname
  Resolution resolution;
  bool from_prefix = false;  // resolved to a file under PrefixLibraries::root
};

// A *.so* file with the ELF magic that could not be read (truncated, malformed).
struct UnreadableLibrary {
  std::filesystem::path path;
  Error error;
};

struct DependencyReport {
  std::vector<std::filesystem::path> libraries;  // scanned, one path per real file
  std::vector<Dependency> dependencies;          // of each library in turn, in DT_NEEDED order
  std::vector<UnreadableLibrary> unreadable;

  // The dependencies ld.so would fail on: nothing found, or a file it cannot load.
  [[nodiscard]] std::vector<const Dependency*> unresolved() const;
};

// Reads every ELF shared object (*.so*, regular files or symlinks to them, each
// real file once; linker scripts and other non-ELF files skipped) directly in
// `prefix.library_dirs`, and resolves each DT_NEEDED with the library dirs
// put in front of `system.ld_library_path`. Missing folders are skipped; an
// unlistable one is an error.
[[nodiscard]] Result<DependencyReport> check_dependencies(const PrefixLibraries& prefix,
                                                          const SearchContext& system);

}  // namespace envkit::elf
