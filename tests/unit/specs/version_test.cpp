#include "envkit/specs/version.hpp"

#include <algorithm>
#include <catch2/catch.hpp>

#include "support/spec_literals.hpp"

using envkit::specs::Version;
using envkit::test::v;

TEST_CASE("versions normalize as PEP 440 says", "[specs][version]") {
  CHECK(v("1.0RC1").to_string() == "1.0rc1");
  CHECK(v("v1.0").to_string() == "1.0");
  CHECK(v("1.0-1").to_string() == "1.0.post1");
  CHECK(v("1.0alpha").to_string() == "1.0a0");
  CHECK(v("1.0-preview.2").to_string() == "1.0rc2");
  CHECK(v("1!2.0.DEV3+Ubuntu-1").to_string() == "1!2.0.dev3+ubuntu.1");
  CHECK(v("  12.4.127 ").to_string() == "12.4.127");
}

TEST_CASE("GPU-world versions keep their original spelling", "[specs][version]") {
  const auto driver = v("450.80.02");
  CHECK(driver.to_string() == "450.80.2");
  CHECK(driver.original() == "450.80.02");
  CHECK(driver == v("450.80.2"));
  const auto cudnn = v("8.9.7.29");
  CHECK(cudnn.release() == std::vector<std::uint64_t>{8, 9, 7, 29});
  CHECK(cudnn.major() == 8);
  CHECK(cudnn.minor() == 9);
  CHECK(cudnn.micro() == 7);
}

TEST_CASE("PEP 440's example order holds", "[specs][version]") {
  const std::vector<std::string_view> ordered = {
      "1.0.dev456",    "1.0a1",         "1.0a2.dev456", "1.0a12.dev456",
      "1.0a12",        "1.0b1.dev456",  "1.0b2",        "1.0b2.post345.dev456",
      "1.0b2.post345", "1.0rc1.dev456", "1.0rc1",       "1.0",
      "1.0+abc.5",     "1.0+abc.7",     "1.0+5",        "1.0.post456.dev34",
      "1.0.post456",   "1.0.15",        "1.1.dev1"};
  for (std::size_t i = 0; i + 1 < ordered.size(); ++i) {
    INFO(ordered[i] << " < " << ordered[i + 1]);
    CHECK(v(ordered[i]) < v(ordered[i + 1]));
  }
  CHECK(v("1.0") == v("1.0.0"));
  CHECK(v("1!0.1") > v("99.0"));
  CHECK(v("8.9.7.29") > v("8.9.7"));
}

TEST_CASE("version parts and predicates", "[specs][version]") {
  const auto full = v("2!1.4.5rc2.post3.dev4+local.7");
  CHECK(full.epoch() == 2);
  CHECK(full.pre()->kind == Version::PreKind::rc);
  CHECK(full.pre()->number == 2);
  CHECK(*full.post() == 3);
  CHECK(*full.dev() == 4);
  CHECK(full.local() == std::vector<std::string>{"local", "7"});
  CHECK(full.is_prerelease());
  CHECK(full.is_postrelease());
  CHECK(full.public_version().to_string() == "2!1.4.5rc2.post3.dev4");
  CHECK(full.base_version().to_string() == "2!1.4.5");
  CHECK_FALSE(v("1.0.post1").is_prerelease());
  CHECK(v("1.0.post1.dev0").is_prerelease());
}

TEST_CASE("invalid versions say what is wrong", "[specs][version]") {
  auto bad = Version::parse("1.0.x");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message() == "`1.0.x` is not a valid version");
  CHECK(bad.error().causes().at(0) == "unexpected `.x` after `1.0`");

  auto empty = Version::parse("");
  REQUIRE_FALSE(empty);
  CHECK(empty.error().causes().at(0) == "it is empty");

  auto local = Version::parse("1.0+abc.");
  REQUIRE_FALSE(local);
  CHECK(local.error().causes().at(0) ==
        "the local part `abc.` must be letters and digits joined by `.`");

  auto huge = Version::parse("1.99999999999999999999");
  REQUIRE_FALSE(huge);
  CHECK(huge.error().causes().at(0) == "a number in it does not fit in 64 bits");
}

TEST_CASE("from_release builds a plain release", "[specs][version]") {
  const auto built = Version::from_release({12, 4, 1});
  CHECK(built.to_string() == "12.4.1");
  CHECK(built == v("12.4.1"));
  CHECK(built.original() == "12.4.1");
}
