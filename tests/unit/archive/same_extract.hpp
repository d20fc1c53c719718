#pragma once

// Two unpackings of one archive (one thread and many, a whole file and a
// download) must give the same result, entry by entry.

#include <catch2/catch.hpp>

#include "envkit/archive/extract.hpp"

namespace envkit::test {

inline void check_same_extract(const archive::ExtractResult& expected,
                               const archive::ExtractResult& actual) {
  CHECK(actual.bytes_written == expected.bytes_written);
  REQUIRE(actual.entries.size() == expected.entries.size());
  for (std::size_t i = 0; i < expected.entries.size(); ++i) {
    INFO(expected.entries[i].path);
    CHECK(actual.entries[i].path == expected.entries[i].path);
    CHECK(actual.entries[i].type == expected.entries[i].type);
    CHECK(actual.entries[i].size == expected.entries[i].size);
    CHECK(actual.entries[i].executable == expected.entries[i].executable);
    CHECK(actual.entries[i].sha256 == expected.entries[i].sha256);
    CHECK(actual.entries[i].link_target == expected.entries[i].link_target);
  }
}

}  // namespace envkit::test
