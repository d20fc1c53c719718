#pragma once

// Internal to archive: the entry-by-entry unpacker that extract() and
// extract_file() drive, shared with the parallel zip path.

#include <archive.h>
#include <archive_entry.h>
#include <locale.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "entry_path.hpp"
#include "envkit/archive/extract.hpp"
#include "tree_writer.hpp"

namespace envkit::archive::detail {

// Both the bytes pulled from a Source and each read of entry data go through
// one buffer of this size: memory stays flat whatever the archive's size.
inline constexpr std::size_t kBufferSize = std::size_t{1} << 20;

struct ReaderDeleter {
  void operator()(struct archive* reader) const { archive_read_free(reader); }
};
using Reader = std::unique_ptr<struct archive, ReaderDeleter>;

// What a libarchive reader reads: no compression ever (decoder.hpp
// decompresses), tar always, and zip from a stream (its local headers) or
// from a file (its central directory, checked by check_zip_layout first).
enum class ReaderFor : std::uint8_t { stream, tar_file, zip_file };

// An error, saying what to install, where libarchive cannot be loaded.
[[nodiscard]] Result<Reader> new_reader(ReaderFor what);

// While alive, libarchive on this thread takes names as UTF-8 whatever the
// process's locale: libarchive converts a zip's UTF-8 names (general purpose
// bit 11) and a pax header's to the locale's charset, and in the C locale
// that fails for any non-ASCII name, leaving the entry without one.
class Utf8Names {
 public:
  Utf8Names();
  ~Utf8Names();
  Utf8Names(const Utf8Names&) = delete;
  Utf8Names& operator=(const Utf8Names&) = delete;

 private:
  locale_t previous_ = nullptr;
};

// The permission bits an unpacked file or folder gets: the archive's, less
// setuid, setgid, sticky and group/other write; the owner may always read
// and write a file, and enter a folder (later entries are written into it).
[[nodiscard]] mode_t file_mode(mode_t stored);
[[nodiscard]] mode_t directory_mode(mode_t stored);

// The entry's name and symlink target as stored ("" when none).
[[nodiscard]] std::string entry_name(struct archive_entry* entry);
[[nodiscard]] std::string link_target(struct archive_entry* entry);

// "cannot unpack `NAME`" with `error`'s message and causes as the causes.
[[nodiscard]] Error cannot_start(std::string_view name, const Error& error);

// Why an entry of this type is never unpacked, or nullopt.
[[nodiscard]] std::optional<std::string_view> forbidden_type(mode_t type);

// Where a stored name lands: checked, stripped and mapped by `options`;
// nullopt when it is left out. Errors carry the refusal's reason.
[[nodiscard]] Result<std::optional<Components>> place_entry(const std::string& stored,
                                                            bool directory,
                                                            const ExtractOptions& options);

// The bytes an archive may still write, shared by every thread unpacking it.
class ByteBudget {
 public:
  explicit ByteBudget(std::uint64_t limit) : limit_(limit) {}
  // Counts `bytes` as written; false once the total is over the limit.
  bool take(std::uint64_t bytes) { return used_.fetch_add(bytes) + bytes <= limit_; }
  [[nodiscard]] std::uint64_t remaining() const {
    const auto used = used_.load();
    return used >= limit_ ? 0 : limit_ - used;
  }
  [[nodiscard]] std::uint64_t limit() const { return limit_; }

 private:
  std::uint64_t limit_;
  std::atomic<std::uint64_t> used_{0};
};

// Unpacks one archive, entry by entry, in archive order.
class Extractor {
 public:
  Extractor(struct archive* reader, std::string name, const ExtractOptions& options,
            TreeWriter writer, ByteBudget& budget);

  // A Source's own failure, which libarchive only sees as "read failed".
  void watch_source_error(const std::optional<Error>* error) { source_error_ = error; }
  // Unpack only the entries whose index (0-based, in archive order) is true
  // here; the others are skipped. For several threads sharing one archive.
  void only(const std::vector<bool>* wanted) { wanted_ = wanted; }
  // Stop early (with no error of its own) once this becomes true.
  void stop_when(const std::atomic<bool>* stop) { stop_ = stop; }
  // Leave the listed folders' modes to the caller (apply_directory_modes),
  // for when every thread is done: another thread making the same folder on
  // its way to a file could reset a mode set early.
  void defer_directory_modes() { defer_directory_modes_ = true; }
  // The modes of the folders the archive lists, in archive order.
  [[nodiscard]] const std::vector<std::pair<Components, mode_t>>& directory_modes() const {
    return directory_modes_;
  }
  // Where `destination` is: nested runfiles (ExtractOptions::nested_runfile)
  // are unpacked into it. Without it they are written as files.
  void nest_into(std::filesystem::path destination) { destination_ = std::move(destination); }

  Result<ExtractResult> run();
  // For each entry of run()'s result, the index of the archive entry that
  // made it (folders made on the way to a file get that file's index).
  [[nodiscard]] const std::vector<std::uint64_t>& origins() const { return origins_; }

  // An error that happens before any entry (opening the archive).
  Error opening_failed() { return damaged(false); }
  Error over_byte_limit() const;

 private:
  Result<void> unpack(struct archive_entry* entry);
  Result<void> unpack_directory(const Components& path, mode_t mode);
  Result<void> unpack_symlink(const Components& path, const std::string& target);
  Result<void> unpack_hardlink(const Components& path, const std::string& stored_target);
  Result<void> unpack_file(const Components& path, struct archive_entry* entry,
                           std::string_view first_bytes = {});
  Result<void> unpack_maybe_runfile(struct archive_entry* entry);
  [[nodiscard]] std::optional<std::string> stripped_path(const std::string& stored) const;
  [[nodiscard]] bool nested_runfile(const std::string& stored) const;
  Result<void> record_parents(const Components& path);
  void record(ExtractedEntry entry);
  void drop_stale_records();

  Error refused(std::string_view reason) const;
  Error over_entry_limit() const;
  Error from_writer(const Error& error) const;
  Error damaged(bool between_entries) const;
  std::string_view shown_entry() const;

  struct archive* reader_;
  std::string name_;
  const ExtractOptions& options_;
  TreeWriter writer_;
  ByteBudget& budget_;
  std::vector<std::byte> buffer_;
  const std::optional<Error>* source_error_ = nullptr;
  const std::vector<bool>* wanted_ = nullptr;
  const std::atomic<bool>* stop_ = nullptr;
  ExtractResult result_;
  std::vector<std::uint64_t> origins_;                     // per entry of result_
  std::unordered_map<std::string, std::size_t> recorded_;  // path -> index in entries
  std::vector<bool> stale_;                                // per entry: replaced since
  bool any_stale_ = false;
  std::uint64_t entries_seen_ = 0;
  std::uint64_t index_ = 0;  // of the archive entry being unpacked
  std::string current_;      // the entry being unpacked, as stored
  std::filesystem::path destination_;
  std::vector<std::pair<Components, mode_t>> directory_modes_;
  std::unordered_set<std::string> moded_directories_;  // paths in directory_modes_
  bool defer_directory_modes_ = false;
};

// Gives the folders `modes` names their modes (Extractor::directory_modes).
[[nodiscard]] Result<void> apply_directory_modes(
    TreeWriter& writer, const std::vector<std::pair<Components, mode_t>>& modes,
    std::string_view name);

}  // namespace envkit::archive::detail
