#include "envkit/core/sha256.hpp"

#include <catch2/catch.hpp>
#include <string>

using envkit::core::Sha256;
using envkit::core::sha256_hex;

TEST_CASE("sha256 of known inputs (FIPS 180-2 vectors)") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("sha256 streamed in pieces equals one pass, and the object restarts") {
  const std::string text(1'000'003, 'a');
  Sha256 streamed;
  for (std::size_t at = 0; at < text.size(); at += 4097) {
    streamed.update(std::string_view(text).substr(at, 4097));
  }
  const auto whole = sha256_hex(text);
  CHECK(streamed.hex_digest() == whole);
  streamed.update("abc");
  CHECK(streamed.hex_digest() == sha256_hex("abc"));
}

TEST_CASE("a sha256 in Nix's base32 reads as the hex digest it is") {
  using envkit::core::nix_base32_sha256_to_hex;
  // CUDA 9.0 patch 1 as nixpkgs writes it, and the hex ../shared/upstream derived from it
  // (legacy-cuda-cudnn-nixpkgs-old/cuda_runfiles_6_to_10_nixpkgs_old.csv).
  CHECK(nix_base32_sha256_to_hex("1vbqg97pq9z9c8nqvckiwmq3ljm88m7gaizikzxbvz01izh67gx4") ==
        "a4bf63e08f01fcbdfa9ff147f54e45a84a3a70e571b28d2d62e9277c4f7a78ed");
  // CUDA 10.0.130's runfile: two upstream tables agree on this hex.
  CHECK(nix_base32_sha256_to_hex("16p3bv1lwmyqpxil8r951h385sy9asc578afrc7lssa68c71ydcj") ==
        "92351f0e4346694d0fcb4ea1539856c9eb82060c25654463bfd8574ec35ee39a");
  CHECK_FALSE(nix_base32_sha256_to_hex("16p3bv1lwmyqpxil8r951h385sy9asc578afrc7lssa68c71ydc"));
  // `e`, `o`, `u` and `t` are not in Nix's alphabet.
  CHECK_FALSE(nix_base32_sha256_to_hex("e6p3bv1lwmyqpxil8r951h385sy9asc578afrc7lssa68c71ydcj"));
  // The first character holds the top bits: above 256 bits is no sha256.
  CHECK_FALSE(nix_base32_sha256_to_hex("z6p3bv1lwmyqpxil8r951h385sy9asc578afrc7lssa68c71ydcj"));
}

TEST_CASE("md5 of known inputs (RFC 1321 vectors) streamed in pieces") {
  envkit::core::Md5 md5;
  CHECK(md5.hex_digest() == "d41d8cd98f00b204e9800998ecf8427e");
  md5.update(std::string_view("a"));
  md5.update(std::string_view("bc"));
  CHECK(md5.hex_digest() == "900150983cd24fb0d6963f7d28e17f72");
}
