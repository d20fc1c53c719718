#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

// SHA-256, streaming (OpenSSL EVP behind it; no OpenSSL type in this header).
namespace envkit::core {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::span<const std::byte> bytes);
  void update(std::string_view text);
  // The digest as 64 lowercase hex digits; the object starts over afterwards.
  [[nodiscard]] std::string hex_digest();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The sha256 of `text` as 64 lowercase hex digits.
[[nodiscard]] std::string sha256_hex(std::string_view text);

// Whether `text` is a sha256 as recipes and locks write it: 64 lowercase hex digits.
[[nodiscard]] bool is_sha256_hex(std::string_view text);

// A sha256 as Nix writes it (52 characters of Nix's base32, as in nixpkgs' `fetchurl`)
// as 64 lowercase hex digits; nullopt when `text` is not one.
[[nodiscard]] std::optional<std::string> nix_base32_sha256_to_hex(std::string_view text);

// The sha256 of a file's bytes, read in chunks; nullopt when it cannot be read.
[[nodiscard]] std::optional<std::string> sha256_file(const std::filesystem::path& file);

}  // namespace envkit::core
