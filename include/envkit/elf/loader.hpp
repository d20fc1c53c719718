#pragma once
// Where glibc's ld.so finds a DT_NEEDED name (ld.so(8), "Finding shared libraries"):
// a name with a '/' is a path; otherwise (1) the object's DT_RPATH, unless it has a
// DT_RUNPATH, (2) LD_LIBRARY_PATH, (3) the object's DT_RUNPATH, (4) /etc/ld.so.cache
// then the default dirs, both skipped for objects linked with -z nodefaultlib. A file of
// another ELF class or machine is skipped; one that is not a loadable ELF stops the search.

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/elf/elf_file.hpp"

namespace envkit::elf {

enum class SearchRule { path, rpath, ld_library_path, runpath, system };

// "DT_RPATH", "LD_LIBRARY_PATH", ..., for messages.
[[nodiscard]] std::string_view to_string(SearchRule rule);

// What the loader searches besides the object's own DT_RPATH/DT_RUNPATH.
struct SearchContext {
  std::vector<std::filesystem::path> ld_library_path;
  // Stands in for /etc/ld.so.cache and the default dirs, in search order.
  std::vector<std::filesystem::path> system_dirs;
};

// LD_LIBRARY_PATH's value split as ld.so splits it: at ':' and ';', an empty
// element meaning the current directory, an empty value meaning none.
[[nodiscard]] std::vector<std::filesystem::path> split_ld_library_path(std::string_view value);

// The directories an ld.so.conf names, in order, following `include` globs
// (relative ones from the file's folder). A file that cannot be read names none.
[[nodiscard]] std::vector<std::filesystem::path> read_ld_so_conf(const std::filesystem::path& conf);

// ld.so's built-in trusted directories for this host's architecture.
[[nodiscard]] std::vector<std::filesystem::path> default_system_dirs();

// The real system: `ld_library_path` split as above; system_dirs from
// `ld_so_conf` (we read the configuration, not the ld.so.cache built from it),
// then default_system_dirs(), without duplicates.
[[nodiscard]] SearchContext system_search_context(
    std::string_view ld_library_path, const std::filesystem::path& ld_so_conf = "/etc/ld.so.conf");

// `text` with $ORIGIN and ${ORIGIN} replaced by `origin`; other tokens ($LIB,
// $PLATFORM) stay as written, so paths with them match nothing.
[[nodiscard]] std::string expand_origin(std::string_view text, const std::filesystem::path& origin);

struct SearchDir {
  std::filesystem::path dir;
  SearchRule rule;

  bool operator==(const SearchDir&) const = default;
};

// The directories ld.so tries for `object`'s DT_NEEDED names, in order.
// $ORIGIN is the folder of object.path as given (symlinks in it not resolved,
// as ld.so uses the name it opened). Only the object's own DT_RPATH is used, not
// the inherited DT_RPATH of whatever loaded it.
[[nodiscard]] std::vector<SearchDir> search_dirs(const ElfFile& object,
                                                 const SearchContext& context);

// A file with the right name that ld.so passes over: another class or machine.
struct SkippedCandidate {
  std::filesystem::path path;
  std::string reason;  // "32-bit little-endian i386, not 64-bit little-endian x86-64"
};

struct Resolution {
  std::string name;                           // the DT_NEEDED entry
  std::optional<std::filesystem::path> path;  // the file ld.so would open; nullopt: none
  std::optional<SearchRule> rule;             // which rule gave `path`
  // Set when the file at `path` is not a loadable ELF: ld.so stops there with an error.
  std::optional<std::string> problem;
  std::vector<SkippedCandidate> skipped;

  [[nodiscard]] bool found() const { return path.has_value() && !problem.has_value(); }
};

// Resolves `name` for `object` the way ld.so would (see the top of this file).
[[nodiscard]] Resolution resolve_needed(const ElfFile& object, std::string_view name,
                                        const SearchContext& context);

// resolve_needed with memory: each candidate file is examined once, and a name
// is resolved once per search path and requesting ELF identity. For checking
// many libraries that share their search directories.
class Resolver {
 public:
  explicit Resolver(SearchContext context) : context_(std::move(context)) {}

  [[nodiscard]] const SearchContext& context() const { return context_; }
  [[nodiscard]] Resolution resolve(const ElfFile& object, std::string_view name);

  // How many resolutions came from memory (for tests and timing).
  [[nodiscard]] std::size_t cache_hits() const { return cache_hits_; }

 private:
  // What is at a candidate path, as far as ld.so's choice goes.
  struct Candidate {
    bool exists = false;
    std::optional<ElfIdentity> identity;  // when it is a readable ELF file
    std::string problem;                  // when it exists but is not
  };
  const Candidate& examine(const std::filesystem::path& path);

  SearchContext context_;
  std::map<std::string, Candidate, std::less<>> candidates_;
  std::map<std::string, Resolution, std::less<>> resolutions_;
  std::size_t cache_hits_ = 0;
};

}  // namespace envkit::elf
