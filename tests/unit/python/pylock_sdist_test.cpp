// parse_pylock() with packages that exist only as source distributions:
// tensorflow-gpu 1.6.0 on Python 3.6 pulls html5lib 0.9999999 and termcolor
// 1.1.0, which have no wheel on PyPI. The sdist is taken when no wheel fits;
// a wheel always wins.
#include <catch2/catch.hpp>
#include <string>

#include "envkit/python/uv.hpp"

namespace {

namespace python = envkit::python;
using envkit::ErrorCode;
using envkit::python::Distribution;
using envkit::python::UvPlatform;
using envkit::specs::Version;

const std::string kSha(64, 'a');
const std::string kOtherSha(64, 'b');

python::ResolveTarget py36_linux() {
  return {.python = Version::parse("3.6.9").value(), .platform = UvPlatform::linux_x86_64};
}

// A pylock.toml of one package with the given `wheels = [...]` / `sdist = {...}` lines.
std::string pylock(const std::string& name, const std::string& version,
                   const std::string& sources) {
  return "lock-version = \"1.0\"\ncreated-by = \"uv\"\n[[packages]]\nname = \"" + name +
         "\"\nversion = \"" + version + "\"\n" + sources;
}

std::string sdist_line(const std::string& file, const std::string& sha = kSha) {
  return "sdist = { url = \"https://files.test/" + file + "\", size = 889, hashes = { sha256 = \"" +
         sha + "\" } }\n";
}

std::string wheels_line(const std::vector<std::string>& files) {
  std::string line = "wheels = [";
  for (const auto& file : files) {
    line += "{ url = \"https://files.test/" + file + "\", hashes = { sha256 = \"" + kOtherSha +
            "\" } }, ";
  }
  return line + "]\n";
}

}  // namespace

TEST_CASE("parse_pylock() takes the sdist of a package that has no wheel", "[python][uv][sdist]") {
  auto closure =
      python::parse_pylock(pylock("html5lib", "0.9999999", sdist_line("html5lib-0.9999999.tar.gz")),
                           "pylock.toml", py36_linux());
  REQUIRE(closure);
  REQUIRE(closure->wheels.size() == 1);
  const auto& package = closure->wheels[0];
  CHECK(package.name == "html5lib");
  CHECK(package.version == "0.9999999");
  CHECK(package.kind == Distribution::sdist);
  CHECK(package.url == "https://files.test/html5lib-0.9999999.tar.gz");
  CHECK(package.sha256 == kSha);
  CHECK(package.size == 889U);
}

TEST_CASE("parse_pylock() prefers a fitting wheel to the sdist", "[python][uv][sdist]") {
  SECTION("a wheel that fits wins") {
    auto closure =
        python::parse_pylock(pylock("termcolor", "1.1.0",
                                    sdist_line("termcolor-1.1.0.tar.gz") +
                                        wheels_line({"termcolor-1.1.0-py2.py3-none-any.whl"})),
                             "pylock.toml", py36_linux());
    REQUIRE(closure);
    CHECK(closure->wheels[0].kind == Distribution::wheel);
    CHECK(closure->wheels[0].url == "https://files.test/termcolor-1.1.0-py2.py3-none-any.whl");
    CHECK(closure->wheels[0].sha256 == kOtherSha);
  }
  SECTION("a lone wheel that does not fit loses to the sdist") {
    auto closure = python::parse_pylock(
        pylock("numpy", "1.19.5",
               sdist_line("numpy-1.19.5.zip") +
                   wheels_line({"numpy-1.19.5-cp39-cp39-manylinux2010_x86_64.whl"})),
        "pylock.toml", py36_linux());
    REQUIRE(closure);
    CHECK(closure->wheels[0].kind == Distribution::sdist);
    CHECK(closure->wheels[0].url == "https://files.test/numpy-1.19.5.zip");
  }
}

TEST_CASE("parse_pylock() reads an sdist's version from its file name when the lock omits it",
          "[python][uv][sdist]") {
  auto closure =
      python::parse_pylock("lock-version = \"1.0\"\n[[packages]]\nname = \"termcolor\"\n" +
                               sdist_line("termcolor-1.1.0.tar.bz2"),
                           "pylock.toml", py36_linux());
  REQUIRE(closure);
  CHECK(closure->wheels[0].version == "1.1.0");
  CHECK(closure->wheels[0].kind == Distribution::sdist);
}

TEST_CASE("parse_pylock() refuses an sdist that is not a source archive or has no sha256",
          "[python][uv][sdist]") {
  SECTION("not an archive") {
    auto closure = python::parse_pylock(pylock("foo", "1.0", sdist_line("foo-1.0.exe")),
                                        "pylock.toml", py36_linux());
    REQUIRE_FALSE(closure);
    CHECK(closure.error().code() == ErrorCode::input);
    CHECK(closure.error().message() ==
          "`pylock.toml`: packages[0] (`foo` 1.0): `https://files.test/foo-1.0.exe` is not a "
          "source distribution (.tar.gz, .zip)");
  }
  SECTION("no sha256") {
    auto closure = python::parse_pylock(
        pylock("foo", "1.0", "sdist = { url = \"https://files.test/foo-1.0.tar.gz\" }\n"),
        "pylock.toml", py36_linux());
    REQUIRE_FALSE(closure);
    CHECK(closure.error().message() ==
          "`pylock.toml`: packages[0] (`foo` 1.0): `https://files.test/foo-1.0.tar.gz` has no "
          "sha256");
  }
}
