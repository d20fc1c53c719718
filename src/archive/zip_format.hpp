#pragma once

// Internal to archive: the zip records envkit reads itself (APPNOTE.TXT).

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace envkit::archive::detail::zip {

inline constexpr std::uint32_t kEndSignature = 0x06054b50U;
inline constexpr std::uint32_t kZip64EndSignature = 0x06064b50U;
inline constexpr std::uint32_t kZip64LocatorSignature = 0x07064b50U;
inline constexpr std::uint32_t kDirectorySignature = 0x02014b50U;
inline constexpr std::uint32_t kLocalSignature = 0x04034b50U;
inline constexpr std::size_t kEndSize = 22;
inline constexpr std::size_t kZip64EndSize = 56;
inline constexpr std::size_t kZip64LocatorSize = 20;
inline constexpr std::size_t kDirectoryHeaderSize = 46;
inline constexpr std::size_t kLocalHeaderSize = 30;
// The end record's comment is at most this long, so the record lies within
// the file's last kEndSize + kMaxComment bytes.
inline constexpr std::size_t kMaxComment = 0xffff;
// Zip64 marks its sizes and offsets with all ones.
inline constexpr std::uint32_t kZip64 = 0xffffffffU;
inline constexpr std::uint16_t kZip64ExtraId = 0x0001;

// The little-endian number of `width` bytes at `at`.
inline std::uint64_t le(std::string_view bytes, std::size_t at, std::size_t width) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < width; ++i)
    value |= std::uint64_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
  return value;
}

// Where the end-of-central-directory record starts in `tail` (searched from
// the end), or npos.
inline std::size_t find_end_record(std::string_view tail) {
  for (std::size_t at = tail.size() >= kEndSize ? tail.size() - kEndSize + 1 : 0; at-- > 0;) {
    if (le(tail, at, 4) == kEndSignature) return at;
  }
  return std::string_view::npos;
}

// The 64-bit values a zip64 extra field holds for a directory record's fields that
// are all ones, in APPNOTE's order: size, compressed size, offset.
inline void read_zip64_extra(std::string_view extra, std::uint64_t& size, std::uint64_t& compressed,
                             std::uint64_t& offset) {
  for (std::size_t at = 0; at + 4 <= extra.size();) {
    const auto id = le(extra, at, 2);
    const auto length = static_cast<std::size_t>(le(extra, at + 2, 2));
    if (at + 4 + length > extra.size()) return;
    if (id == kZip64ExtraId) {
      std::size_t field = at + 4;
      for (auto* value : {&size, &compressed, &offset}) {
        if (*value != kZip64) continue;
        if (field + 8 > at + 4 + length) return;
        *value = le(extra, field, 8);
        field += 8;
      }
      return;
    }
    at += 4 + length;
  }
}

}  // namespace envkit::archive::detail::zip
