// `also-at:` in a lock: other URLs of an artifact's file, and the format that holds them.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "envkit/lock/lockfile.hpp"

namespace envkit::lock::also_at_test {
namespace {

using Catch::Matchers::Contains;

constexpr std::string_view kSha =
    "3c2034c54f811448f516668dce09d24008a0716c3a794dd8639b5388cbde247d";

Lockfile python_source_lock(std::vector<std::string> also_at) {
  Lockfile lock{.manifest_hash = "sha256:" + std::string(64, '1'),
                .recipes = {{"python", "sha256:" + std::string(64, '2')}},
                .system = {.source = specs::FactSource::none}};
  lock.platforms.push_back(
      {.platform = specs::Platform::linux_x86_64,
       .packages = {{.name = "python",
                     .version = specs::Version::parse("3.9.2").value(),
                     .artifacts = {{.component = "python",
                                    .kind = specs::ArtifactKind::source,
                                    .url = "https://www.python.org/ftp/python/3.9.2/"
                                           "Python-3.9.2.tar.xz",
                                    .sha256 = std::string(kSha),
                                    .size = 18889164,
                                    .format = "tar.xz",
                                    .layout = specs::Layout::source_tree,
                                    .build_system = specs::BuildSystem::cpython,
                                    .also_at = std::move(also_at)}}}}});
  return lock;
}

}  // namespace

TEST_CASE("a lock with also-at URLs is format 2 and reads back the same", "[lock]") {
  const auto lock = python_source_lock(
      {"https://deb.debian.org/debian/pool/main/p/python3.9/python3.9_3.9.2.orig.tar.xz"});
  const auto text = write(lock);
  CHECK_THAT(text, Contains("\nversion: 2\n"));
  CHECK_THAT(
      text,
      Contains("            url: https://www.python.org/ftp/python/3.9.2/Python-3.9.2.tar.xz\n"
               "            also-at:\n"
               "              - https://deb.debian.org/debian/pool/main/p/python3.9/"
               "python3.9_3.9.2.orig.tar.xz\n"
               "            sha256: \"3c2034c5"));
  auto read = parse(text, "envkit.lock");
  REQUIRE(read.ok());
  CHECK(read->version == 2);
  CHECK(read->platforms.front().packages.front().artifacts.front().also_at ==
        lock.platforms.front().packages.front().artifacts.front().also_at);
  CHECK(write(*read) == text);
}

TEST_CASE("a lock without also-at stays format 1, which older envkits read", "[lock]") {
  const auto text = write(python_source_lock({}));
  CHECK_THAT(text, Contains("\nversion: 1\n"));
  CHECK_THAT(text, !Contains("also-at"));
  CHECK(format_needed(python_source_lock({})) == 1);
}

TEST_CASE("an also-at URL with credentials is refused like a url", "[lock]") {
  auto text = write(python_source_lock({"https://deb.debian.org/debian/x.orig.tar.xz"}));
  const auto at = text.find("https://deb.debian.org");
  text.insert(at + std::string_view("https://").size(), "user:secret@");
  const auto read = parse(text, "envkit.lock");
  REQUIRE_FALSE(read.ok());
  CHECK_THAT(read.error().to_string(), Contains("holds credentials"));
  CHECK_THAT(read.error().to_string(), !Contains("secret"));
}

}  // namespace envkit::lock::also_at_test
