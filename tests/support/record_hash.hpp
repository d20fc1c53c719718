#pragma once

// A wheel RECORD's hash field, computed apart from envkit's own
// (archive::record_hash_field) so that tests check it rather than repeat it.

#include <cstdint>
#include <string>
#include <string_view>

#include "envkit/core/sha256.hpp"

namespace envkit::test {

// `sha256=<urlsafe base64, no padding>` of `data`, as RECORD writes hashes.
inline std::string record_hash(std::string_view data) {
  const std::string hex = core::sha256_hex(data);
  std::string bytes;
  for (std::size_t i = 0; i < hex.size(); i += 2)
    bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out = "sha256=";
  std::uint32_t buffer = 0;
  int bits = 0;
  for (const char c : bytes) {
    buffer = (buffer << 8) | static_cast<std::uint8_t>(c);
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[(buffer >> bits) & 0x3FU];
    }
  }
  if (bits > 0) out += kAlphabet[(buffer << (6 - bits)) & 0x3FU];
  return out;
}

// A RECORD row for `path` holding `data`.
inline std::string record_row(std::string_view path, std::string_view data) {
  return std::string(path) + "," + record_hash(data) + "," + std::to_string(data.size()) + "\n";
}

}  // namespace envkit::test
