#include "envkit/core/url.hpp"

#include <catch2/catch.hpp>

using namespace envkit;

TEST_CASE("credentials in URLs are hidden or dropped", "[core][url]") {
  CHECK(url::redacted("https://user:pw@example.com/simple/?q=a@b") ==
        "https://***@example.com/simple/?q=a@b");
  CHECK(url::redacted("https://token@example.com") == "https://***@example.com");
  CHECK(url::redacted("https://example.com/a@b") == "https://example.com/a@b");
  CHECK(url::redacted("file:///tmp/x") == "file:///tmp/x");
  CHECK(url::redacted("not a url") == "not a url");
  CHECK(url::without_credentials("https://user:pw@example.com/simple/") ==
        "https://example.com/simple/");
  CHECK(url::without_credentials("https://example.com/a@b") == "https://example.com/a@b");
}
