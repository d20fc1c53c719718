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
  lockfile.system.source = envkit::specs::FactSource::none;
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
  SECTION("a kind that is neither wheel nor sdist") {
    const auto error = broken("          version: \"2.4.1\"\n",
                              "          version: \"2.4.1\"\n          kind: egg\n");
    CHECK_THAT(error.message(), Contains("`kind`: expected wheel or sdist"));
  }
}

// html5lib 0.9999999 has no wheel: the closure holds its source distribution.
Lockfile sdist_lock() {
  auto lockfile = closure_lock();
  lockfile.platforms[0].python->packages.push_back(
      {.name = "html5lib",
       .version = "0.9999999",
       .kind = Distribution::sdist,
       .url = "https://files.example/html5lib-0.9999999.tar.gz",
       .sha256 = std::string(64, 'c'),
       .size = 889,
       .provides = {}});
  return lockfile;
}

TEST_CASE("an sdist in the closure is written as `kind: sdist` and read back", "[lock][python]") {
  const auto text = write(sdist_lock());
  CHECK_THAT(text, Contains("        - name: html5lib\n"
                            "          version: \"0.9999999\"\n"
                            "          kind: sdist\n"
                            "          url: https://files.example/html5lib-0.9999999.tar.gz\n"));
  // Wheels, the usual kind, go unsaid: a lock without sdists reads as before.
  CHECK(text.find("kind: wheel") == std::string::npos);
  CHECK(text.find("kind:") == text.rfind("kind:"));
  const auto html5lib = sdist_lock().platforms[0].python->packages.back();
  auto parsed = parse(text, "envkit.lock");
  REQUIRE(parsed);
  const auto& packages = parsed->platforms.at(0).python->packages;
  REQUIRE(packages.size() == 3);
  CHECK(packages[0] == html5lib);  // sorted by name: html5lib, nvidia-cudnn-cu12, torch
  CHECK(packages[1].kind == Distribution::wheel);
  CHECK(write(*parsed) == text);

  SECTION("`kind: wheel` written out reads as a wheel") {
    std::string spelled = text;
    const std::string torch = "          version: \"2.4.1\"\n";
    spelled.replace(spelled.find(torch), torch.size(), torch + "          kind: wheel\n");
    auto reread = parse(spelled, "envkit.lock");
    REQUIRE(reread);
    CHECK(*reread == *parsed);
  }
}

TEST_CASE("a closure package becomes the artifact install downloads", "[lock][python]") {
  const auto lockfile = sdist_lock();
  const auto& packages = lockfile.platforms[0].python->packages;
  const auto wheel = wheel_artifact(packages[1], specs::Platform::linux_x86_64);  // cudnn
  CHECK(wheel.kind == specs::ArtifactKind::wheel);
  CHECK(wheel.format == "whl");
  CHECK(wheel.layout == specs::Layout::none);
  const auto sdist = wheel_artifact(packages[2], specs::Platform::linux_x86_64);  // html5lib
  CHECK(sdist.kind == specs::ArtifactKind::source);
  CHECK(sdist.format == "sdist");
  CHECK(sdist.layout == specs::Layout::none);
  CHECK(sdist.component == "html5lib");
  CHECK(sdist.sha256 == std::string(64, 'c'));
  CHECK(sdist.size == 889U);
}

}  // namespace
}  // namespace envkit::lock
