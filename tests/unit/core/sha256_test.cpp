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
