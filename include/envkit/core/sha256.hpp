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

// Streaming digests: SHA-256, and MD5 for makeself headers that state one (OpenSSL EVP
// behind them; no OpenSSL type in this header).
namespace envkit::core {

class Digest {
 public:
  enum class Algorithm : std::uint8_t { sha256, md5 };

  explicit Digest(Algorithm algorithm);
  ~Digest();
  Digest(Digest&&) noexcept;
  Digest& operator=(Digest&&) noexcept;
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;

  void update(std::span<const std::byte> bytes);
  void update(std::string_view text);
  // The digest as lowercase hex digits; the object starts over afterwards.
  [[nodiscard]] std::string hex_digest();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

class Sha256 : public Digest {
 public:
  Sha256() : Digest(Algorithm::sha256) {}
};

class Md5 : public Digest {
 public:
  Md5() : Digest(Algorithm::md5) {}
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
