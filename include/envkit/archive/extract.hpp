#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"

// envkit's one safe extractor (libarchive): tar, tar.gz, tar.xz, tar.bz2,
// tar.zst, zip and wheels. Nothing is written outside the destination: no
// absolute paths, no `..`, no link that escapes, no device files or fifos,
// setuid/setgid dropped, a limit on unpacked bytes, truncated or corrupt
// archives refused. Every refusal names the archive and the entry.
namespace envkit::archive {

// Where the archive's bytes come from, pulled in order (a download, a file).
class Source {
 public:
  virtual ~Source() = default;
  // Up to buffer.size() bytes; 0 at the end.
  [[nodiscard]] virtual Result<std::size_t> read(std::span<std::byte> buffer) = 0;
  // How messages name the archive (a URL, a path).
  [[nodiscard]] virtual std::string name() const = 0;
};

// Where an entry lands: its path relative to the destination, or nullopt to
// leave it out. Gets the entry's path as stored, after strip_components,
// normalized (no `./`, no doubled '/'), a folder's with a trailing '/'. What
// it answers is checked like a stored path (no absolute path, no `..`).
using PathMap = std::function<std::optional<std::string>(std::string_view entry_path)>;

struct ExtractOptions {
  int strip_components = 0;
  PathMap map;  // empty = every entry where it is
  // Decompression-bomb limits: bytes written and entries read (those left out
  // by strip_components or the map included).
  std::uint64_t max_bytes = std::uint64_t{64} << 30;
  std::uint64_t max_entries = 1'000'000;
  // Compute each regular file's sha256 while writing it.
  bool hash_files = false;
  // A wheel, whose sha256 the caller checked (the lock's): a file of 1 MiB
  // or more takes its sha256 from the wheel's RECORD where the row's size is
  // the file's, its bytes checked by the entry's CRC-32 as they are written,
  // not hashed again (RECORD is the wheel's manifest; the wheel's own hash
  // vouches for both). Smaller files are hashed and checked against their
  // rows; a large file RECORD does not vouch for is hashed once written.
  bool trust_record = false;
  // extract_file: a large zip's entries are unpacked on up to this many
  // threads (largest first), with the same checks and the same result.
  unsigned threads = 1;
  // Entries (path after strip_components, before `map`) for which this
  // answers true and whose data is a makeself runfile (runfile.hpp) are not
  // written: their payload is unpacked in place, streamed from the entry, its
  // checksums checked, and each of its entries given to `map` as
  // `<entry path without .run>/<inner path>`, with every rule above. One level
  // deep: a runfile inside a nested one is written as a file. An entry that
  // is not a makeself archive is written as a file.
  std::function<bool(std::string_view entry_path)> nested_runfile;
};

enum class EntryType : std::uint8_t { file, directory, symlink };

struct ExtractedEntry {
  std::string path;  // relative to the destination, '/'-separated, after mapping
  EntryType type = EntryType::file;
  std::uint64_t size = 0;   // files
  bool executable = false;  // files
  std::string sha256;       // files, with hash_files
  std::string link_target;  // symlinks, as stored
};

struct ExtractResult {
  // In archive order, each path once: folders made on the way to a file are
  // listed too, a hard link as a file, and a file replaced by a later entry
  // only as the later one.
  std::vector<ExtractedEntry> entries;
  std::uint64_t bytes_written = 0;
  // What the user should know: a wheel's RECORD row that disagrees with a
  // file of its own .dist-info (kept as the archive holds it, with its own
  // hash; one that disagrees with a file of the package refuses the wheel).
  std::vector<std::string> warnings;
};

// Unpacks the archive read from `source` under `destination` (created if
// missing). Streams: memory does not grow with the archive's size. A zip
// keeps its central directory at the end: give zips and wheels to
// extract_zip_stream (a download) or extract_file.
[[nodiscard]] Result<ExtractResult> extract(Source& source,
                                            const std::filesystem::path& destination,
                                            const ExtractOptions& options = {});

// The same for an archive on disk (any format, zip and wheels included).
[[nodiscard]] Result<ExtractResult> extract_file(const std::filesystem::path& archive,
                                                 const std::filesystem::path& destination,
                                                 const ExtractOptions& options = {});

// A zip (a wheel) unpacked as `source` is read, never kept whole: each entry
// whose local header states its sizes is inflated on up to options.threads
// threads while the rest arrives, with at most 32 MiB read ahead of them by
// all such downloads together. The
// central directory, read last, must agree with every local header read
// (refused otherwise, as extract_file refuses), and decides modes. nullopt
// where the zip surprises (a data descriptor, a symlink, an encrypted entry,
// bytes or an order the directory does not account for, options.nested_runfile
// set): `destination` holds part of it, and the caller unpacks the whole file
// (extract_file) into an empty folder instead. Otherwise the result is
// extract_file's, with every rule of it, and `source` has been read to its
// end. Nothing here checks the download's hash: the caller does, and
// discards `destination` when it is not the locked one.
[[nodiscard]] Result<std::optional<ExtractResult>> extract_zip_stream(
    Source& source, const std::filesystem::path& destination, const ExtractOptions& options = {});

}  // namespace envkit::archive
