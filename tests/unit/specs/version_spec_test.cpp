#include "envkit/specs/version_spec.hpp"

#include <catch2/catch.hpp>

#include "support/spec_literals.hpp"

using envkit::specs::Prereleases;
using envkit::specs::SpecSyntax;
using envkit::specs::Version;
using envkit::specs::VersionSpec;

using envkit::test::spec;
using envkit::test::v;

namespace {
std::vector<Version> versions(std::initializer_list<std::string_view> texts) {
  std::vector<Version> out;
  for (auto t : texts)
    out.push_back(v(t));
  return out;
}
std::vector<std::string> names(const std::vector<Version>& vs) {
  std::vector<std::string> out;
  for (const auto& x : vs)
    out.push_back(x.to_string());
  return out;
}
}  // namespace

TEST_CASE("the operators a GPU stack needs", "[specs][spec]") {
  CHECK(spec("==1.6.*").contains(v("1.6.0")));
  CHECK(spec("==1.6.*").contains(v("1.6")));
  CHECK_FALSE(spec("==1.6.*").contains(v("1.7.0")));
  CHECK(spec("!=1.6.*").contains(v("1.7.0")));
  CHECK(spec("~=8.9").contains(v("8.9.7.29")));
  CHECK_FALSE(spec("~=8.9").contains(v("9.0.0")));
  CHECK(spec(">=525.60.13").contains(v("550.54.15")));
  CHECK_FALSE(spec(">=525.60.13").contains(v("470.82.01")));
  CHECK(spec(">=2.1,<2.2").contains(v("2.1.2")));
  CHECK(spec("==2.1.2").contains(v("2.1.2+cu121")));
  CHECK_FALSE(spec("==2.1.2+cu118").contains(v("2.1.2+cu121")));
  CHECK(spec("===1.0").contains("1.0"));
  CHECK_FALSE(spec("===1.0").contains("1.0.0"));
}

TEST_CASE("<V and >V leave out V's own pre and post releases", "[specs][spec]") {
  CHECK_FALSE(spec("<2.0").contains(v("2.0rc1")));
  CHECK(spec("<2.0rc2").contains(v("2.0rc1")));
  CHECK_FALSE(spec(">1.0").contains(v("1.0.post1")));
  CHECK(spec(">1.0.post1").contains(v("1.0.post2")));
  CHECK_FALSE(spec(">1.0").contains(v("1.0+local")));
  CHECK(spec(">1.0").contains(v("1.0.1")));
}

TEST_CASE("pre-releases: excluded unless asked for or the only match", "[specs][spec]") {
  const auto candidates = versions({"2.0", "2.1rc1", "2.1"});
  CHECK(names(spec(">=2.0").filter(candidates)) == std::vector<std::string>{"2.0", "2.1"});
  CHECK(names(spec(">=2.1rc1").filter(candidates)) == std::vector<std::string>{"2.1rc1", "2.1"});
  CHECK(names(spec(">2.0").filter(versions({"2.0", "2.1rc1"}))) ==
        std::vector<std::string>{"2.1rc1"});
  CHECK(names(spec(">=2.0").filter(candidates, Prereleases::allow)) ==
        std::vector<std::string>{"2.0", "2.1rc1", "2.1"});
  CHECK(spec(">=2.0").filter(versions({"2.1rc1"}), Prereleases::exclude).empty());
  // One version on its own (packaging >= 26): inside the range is a match.
  CHECK(spec(">=2.0").contains(v("2.1rc1")));
  CHECK_FALSE(spec(">=2.0").contains(v("2.1rc1"), Prereleases::exclude));
}

TEST_CASE("envkit syntax: a bare version means its series", "[specs][spec]") {
  CHECK(spec("12.1", SpecSyntax::envkit).to_string() == "==12.1.*");
  CHECK(spec("7", SpecSyntax::envkit).to_string() == "==7.*");
  CHECK(spec("2.1.*", SpecSyntax::envkit).to_string() == "==2.1.*");
  CHECK(spec("1.0rc1", SpecSyntax::envkit).to_string() == "==1.0rc1");
  CHECK(spec(">=2.10,<2.11", SpecSyntax::envkit).to_string() == "<2.11,>=2.10");
  CHECK(spec("12.1", SpecSyntax::envkit).contains(v("12.1.105")));
  CHECK_FALSE(spec("12.1", SpecSyntax::envkit).contains(v("12.10")));
  CHECK(spec("550.54.15", SpecSyntax::envkit).contains(v("550.54.15")));
  // Strict PEP 440 refuses the bare form, with a hint.
  auto strict = VersionSpec::parse("12.1");
  REQUIRE_FALSE(strict);
  CHECK(strict.error().message() == "`12.1` is not a valid version specifier");
  CHECK(strict.error().causes().at(0) == "it has no operator");
  CHECK(strict.error().hints().at(0) ==
        "write `==12.1` for exactly that version, or `==12.1.*` for the series");
}

TEST_CASE("specifier errors explain themselves", "[specs][spec]") {
  const auto error_of = [](std::string_view text) {
    auto parsed = VersionSpec::parse(text);
    REQUIRE_FALSE(parsed);
    return parsed.error();
  };
  CHECK(error_of("~=2").causes().at(0) == "`~=` needs at least two release numbers");
  CHECK(error_of("~=2").hints().at(0) == "write `~=2.0` (>= that version, same major)");
  CHECK(error_of(">=1.0.*").causes().at(0) == "`.*` is only allowed with `==` and `!=`, not `>=`");
  CHECK(error_of("==1.0a1.*").causes().at(0) == "`.*` can only follow release numbers (`==1.6.*`)");
  CHECK(error_of("<=1.0+abc").causes().at(0) ==
        "a local version (`+abc`) is only allowed with `==` and `!=`");
  CHECK(error_of("<<13").message() == "`<<13` is not a valid version specifier");
  CHECK(error_of("<<13").causes().at(0) ==
        "`<13` is not a PEP 440 version: expected a release number at `<13`");
  CHECK(error_of(">=12.1,<<13").message() == "`<<13` is not a valid version specifier");
  CHECK(error_of("=1.0").causes().at(0) ==
        "it does not start with an operator (==, !=, <=, >=, <, >, ~=, ===)");
}

TEST_CASE("normalized form is sorted and de-duplicated", "[specs][spec]") {
  CHECK(spec(">=1.0RC1, <2").to_string() == "<2,>=1.0rc1");
  CHECK(spec(">=1.0,>=1.0.0").to_string() == ">=1.0");
  CHECK(spec("").to_string().empty());
  CHECK(spec("").contains(v("0.1")));
  CHECK((spec(">=1.0") & spec("<2")).to_string() == "<2,>=1.0");
  CHECK(VersionSpec::exactly(v("450.80.02")).contains(v("450.80.2")));
}
