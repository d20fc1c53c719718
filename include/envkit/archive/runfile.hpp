#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/archive/extract.hpp"
#include "envkit/core/result.hpp"

// NVIDIA's runfile installers are makeself archives: a shell script header
// followed by one (or more) compressed tar payloads. envkit never runs the
// script: it reads the facts the header states, checks them, and streams the
// payload through the safe extractor (extract.hpp). docs/runfiles.md.
namespace envkit::archive {

// A header longer than this is refused (makeself's own are 10-30 KiB).
inline constexpr std::size_t kMaxMakeselfHeaderBytes = std::size_t{1} << 20;

enum class MakeselfCompression : std::uint8_t { none, gzip, bzip2, xz, zstd, lz4 };

[[nodiscard]] std::string_view to_string(MakeselfCompression compression);

struct MakeselfHeader {
  std::string makeself_version;  // "2.4.5"; "" when the header does not say
  std::string label;
  // The header is the first `line_count` lines (`head -n N "$0"`); the
  // payload starts right after them, at byte `header_bytes`.
  std::uint64_t line_count = 0;
  std::uint64_t header_bytes = 0;
  // One compressed tar per size, appended in order (NVIDIA's have one).
  std::vector<std::uint64_t> filesizes;
  MakeselfCompression compression = MakeselfCompression::gzip;
  std::string decompress_command;  // as the header runs it: "gzip -cd", "xz -d", "cat"
  // Per payload, as stated; nullopt / "" where the header states none (zeros).
  std::vector<std::optional<std::uint32_t>> crc;  // POSIX cksum
  std::vector<std::string> md5;                   // 32 lowercase hex digits
  std::vector<std::string> sha256;                // 64 lowercase hex digits

  [[nodiscard]] std::uint64_t payload_bytes() const;
};

// True when `prefix` (the start of a file) is a makeself header: a shell
// script naming makeself, stating filesizes and its `head -n` line count.
[[nodiscard]] bool looks_like_makeself(std::string_view prefix);

// The line count the header states (`skip="N"`, or `head -n N` in 2.1.x
// headers), or an error; `text` needs only the header's first part.
[[nodiscard]] Result<std::uint64_t> makeself_line_count(std::string_view text,
                                                        std::string_view name);

// Reads the header from `text`, the start of the file with at least the
// header's `line_count` lines. `name` (a path or URL) is how errors name it;
// they say which line and what was expected.
[[nodiscard]] Result<MakeselfHeader> parse_makeself_header(std::string_view text,
                                                           std::string_view name);

// Unpacks a runfile's payload read from `source` under `destination`: reads
// the header (at most kMaxMakeselfHeaderBytes), checks that the payload
// starts at its offset, streams exactly its stated size through the safe
// extractor, computes its stated checksums on the way (on another thread)
// and checks them at the end, and refuses bytes after it. A late failure
// (a checksum mismatch, a cut payload) leaves what was already written in
// `destination`: unpack into a staging folder and discard it on failure.
[[nodiscard]] Result<ExtractResult> extract_runfile(Source& source,
                                                    const std::filesystem::path& destination,
                                                    const ExtractOptions& options = {});

// The same for a runfile on disk.
[[nodiscard]] Result<ExtractResult> extract_runfile_file(const std::filesystem::path& runfile,
                                                         const std::filesystem::path& destination,
                                                         const ExtractOptions& options = {});

// True when the file at `path` starts with a makeself header.
[[nodiscard]] bool is_runfile(const std::filesystem::path& path);

}  // namespace envkit::archive
