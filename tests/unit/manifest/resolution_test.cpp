// envkit.yaml's `resolution:` section: the date horizon of source builds
// (`as-of`) and the packages built with the framework (`build-with-framework`).

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "envkit/manifest/manifest.hpp"

namespace envkit::manifest {
namespace {

using Strings = std::vector<std::string>;

Error resolution_error(std::string_view text) {
  auto result = parse(text, "envkit.yaml");
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().code() == ErrorCode::input);
  return result.error();
}

TEST_CASE("resolution: as-of and build-with-framework are read", "[manifest][resolution]") {
  const auto manifest = parse(
      "framework: torch ==2.1.2\n"
      "resolution:\n"
      "  as-of: 2022-08-01\n"
      "  build-with-framework: [mmcv, Flash_Attn, mmcv]\n",
      "envkit.yaml");
  REQUIRE(manifest);
  CHECK(manifest->resolution.as_of == "2022-08-01");
  CHECK(manifest->resolution.build_with_framework == Strings{"flash-attn", "mmcv"});

  SECTION("one package needs no list, and a quoted date is the same date") {
    const auto one =
        parse("resolution: {as-of: \"2019-11-27\", build-with-framework: detectron2}\n", "m");
    REQUIRE(one);
    CHECK(one->resolution.as_of == "2019-11-27");
    CHECK(one->resolution.build_with_framework == Strings{"detectron2"});
  }
  SECTION("without the section, nothing is set") {
    const auto none = parse("framework: torch\n", "m");
    REQUIRE(none);
    CHECK_FALSE(none->resolution.as_of);
    CHECK(none->resolution.build_with_framework.empty());
  }
  SECTION("an empty section is allowed") {
    const auto empty = parse("framework: torch\nresolution:\n", "m");
    REQUIRE(empty);
    CHECK_FALSE(empty->resolution.as_of);
  }
}

TEST_CASE("resolution: changes the manifest's content hash, its absence keeps older hashes",
          "[manifest][resolution]") {
  const auto plain = parse("framework: torch\n", "m");
  const auto dated = parse("framework: torch\nresolution: {as-of: 2022-08-01}\n", "m");
  const auto later = parse("framework: torch\nresolution: {as-of: 2022-08-02}\n", "m");
  const auto empty = parse("framework: torch\nresolution: {}\n", "m");
  REQUIRE(plain);
  REQUIRE(dated);
  REQUIRE(later);
  REQUIRE(empty);
  CHECK(content_hash(*plain) != content_hash(*dated));
  CHECK(content_hash(*dated) != content_hash(*later));
  CHECK(content_hash(*plain) == content_hash(*empty));
}

TEST_CASE("resolution.as-of in the future is an error at its line and column",
          "[manifest][resolution][errors]") {
  const Error error = resolution_error("framework: torch\nresolution:\n  as-of: 2999-01-01\n");
  CHECK_THAT(error.headline(),
             Catch::Matchers::StartsWith(
                 "envkit.yaml:3:10: `resolution.as-of`: `2999-01-01` is in the future (today is "));
  REQUIRE(error.hints().size() == 1);
  CHECK_THAT(error.hints()[0], Catch::Matchers::Contains("leave out `as-of`"));
}

TEST_CASE("resolution.as-of before 2015 is an error at its line and column",
          "[manifest][resolution][errors]") {
  const Error error = resolution_error("resolution: {as-of: 2014-12-31}\n");
  CHECK(error.headline() == "envkit.yaml:1:21: `resolution.as-of`: `2014-12-31` is before 2015");
  REQUIRE(error.hints().size() == 1);
  CHECK_THAT(error.hints()[0], Catch::Matchers::Contains("from 2015-01-01 on"));
}

TEST_CASE("resolution.as-of that is not a date is an error at its line and column",
          "[manifest][resolution][errors]") {
  CHECK(resolution_error("resolution:\n  as-of: 2022-8-1\n").headline() ==
        "envkit.yaml:2:10: `resolution.as-of`: expected a date such as `2022-08-01`, found "
        "`2022-8-1`");
  CHECK(resolution_error("resolution:\n  as-of: 2023-02-29\n").headline() ==
        "envkit.yaml:2:10: `resolution.as-of`: `2023-02-29` is not a day of the calendar");
  CHECK(resolution_error("resolution:\n  as-of: [2022-08-01]\n").headline() ==
        "envkit.yaml:2:10: `resolution.as-of`: expected a date such as `2022-08-01`, found a "
        "list");
  CHECK(resolution_error("resolution:\n  as-of:\n").headline() ==
        "envkit.yaml:2:3: `resolution.as-of`: expected a date such as `2022-08-01`, found "
        "nothing");
}

TEST_CASE("resolution's other mistakes name the key, its line and column",
          "[manifest][resolution][errors]") {
  const Error unknown = resolution_error("resolution:\n  asof: 2022-08-01\n");
  CHECK(unknown.headline() == "envkit.yaml:2:3: unknown key `asof` in `resolution`");
  CHECK(unknown.hints() == Strings{"did you mean `as-of`?"});
  CHECK(resolution_error("resolution:\n  build-with-framework: [\"mm cv\"]\n").headline() ==
        "envkit.yaml:2:26: `resolution.build-with-framework`: expected a Python package name "
        "such as `mmcv`, found `mm cv`");
  CHECK(resolution_error("resolution: 2022-08-01\n").headline() ==
        "envkit.yaml:1:13: `resolution`: expected a mapping such as `{as-of: 2022-08-01, "
        "build-with-framework: [mmcv]}`, found `2022-08-01`");
}

TEST_CASE("parse_as_of takes days from 2015-01-01 to today", "[manifest][resolution]") {
  CHECK(parse_as_of("2015-01-01", "2026-11-30").value() == "2015-01-01");
  CHECK(parse_as_of("2026-11-30", "2026-11-30").value() == "2026-11-30");
  CHECK(parse_as_of("2024-02-29", "2026-11-30").value() == "2024-02-29");
  CHECK_FALSE(parse_as_of("2026-12-01", "2026-11-30"));
  CHECK_FALSE(parse_as_of("2100-02-29", "2200-01-01"));  // not a leap year
  CHECK_FALSE(parse_as_of("2022-08-01T00:00:00Z", "2026-11-30"));
  CHECK(today_utc().size() == 10);
}

}  // namespace
}  // namespace envkit::manifest
