#include "envkit/core/sha256.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace envkit::core {

struct Digest::State {
  struct ContextDeleter {
    void operator()(EVP_MD_CTX* digest) const { EVP_MD_CTX_free(digest); }
  };
  const EVP_MD* algorithm = nullptr;
  std::unique_ptr<EVP_MD_CTX, ContextDeleter> context{EVP_MD_CTX_new()};

  void start() {
    if (!context || EVP_DigestInit_ex(context.get(), algorithm, nullptr) != 1) {
      throw std::runtime_error("OpenSSL could not start a digest");
    }
  }
};

Digest::Digest(Algorithm algorithm) : state_(std::make_unique<State>()) {
  state_->algorithm = algorithm == Algorithm::md5 ? EVP_md5() : EVP_sha256();
  state_->start();
}
Digest::~Digest() = default;
Digest::Digest(Digest&&) noexcept = default;
Digest& Digest::operator=(Digest&&) noexcept = default;

void Digest::update(std::span<const std::byte> bytes) {
  if (bytes.empty()) return;
  if (EVP_DigestUpdate(state_->context.get(), bytes.data(), bytes.size()) != 1) {
    throw std::runtime_error("OpenSSL digest update failed");
  }
}

void Digest::update(std::string_view text) {
  update(std::as_bytes(std::span(text)));
}

std::string Digest::hex_digest() {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(state_->context.get(), digest.data(), &length) != 1) {
    throw std::runtime_error("OpenSSL digest final failed");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0x0f];
  }
  state_->start();
  return out;
}

bool is_sha256_hex(std::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::optional<std::string> nix_base32_sha256_to_hex(std::string_view text) {
  // Nix's alphabet (no e, o, u, t) and order: the last character holds the lowest bits
  // (nix's printHash32 writes bit n*5 of the digest as character len-1-n).
  constexpr std::string_view kAlphabet = "0123456789abcdfghijklmnpqrsvwxyz";
  constexpr std::size_t kBytes = 32;
  constexpr std::size_t kChars = (kBytes * 8 + 4) / 5;  // 52
  if (text.size() != kChars) return std::nullopt;
  std::array<unsigned, kBytes> digest{};
  for (std::size_t n = 0; n < kChars; ++n) {
    const auto digit = kAlphabet.find(text[kChars - 1 - n]);
    if (digit == std::string_view::npos) return std::nullopt;
    const std::size_t bit = n * 5, byte = bit / 8, shift = bit % 8;
    digest[byte] |= (static_cast<unsigned>(digit) << shift) & 0xffU;
    const unsigned carry = static_cast<unsigned>(digit) >> (8 - shift);
    if (byte + 1 < kBytes) {
      digest[byte + 1] |= carry;
    } else if (carry != 0) {
      return std::nullopt;  // more than 256 bits
    }
  }
  constexpr std::string_view kHex = "0123456789abcdef";
  std::string hex;
  for (const auto b : digest) {
    hex += kHex[b >> 4];
    hex += kHex[b & 0xfU];
  }
  return hex;
}

std::string sha256_hex(std::string_view text) {
  Sha256 hash;
  hash.update(text);
  return hash.hex_digest();
}

std::optional<std::string> sha256_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  Sha256 hash;
  std::vector<char> buffer(std::size_t{1} << 16);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto count = static_cast<std::size_t>(in.gcount());
    hash.update(std::as_bytes(std::span(buffer).first(count)));
  }
  if (in.bad()) return std::nullopt;
  return hash.hex_digest();
}

}  // namespace envkit::core
