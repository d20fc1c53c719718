// The `python:` section of a platform: the Python closure, written canonically,
// read back, and refused with file:line:column when broken.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "envkit/lock/lockfile.hpp"

namespace envkit::lock {
namespace {

using Catch::Matchers::Contains;

const std::string kHashA(64, 'a');
const std::string kHashB(64, 'b');

Lockfile closure_lock() {
  Lockfile lockfile;
  lockfile.manifest_hash = "sha256:" + std::string(64, '1');
  lockfile.system.source = "none";
  PlatformLock platform;
  platform.python = PythonClosure{
      .inputs = "sha256:" + std::string(64, '2'),
      .resolver = "pip 23.2.1 (CPython 3.11.7)",
      .python = "3.11.7",
      // Out of order on purpose: the writer sorts by name.
      .packages = {
          {.name = "torch",
           .version = "2.4.1",
           .url = "https://user:secret@files.example/torch-2.4.1-cp311-cp311-linux_x86_64.whl",
           .sha256 = kHashA,
           .size = std::nullopt,
           .provides = {}},
          {.name = "nvidia-cudnn-cu12",
           .version = "9.1.0.70",
           .url = "https://files.example/nvidia_cudnn_cu12-9.1.0.70-py3-none-any.whl",
           .sha256 = kHashB,
           .size = 664,
           .provides = "cudnn"}}};
  lockfile.platforms.push_back(platform);
  return lockfile;
}

TEST_CASE("a Python closure is written in order, without credentials, and read back",
          "[lock][python]") {
  const auto text = write(closure_lock());
  CHECK(text.find("nvidia-cudnn-cu12") < text.find("name: torch"));
  CHECK_THAT(text, !Contains("secret"));
  CHECK_THAT(text, Contains("          provides: cudnn\n"));
  CHECK_THAT(text, Contains("      resolver: pip 23.2.1 (CPython 3.11.7)\n"));
  auto parsed = parse(text, "envkit.lock");
  REQUIRE(parsed);
  REQUIRE(parsed->platforms.at(0).python);
  const auto& wheels = parsed->platforms[0].python->packages;
  REQUIRE(wheels.size() == 2);
  CHECK(wheels[0].name == "nvidia-cudnn-cu12");
  CHECK(wheels[0].size == 664);
  CHECK(wheels[1].url == "https://files.example/torch-2.4.1-cp311-cp311-linux_x86_64.whl");
  CHECK(write(*parsed) == text);  // canonical: the same bytes again
}

TEST_CASE("a broken Python closure is refused where it is broken", "[lock][python]") {
  const auto text = write(closure_lock());
  const auto broken = [&](std::string_view from, std::string_view to) {
    std::string changed = text;
    const auto at = changed.find(from);
    REQUIRE(at != std::string::npos);
    changed.replace(at, from.size(), to);
    auto result = parse(changed, "envkit.lock");
    REQUIRE_FALSE(result);
    CHECK(result.error().code() == ErrorCode::input);
    return result.error();
  };
  SECTION("a wheel without a hash") {
    const auto error = broken("          sha256: \"" + kHashB + "\"\n", "");
    CHECK_THAT(error.message(), Contains("needs `sha256:`"));
  }
  SECTION("a package twice") {
    const auto error = broken("name: torch", "name: nvidia-cudnn-cu12");
    CHECK_THAT(error.message(), Contains("duplicate Python package `nvidia-cudnn-cu12`"));
  }
  SECTION("an unknown key") {
    const auto error = broken("provides:", "provide:");
    CHECK_THAT(error.message(), Contains("unknown key `provide`"));
    CHECK(error.hints() == std::vector<std::string>{"did you mean `provides`?"});
  }
  SECTION("credentials in a URL") {
    const auto error = broken("https://files.example/torch", "https://user:pw@files.example/torch");
    CHECK_THAT(error.message(), Contains("holds credentials"));
  }
  SECTION("no inputs hash") {
    const auto error = broken("      inputs: \"sha256:" + std::string(64, '2') + "\"\n", "");
    CHECK_THAT(error.message(), Contains("needs `inputs:`"));
  }
}

}  // namespace
}  // namespace envkit::lock
