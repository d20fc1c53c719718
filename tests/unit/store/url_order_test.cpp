// The URLs install tries for an artifact, in order: each mirror's copy, the url, then also-at.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "envkit/store/fill.hpp"

TEST_CASE("an artifact's also-at URLs are tried after the mirrors and its url", "[store]") {
  const envkit::specs::Artifact artifact{
      .url = "https://www.python.org/ftp/python/3.9.2/Python-3.9.2.tar.xz",
      .sha256 = std::string(64, 'b'),
      .also_at = {
          "https://deb.debian.org/debian/pool/main/p/python3.9/python3.9_3.9.2.orig.tar.xz"}};
  CHECK(envkit::store::candidate_urls({"http://mirror.lan"}, artifact) ==
        std::vector<std::string>{
            "http://mirror.lan/www.python.org/ftp/python/3.9.2/Python-3.9.2.tar.xz",
            "https://www.python.org/ftp/python/3.9.2/Python-3.9.2.tar.xz",
            "https://deb.debian.org/debian/pool/main/p/python3.9/python3.9_3.9.2.orig.tar.xz"});
  CHECK(envkit::store::candidate_urls({}, envkit::specs::Artifact{.url = "https://a/b"}) ==
        std::vector<std::string>{"https://a/b"});
}
