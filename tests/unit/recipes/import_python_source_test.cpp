// pyenv's python-build definitions -> python recipe versions with a source artifact.
#include "envkit/recipes/import_python_source.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "recipes_test_support.hpp"

using envkit::recipes::ArtifactKind;
using envkit::recipes::BuildSystem;
using envkit::recipes::import_python_source;
using envkit::recipes::Layout;
using envkit::recipes::Recipe;
using envkit::recipes::SourceText;
using envkit::specs::Platform;
using envkit::specs::Version;

namespace {

constexpr std::string_view kXzHash =
    "91923007b05005b5f9bd46f3b9172248aea5abc1543e8a636d59e629c3331b01";
constexpr std::string_view kTgzHash =
    "39b018bc7d8a165e59aa827d9ae45c45901739b0bbb13721e4f973f3521c166a";

// pyenv's shape: OpenSSL/readline lines for macOS, then the Python tarball
// twice (xz when tar reads it, else tgz).
const std::string kWithXz = std::string(R"(prefer_openssl11
install_package "openssl-1.1.1k" "https://www.openssl.org/source/openssl-1.1.1k.tar.gz#892a0875b9872acd04a9fde79b1f943075d5ea162415de3047c327df33fbaee5" mac_openssl --if has_broken_mac_openssl
if has_tar_xz_support; then
  install_package "Python-3.7.9" "https://www.python.org/ftp/python/3.7.9/Python-3.7.9.tar.xz#)") +
                            std::string(kXzHash) + R"(" standard verify_py37 ensurepip
else
  install_package "Python-3.7.9" "https://www.python.org/ftp/python/3.7.9/Python-3.7.9.tgz#)" +
                            std::string(kTgzHash) + R"(" standard verify_py37 ensurepip
fi
)";

const std::string kTgzOnly =
    std::string(
        R"(install_package "Python-3.5.0" "https://www.python.org/ftp/python/3.5.0/Python-3.5.0.tgz#)") +
    std::string(kTgzHash) + "\" standard verify_py35 ensurepip\n";

std::string python_line(std::string_view version, std::string_view hash) {
  return "install_package \"Python-" + std::string(version) +
         "\" \"https://www.python.org/ftp/python/x/Python-" + std::string(version) + ".tar.xz#" +
         std::string(hash) + "\" standard\n";
}

}  // namespace

TEST_CASE("pyenv: the .tar.xz is preferred, its hash from the URL's fragment", "[other][pyenv]") {
  const std::vector<SourceText> definitions = {{.text = kWithXz, .file = "defs/3.7.9"}};
  auto recipe = import_python_source(definitions, "github.com/pyenv/pyenv@abc:defs");
  INFO((recipe ? "" : recipe.error().to_string()));
  REQUIRE(recipe);
  CHECK(recipe->name == "python");
  CHECK(recipe->sources == std::vector<std::string>{"github.com/pyenv/pyenv@abc:defs"});
  REQUIRE(recipe->versions.size() == 1);
  const auto& build = recipe->versions[0].builds.at(0);
  CHECK(build.platforms == std::vector<Platform>{Platform::linux_x86_64});
  REQUIRE(build.artifacts.size() == 1);
  const auto& artifact = build.artifacts[0];
  CHECK(artifact.url == "https://www.python.org/ftp/python/3.7.9/Python-3.7.9.tar.xz");
  CHECK(artifact.sha256 == kXzHash);
  CHECK(artifact.format == "tar.xz");
  CHECK(artifact.kind == ArtifactKind::source);
  CHECK(artifact.layout == Layout::source_tree);
  CHECK(artifact.build_system == BuildSystem::cpython);
  CHECK(artifact.component == "python");
}

TEST_CASE("pyenv: a definition with only a .tgz gives the .tgz", "[other][pyenv]") {
  const std::vector<SourceText> definitions = {{.text = kTgzOnly, .file = "3.5.0"}};
  auto recipe = import_python_source(definitions, "p");
  REQUIRE(recipe);
  REQUIRE(recipe->versions.size() == 1);
  const auto& artifact = recipe->versions[0].builds.at(0).artifacts.at(0);
  CHECK(artifact.url == "https://www.python.org/ftp/python/3.5.0/Python-3.5.0.tgz");
  CHECK(artifact.format == "tgz");
  CHECK(artifact.sha256 == kTgzHash);
}

TEST_CASE("pyenv: pre-releases, -dev, free-threaded, debug and other series are skipped",
          "[other][pyenv]") {
  const std::vector<std::string> names = {"3.15.0b4",     "3.14.0t", "3.7-dev", "3.13t-dev",
                                          "3.6.15-debug", "3.4.10",  "2.7.18",  "3.15.0",
                                          "3.8.0rc1",     "3.10.0",  "3.6.15"};
  std::vector<std::string> texts;
  for (const auto& name : names)
    texts.push_back(python_line(name, kXzHash));
  std::vector<SourceText> definitions;
  for (std::size_t i = 0; i < names.size(); ++i)
    definitions.push_back({.text = texts[i], .file = names[i]});
  // A -dev definition installs from git, with no hash at all.
  const std::string dev =
      "install_git \"Python-3.9-dev\" \"https://github.com/python/cpython\" 3.9\n";
  definitions.push_back({.text = dev, .file = "3.9-dev"});
  auto recipe = import_python_source(definitions, "p");
  INFO((recipe ? "" : recipe.error().to_string()));
  REQUIRE(recipe);
  CHECK(envkit::test::versions_of(*recipe) == std::vector<std::string>{"3.6.15", "3.10.0"});
}

TEST_CASE("pyenv: a bad hash or another release's tarball is an error at file:line:column",
          "[other][pyenv]") {
  const std::string bad_hash = "# comment\n" + python_line("3.7.9", "NOTAHASH");
  const std::vector<SourceText> bad = {{.text = bad_hash, .file = "defs/3.7.9"}};
  auto result = import_python_source(bad, "p");
  REQUIRE_FALSE(result);
  CHECK(result.error().headline() == "defs/3.7.9:2:89: `NOTAHASH` is not a lowercase hex sha256");

  const std::string other = python_line("3.7.8", kXzHash);
  const std::vector<SourceText> mismatch = {{.text = other, .file = "defs/3.7.9"}};
  result = import_python_source(mismatch, "p");
  REQUIRE_FALSE(result);
  CHECK(result.error().headline() ==
        "defs/3.7.9:1:33: the definition of 3.7.9 installs `Python-3.7.8`");
}
