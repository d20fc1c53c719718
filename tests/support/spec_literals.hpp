#pragma once

// Versions and specs written as literals in tests: v("12.4.1"), spec(">=8,<9"). A text that does
// not parse fails the test with the parser's message.

#include <catch2/catch.hpp>
#include <string_view>

#include "envkit/specs/version.hpp"
#include "envkit/specs/version_spec.hpp"

namespace envkit::test {

inline specs::Version v(std::string_view text) {
  auto parsed = specs::Version::parse(text);
  if (!parsed) FAIL(parsed.error().to_string());
  return *std::move(parsed);
}

inline specs::VersionSpec spec(std::string_view text,
                               specs::SpecSyntax syntax = specs::SpecSyntax::pep440) {
  auto parsed = specs::VersionSpec::parse(text, syntax);
  if (!parsed) FAIL(parsed.error().to_string());
  return *std::move(parsed);
}

}  // namespace envkit::test
