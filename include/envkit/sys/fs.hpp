#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "envkit/core/result.hpp"

namespace envkit::sys {

// The most read_file takes by default: far above any file envkit reads (a recipe is
// 50 KB, a big lock a few MB), far below what would exhaust memory.
inline constexpr std::size_t kMaxInputFileBytes = std::size_t{64} << 20;

// The whole file; errors name the path and the OS reason. Only regular files (a FIFO
// or /dev/zero named as an input would never end), at most `max_bytes` of them.
[[nodiscard]] Result<std::string> read_file(const std::filesystem::path& path,
                                            std::size_t max_bytes = kMaxInputFileBytes);

// What a file of st_mode `mode` is, in words: "a regular file", "a directory",
// "a character device", "a FIFO", ... (for errors that refuse what is not a file).
[[nodiscard]] std::string_view file_kind(unsigned mode);

// Creates `path`, which must not exist, holding `content` flushed to disk;
// nothing is left of it on failure. Tests set ENVKIT_TEST_FAIL_WRITE=<text> to
// make a write whose path contains <text> fail as on a full disk (ENOSPC).
[[nodiscard]] Result<void> write_new_file(const std::filesystem::path& path,
                                          std::string_view content);

// Whether a write waits for the disk (fsync): `unsynced` for what may be lost in a
// crash without harm (a cache that is checked when read, a hint), as it costs a
// journal commit, milliseconds on a busy disk.
enum class Durability : std::uint8_t { synced, unsynced };

// Writes to a temporary file beside `path`, then renames it over `path`, so a
// reader sees the old content or the new, never half of it (after a crash, an
// `unsynced` file may be empty or absent).
[[nodiscard]] Result<void> write_file_atomic(const std::filesystem::path& path,
                                             std::string_view content,
                                             Durability durability = Durability::synced);

struct FileContent {
  std::filesystem::path path;
  std::string_view content;
};

// write_file_atomic for several files, renamed in their order once every one
// is written (and synced): a reader that finds the last one finds the others.
// A failure leaves none of the new ones.
[[nodiscard]] Result<void> write_files_atomic(std::span<const FileContent> files,
                                              Durability durability = Durability::synced);

// `<prefix>/share/envkit/<name>` beside the running executable
// (`<prefix>/bin/envkit`), when it exists: the data `cmake --install` puts there
// (recipes, the smoke program's sources). nullopt in a development build.
[[nodiscard]] std::optional<std::filesystem::path> installed_data_dir(std::string_view name);

}  // namespace envkit::sys
