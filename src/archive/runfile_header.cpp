// Reads the facts a makeself header states, without running it. The format,
// from makeself's own makeself-header.sh (github.com/megastep/makeself: 2.1.5
// at 0da478c, 2.4.5, 2.5.0) and the headers Debian's makeself 2.4.5 writes:
//   # This script was generated using Makeself 2.4.5
//   CRCsum="3198343705"            one POSIX cksum per payload, 0000000000 = none
//   MD5="7bdb...b79"               one per payload, zeros = none
//   SHA="0000...0000"              2.3+, one per payload, zeros = none
//   label="..."   filesizes="121"  one size per appended payload
//   skip="714"                     2.2+: offset=`head -n "$skip" "$0" | wc -c`
//   offset=`head -n 401 "$0" | wc -c | tr -d " "`     2.1.x: the count inline
//   MS_dd "$0" $offset $s | eval "gzip -cd" | ...      how the payload decodes
#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "envkit/archive/runfile.hpp"

namespace envkit::archive {

namespace {

// Where the assignment `key=` starts a line, and its value (quotes removed).
struct Assignment {
  std::string_view value;
  int line = 0;
};

int line_of(std::string_view text, std::size_t at) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

std::optional<Assignment> find_assignment(std::string_view text, std::string_view key) {
  const auto needle = fmt::format("\n{}=", key);
  const auto at = text.find(needle);
  if (at == std::string_view::npos) return std::nullopt;
  const auto begin = at + needle.size();
  auto end = text.find('\n', begin);
  if (end == std::string_view::npos) end = text.size();
  auto value = text.substr(begin, end - begin);
  if (value.size() >= 2 && value.front() == '"') {
    const auto close = value.find('"', 1);
    value = close == std::string_view::npos ? value.substr(1) : value.substr(1, close - 1);
  }
  return Assignment{.value = value, .line = line_of(text, at + 1)};
}

std::vector<std::string_view> words(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ')
      ++i;
    const auto start = i;
    while (i < text.size() && text[i] != ' ')
      ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

template <class T>
std::optional<T> number(std::string_view text) {
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

Error bad_header(std::string_view name, int line, std::string what) {
  Error error = Error::failed(fmt::format("cannot read the makeself header of `{}`", name));
  error.because(std::move(what));
  if (line > 0) error.at({.file = std::string(name), .line = line, .column = 1});
  return error.hint("the runfile is damaged or not a makeself installer: download it again");
}

bool all_zeros(std::string_view digest) {
  return std::all_of(digest.begin(), digest.end(), [](char c) { return c == '0'; });
}

bool is_hex(std::string_view text, std::size_t length) {
  return text.size() == length && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
         });
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](char c) {
    return c >= 'A' && c <= 'F' ? static_cast<char>(c - 'A' + 'a') : c;
  });
  return out;
}

// The command makeself pipes the payload through, as it names it.
std::optional<MakeselfCompression> compression_of(std::string_view command) {
  const auto starts = [&](std::string_view prefix) { return command.starts_with(prefix); };
  if (starts("gzip ") || starts("pigz ")) return MakeselfCompression::gzip;
  if (starts("xz ")) return MakeselfCompression::xz;
  if (starts("bzip2 ") || starts("pbzip2 ")) return MakeselfCompression::bzip2;
  if (starts("zstd ")) return MakeselfCompression::zstd;
  if (starts("lz4 ")) return MakeselfCompression::lz4;
  if (command == "cat") return MakeselfCompression::none;
  return std::nullopt;
}

// The first `eval "CMD"` whose CMD is a literal command (not `$var`): the
// payload's decoder in every makeself version.
std::optional<std::pair<std::string_view, int>> decode_command(std::string_view text) {
  constexpr std::string_view kEval = "eval \"";
  for (auto at = text.find(kEval); at != std::string_view::npos; at = text.find(kEval, at + 1)) {
    const auto begin = at + kEval.size();
    const auto end = text.find('"', begin);
    if (end == std::string_view::npos) break;
    const auto command = text.substr(begin, end - begin);
    if (command.empty() || command.front() == '$') continue;
    return std::pair{command, line_of(text, at)};
  }
  return std::nullopt;
}

}  // namespace

std::string_view to_string(MakeselfCompression compression) {
  switch (compression) {
    case MakeselfCompression::none:
      return "none";
    case MakeselfCompression::gzip:
      return "gzip";
    case MakeselfCompression::bzip2:
      return "bzip2";
    case MakeselfCompression::xz:
      return "xz";
    case MakeselfCompression::zstd:
      return "zstd";
    case MakeselfCompression::lz4:
      return "lz4";
  }
  return "unknown";
}

std::uint64_t MakeselfHeader::payload_bytes() const {
  std::uint64_t total = 0;
  for (const auto size : filesizes)
    total += size;
  return total;
}

bool looks_like_makeself(std::string_view prefix) {
  const auto head = prefix.substr(0, 4096);
  return prefix.starts_with("#!") && head.find("Makeself") != std::string_view::npos &&
         head.find("\nfilesizes=") != std::string_view::npos;
}

Result<std::uint64_t> makeself_line_count(std::string_view text, std::string_view name) {
  std::optional<std::uint64_t> from_skip;
  int skip_line = 0;
  if (const auto skip = find_assignment(text, "skip")) {
    from_skip = number<std::uint64_t>(skip->value);
    skip_line = skip->line;
    if (!from_skip || *from_skip == 0) {
      return bad_header(name, skip->line,
                        fmt::format("skip=\"{}\" is not a line count", skip->value));
    }
  }
  // Every `head -n <number>` must state the same count (2.1.x repeats it).
  std::optional<std::uint64_t> inline_count;
  constexpr std::string_view kHead = "head -n ";
  for (auto at = text.find(kHead); at != std::string_view::npos; at = text.find(kHead, at + 1)) {
    const auto begin = at + kHead.size();
    auto end = begin;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9')
      ++end;
    if (end == begin) continue;  // head -n "$skip"
    const auto count = number<std::uint64_t>(text.substr(begin, end - begin));
    if (inline_count && count != inline_count) {
      return bad_header(name, line_of(text, at),
                        fmt::format("`head -n {}` contradicts the earlier `head -n {}`",
                                    text.substr(begin, end - begin), *inline_count));
    }
    inline_count = count;
  }
  if (from_skip && inline_count && *from_skip != *inline_count) {
    return bad_header(
        name, skip_line,
        fmt::format("skip=\"{}\" contradicts `head -n {}`", *from_skip, *inline_count));
  }
  if (from_skip) return *from_skip;
  if (inline_count && *inline_count > 0) return *inline_count;
  return bad_header(
      name, 0, "expected the payload's offset as skip=\"N\" or `head -n N \"$0\"`; found neither");
}

Result<MakeselfHeader> parse_makeself_header(std::string_view text, std::string_view name) {
  if (!text.starts_with("#!")) {
    return bad_header(name, 1,
                      "expected a shell script (#!/bin/sh), the start of a makeself header");
  }
  MakeselfHeader header;
  auto lines = makeself_line_count(text, name);
  if (!lines) return std::move(lines).error();
  header.line_count = *lines;
  // The header is exactly that many lines of text; the payload follows.
  std::size_t end = 0;
  for (std::uint64_t line = 0; line < header.line_count; ++line) {
    const auto newline = text.find('\n', end);
    if (newline == std::string_view::npos) {
      return bad_header(name, static_cast<int>(line) + 1,
                        fmt::format("the header states {} lines (head -n {}) but the file ends "
                                    "after {} lines",
                                    header.line_count, header.line_count, line));
    }
    end = newline + 1;
  }
  header.header_bytes = end;
  const auto script = text.substr(0, end);
  if (const auto nul = script.find('\0'); nul != std::string_view::npos) {
    return bad_header(name, line_of(script, nul),
                      fmt::format("the header's {} lines run into binary data: the payload starts "
                                  "before line {}",
                                  header.line_count, line_of(script, nul)));
  }

  constexpr std::string_view kVersion = "# This script was generated using Makeself ";
  if (const auto at = script.find(kVersion); at != std::string_view::npos) {
    const auto begin = at + kVersion.size();
    header.makeself_version = std::string(script.substr(begin, script.find('\n', begin) - begin));
  }
  if (const auto label = find_assignment(script, "label")) header.label = label->value;

  const auto sizes = find_assignment(script, "filesizes");
  if (!sizes)
    return bad_header(name, 0, "expected filesizes=\"N\" (the payload's size); found none");
  for (const auto word : words(sizes->value)) {
    const auto size = number<std::uint64_t>(word);
    if (!size || *size == 0) {
      return bad_header(
          name, sizes->line,
          fmt::format("filesizes=\"{}\": `{}` is not a size in bytes", sizes->value, word));
    }
    header.filesizes.push_back(*size);
  }
  if (header.filesizes.empty()) {
    return bad_header(name, sizes->line, "filesizes=\"\" states no payload");
  }
  const auto payloads = header.filesizes.size();

  // Checksums: one word per payload; fewer words leave the rest unstated.
  const auto checksums = [&](std::string_view key, auto&& add) -> Result<void> {
    const auto found = find_assignment(script, key);
    if (!found) return {};
    const auto values = words(found->value);
    if (values.size() > payloads) {
      return bad_header(
          name, found->line,
          fmt::format("{} states {} checksums for {} payloads", key, values.size(), payloads));
    }
    for (const auto value : values) {
      if (auto added = add(value); !added) {
        return bad_header(name, found->line,
                          fmt::format("{}=\"{}\": {}", key, found->value, added.error().message()));
      }
    }
    return {};
  };
  auto crc = checksums("CRCsum", [&](std::string_view value) -> Result<void> {
    const auto sum = number<std::uint64_t>(value);
    if (!sum || *sum > 0xffffffffULL) return Error::failed("expected a decimal CRC-32 (cksum)");
    header.crc.push_back(all_zeros(value) ? std::nullopt
                                          : std::optional(static_cast<std::uint32_t>(*sum)));
    return {};
  });
  if (!crc) return std::move(crc).error();
  auto md5 = checksums("MD5", [&](std::string_view value) -> Result<void> {
    if (!is_hex(value, 32)) return Error::failed("expected 32 hex digits");
    header.md5.push_back(all_zeros(value) ? std::string() : lower(value));
    return {};
  });
  if (!md5) return std::move(md5).error();
  auto sha = checksums("SHA", [&](std::string_view value) -> Result<void> {
    if (!is_hex(value, 64)) return Error::failed("expected 64 hex digits");
    header.sha256.push_back(all_zeros(value) ? std::string() : lower(value));
    return {};
  });
  if (!sha) return std::move(sha).error();
  header.crc.resize(payloads);
  header.md5.resize(payloads);
  header.sha256.resize(payloads);

  const auto command = decode_command(script);
  if (!command) {
    return bad_header(name, 0,
                      "expected the payload's decoder as `eval \"gzip -cd\"` (or xz -d, bzip2 -d, "
                      "zstd -cd, cat); found none");
  }
  const auto compression = compression_of(command->first);
  if (!compression) {
    return bad_header(name, command->second,
                      fmt::format("the payload is decoded by `{}`: envkit reads gzip, xz, bzip2, "
                                  "zstd, lz4 or uncompressed payloads",
                                  command->first));
  }
  header.compression = *compression;
  header.decompress_command = std::string(command->first);
  return header;
}

}  // namespace envkit::archive
