#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "entry_path.hpp"
#include "envkit/core/result.hpp"
#include "envkit/sys/unique_fd.hpp"

namespace envkit::archive::detail {

using sys::UniqueFd;

// Creates files, folders and links under one root folder without ever
// following a symlink below the root: each folder is opened relative to its
// parent with O_NOFOLLOW and files are created with O_EXCL, so a link made by
// an earlier entry (or found in the destination) cannot redirect a later
// write. Paths are components relative to the root, already checked by
// split_entry_path.
//
// Errors: a refusal (the archive asks for something unsafe or contradictory)
// has only a message, its reason; an OS failure also has the OS's reason as a
// cause, which is how the extractor tells "refused" from "could not".
class TreeWriter {
 public:
  // Creates `root` (and its parents) when missing.
  [[nodiscard]] static Result<TreeWriter> open(const std::filesystem::path& root);

  // A new, empty regular file, open for writing. An earlier regular file at
  // the same path is replaced (tar semantics); a folder or link there is not.
  [[nodiscard]] Result<UniqueFd> create_file(std::span<const std::string> path);
  // A folder, mode 0755; an existing folder is fine.
  [[nodiscard]] Result<void> make_directory(std::span<const std::string> path);
  // Sets an existing folder's permission bits (as given: the caller has
  // checked them).
  [[nodiscard]] Result<void> set_directory_mode(std::span<const std::string> path, mode_t mode);
  // Sets an existing regular file's permission bits (as given: the caller has
  // checked them); a link or anything else at the path is refused.
  [[nodiscard]] Result<void> set_file_mode(std::span<const std::string> path, mode_t mode);
  // A symlink; the same link again is fine, anything else at the path is not.
  [[nodiscard]] Result<void> make_symlink(std::span<const std::string> path,
                                          const std::string& target);
  // `path` as a hard link to the regular file `existing`, or a copy of it
  // where the file system refuses hard links. Returns the bytes copied.
  [[nodiscard]] Result<std::uint64_t> make_hardlink(std::span<const std::string> path,
                                                    std::span<const std::string> existing);

 private:
  explicit TreeWriter(UniqueFd root) : root_(std::move(root)) {}

  // The folder holding `path`'s last component, created as needed. Borrowed:
  // valid until the next call (the last one is kept open, since archives list
  // a folder's files together).
  [[nodiscard]] Result<int> parent_of(std::span<const std::string> path);
  // The folder `dirs`, created as needed, as a descriptor of its own.
  [[nodiscard]] Result<UniqueFd> open_dirs(std::span<const std::string> dirs);
  // Makes room for a new file at `name` in `dir`: removes a regular file
  // there, refuses anything else.
  [[nodiscard]] Result<void> replace_file(int dir, const std::string& name,
                                          std::span<const std::string> path);
  [[nodiscard]] Result<std::uint64_t> copy_file(int from_dir, const std::string& from_name,
                                                int to_dir, std::span<const std::string> path);

  UniqueFd root_;
  Components cached_dirs_;
  UniqueFd cached_fd_;
};

// Writes all of `bytes` to `fd`; `shown` names the file in errors.
[[nodiscard]] Result<void> write_all(int fd, std::span<const std::byte> bytes,
                                     std::string_view shown);

}  // namespace envkit::archive::detail
