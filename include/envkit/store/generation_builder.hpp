#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/specs/platform.hpp"
#include "envkit/store/link.hpp"
#include "envkit/store/records.hpp"

namespace envkit::store {

// Builds one prefix generation: places packages' files from the cache,
// refuses two packages writing one path differently, carries over files the
// user added, and makes the links a CUDA root needs.
class GenerationBuilder {
 public:
  GenerationBuilder(std::filesystem::path root, std::optional<LinkMode> link_mode);

  // Places `files` (relative to `source`) into the generation for `package`.
  [[nodiscard]] Result<void> place(const std::string& package, const std::filesystem::path& source,
                                   const std::vector<FileRecord>& files);

  // A file of the cache placed at another path (a wheel's archive path -> its
  // install path): `source` is the cache's file, `file` its record where it lands.
  struct Mapped {
    std::filesystem::path source;
    FileRecord file;
  };
  [[nodiscard]] Result<void> place(const std::string& package, const std::vector<Mapped>& files);

  // Writes a file made for this generation (a wheel's RECORD, a script naming
  // its interpreter) for `package`: claimed like a placed file, written, not
  // linked. `file.sha256` and `file.size` must be `content`'s.
  [[nodiscard]] Result<void> write(const std::string& package, const FileRecord& file,
                                   std::string_view content);

  // Forgets `path`'s owner: it was removed (a venv's pip the closure replaces).
  void release(const std::string& path) { owners_.erase(path); }

  // Files under `old_root` that no receipt lists (the user's own): kept.
  [[nodiscard]] Result<void> carry_untracked(const std::filesystem::path& old_root,
                                             const PrefixState& old_state);

  // lib64 -> lib, and targets/<arch>-linux/{include,lib} -> ../../{include,lib}
  // where nvcc.profile looks for them. Returns the links made.
  [[nodiscard]] Result<std::vector<FileRecord>> finish(specs::Platform platform);

  [[nodiscard]] std::string link_mode() const;
  [[nodiscard]] std::size_t files_placed() const { return files_placed_; }

 private:
  struct Owner {
    std::string package;
    std::string fingerprint;  // sha256 of a file, target of a link
  };
  // A file to place: where its content is, and its record in the generation.
  struct Placing {
    std::filesystem::path source;
    const FileRecord* file = nullptr;
  };
  [[nodiscard]] Result<void> place_all(const std::string& package,
                                       const std::vector<Placing>& files);
  [[nodiscard]] Result<bool> claim(const std::string& package, const FileRecord& file);
  [[nodiscard]] Result<void> make_parent(const std::filesystem::path& path);
  [[nodiscard]] Result<void> make_symlink(const std::string& target,
                                          const std::filesystem::path& path);
  void note_dirs(const std::filesystem::path& dir, std::vector<std::filesystem::path>& dirs);
  [[nodiscard]] Result<void> make_dirs(std::vector<std::filesystem::path>& dirs);
  [[nodiscard]] Result<void> link_files(const std::vector<const Placing*>& files);

  std::filesystem::path root_;
  Linker linker_;
  std::map<std::string, Owner> owners_;
  std::set<std::filesystem::path> made_dirs_;
  std::size_t files_placed_ = 0;
};

}  // namespace envkit::store
