#pragma once

// The source tree's recipe database, opened once per test program. Header-only:
// only the test programs that link envkit::recipes include it.
#include <stdexcept>

#include "envkit/recipes/database.hpp"

namespace envkit::test {

inline const recipes::Database& source_database() {
  static const recipes::Database db = [] {
    auto opened = recipes::Database::open(ENVKIT_SOURCE_DIR "/recipes");
    if (!opened) throw std::runtime_error(opened.error().to_string());
    return std::move(opened).value();
  }();
  return db;
}

}  // namespace envkit::test
