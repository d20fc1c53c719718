// A Python closure's source builds in the project's era: `build-as-of` and
// `built-with-framework` written, read back, and only in a lock that has them (format 2).

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "envkit/lock/lockfile.hpp"

namespace envkit::lock {
namespace {

using Catch::Matchers::Contains;

Lockfile lock_with_builds(std::string as_of, std::vector<std::string> with_framework) {
  Lockfile lockfile;
  lockfile.manifest_hash = "sha256:" + std::string(64, '1');
  lockfile.system.source = envkit::specs::FactSource::none;
  PlatformLock platform;
  platform.python =
      PythonClosure{.inputs = "sha256:" + std::string(64, '2'),
                    .resolver = "uv 0.13.9 (for CPython 3.11.7, x86_64-manylinux_2_28)",
                    .python = "3.11.7",
                    .packages = {{.name = "mmcv",
                                  .version = "2.2.0",
                                  .kind = Distribution::sdist,
                                  .url = "https://files.example/mmcv-2.2.0.tar.gz",
                                  .sha256 = std::string(64, 'a'),
                                  .size = std::nullopt,
                                  .provides = {}}},
                    .build_as_of = std::move(as_of),
                    .built_with_framework = std::move(with_framework)};
  lockfile.platforms.push_back(platform);
  return lockfile;
}

TEST_CASE("a closure's build horizon and framework builds are written and read back",
          "[lock][python][builds]") {
  const auto text = write(lock_with_builds("2024-04-24", {"mmcv"}));
  CHECK_THAT(text, Contains("version: 2\n"));
  CHECK_THAT(text, Contains("      python: \"3.11.7\"\n      build-as-of: "));
  CHECK_THAT(text, Contains("2024-04-24"));
  CHECK_THAT(text, Contains("      built-with-framework: [mmcv]\n"));
  auto parsed = parse(text, "envkit.lock");
  INFO((parsed ? "" : parsed.error().to_string()));
  REQUIRE(parsed);
  const auto& closure = parsed->platforms.at(0).python;
  REQUIRE(closure);
  CHECK(closure->build_as_of == "2024-04-24");
  CHECK(closure->built_with_framework == std::vector<std::string>{"mmcv"});
  CHECK(write(*parsed) == text);
}

TEST_CASE("a closure built with today's tools writes neither key, in format 1",
          "[lock][python][builds]") {
  const auto text = write(lock_with_builds("", {}));
  CHECK_THAT(text, Contains("version: 1\n"));
  CHECK_THAT(text, !Contains("build-as-of"));
  CHECK_THAT(text, !Contains("built-with-framework"));
}

TEST_CASE("a malformed built-with-framework is an error at its line", "[lock][python][builds]") {
  auto text = write(lock_with_builds("2024-04-24", {"mmcv"}));
  const auto at = text.find("[mmcv]");
  REQUIRE(at != std::string::npos);
  text.replace(at, 6, "[{a: b}]");
  const auto parsed = parse(text, "envkit.lock");
  REQUIRE_FALSE(parsed);
  CHECK_THAT(parsed.error().headline(), Contains("`python.built-with-framework`"));
  CHECK_THAT(parsed.error().headline(), Contains("envkit.lock:"));
}

}  // namespace
}  // namespace envkit::lock
