#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "envkit/core/result.hpp"

// A wheel's `*.dist-info/RECORD` (PEP 376, PEP 491): one CSV row per file,
// `path,sha256=<urlsafe base64, no padding>,size`. The zip reader checks each
// file it writes against it; store's wheel installer writes one per installed wheel.
namespace envkit::archive {

// RECORD's `sha256=<urlsafe base64, no padding>` as lowercase hex; nullopt for
// another algorithm or a malformed value.
[[nodiscard]] std::optional<std::string> record_hash_hex(std::string_view field);

// A sha256 (hex) as RECORD writes it: `sha256=<urlsafe base64, no padding>`.
[[nodiscard]] std::string record_hash_field(std::string_view hex);

// A field as Python's csv writer (QUOTE_MINIMAL) writes it.
[[nodiscard]] std::string csv_field(std::string_view field);

// One CSV row's fields (a field may be quoted, with "" for a quote).
[[nodiscard]] std::vector<std::string> csv_fields(std::string_view line);

struct RecordedFile {
  std::optional<std::string> sha256;  // hex; none for RECORD itself, signatures
  std::optional<std::uint64_t> size;
};

// A RECORD's rows by path. Refuses a path outside the package (absolute, or
// with `..`) and a path listed twice, naming `wheel` and the row.
[[nodiscard]] Result<std::unordered_map<std::string, RecordedFile>> parse_wheel_record(
    std::string_view record, std::string_view wheel);

// Whether `path` (as stored in a zip) is a wheel's RECORD: `NAME.dist-info/RECORD`
// at the top.
[[nodiscard]] bool is_wheel_record(std::string_view path);

}  // namespace envkit::archive
