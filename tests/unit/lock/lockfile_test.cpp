// Locks that parse and write: the canonical text, round trips, staleness.

#include "envkit/lock/lockfile.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"

namespace envkit::lock {
namespace {

using specs::Artifact;
using specs::ArtifactKind;
using specs::Layout;
using specs::Platform;

specs::Version v(std::string_view text) {
  return specs::Version::parse(text).value();
}

std::string hash(char digit) {
  return "sha256:" + std::string(64, digit);
}

Lockfile parsed(std::string_view text) {
  auto result = parse(text, "envkit.lock");
  INFO((result ? std::string() : result.error().to_string()));
  REQUIRE(result.ok());
  return std::move(result).value();
}

Artifact archive(Platform platform, std::string component, std::string url, char digit) {
  return {.platform = platform,
          .component = std::move(component),
          .kind = ArtifactKind::archive,
          .url = std::move(url),
          .sha256 = std::string(64, digit),
          .size = 1157180,
          .format = "tar.xz",
          .layout = Layout::nvidia_redist,
          .wheel_root = ""};
}

// A tensorflow-gpu 1.x stack on two platforms, as `envkit lock` would write it
// (already in canonical order).
Lockfile realistic() {
  const auto cuda_on = [](Platform platform) {
    const std::string p(specs::to_string(platform));
    const std::string redist = "https://developer.download.nvidia.com/compute/cuda/redist/";
    Artifact wheel{.platform = platform,
                   .component = "cuda_cudart",
                   .kind = ArtifactKind::wheel,
                   .url =
                       "https://files.pythonhosted.org/packages/nvidia_cuda_runtime_cu12-"
                       "12.4.127-py3-none-manylinux2014_x86_64.whl",
                   .sha256 = std::string(64, 'c'),
                   .size = {},
                   .format = "whl",
                   .layout = Layout::nvidia_wheel,
                   .wheel_root = "nvidia/cuda_runtime"};
    return LockedPackage{
        .name = "cuda",
        .version = v("12.4.1"),
        .build = "",
        .external = {},
        .requires_ = {},
        .artifacts = {
            archive(platform, "cuda_cudart",
                    redist + "cuda_cudart/" + p + "/cuda_cudart-" + p + "-12.4.127-archive.tar.xz",
                    'a'),
            wheel,
            archive(platform, "cuda_nvcc",
                    redist + "cuda_nvcc/" + p + "/cuda_nvcc-" + p + "-12.4.131-archive.tar.xz",
                    'b'),
        }};
  };
  const auto cudnn_on = [](Platform platform) {
    const std::string p(specs::to_string(platform));
    return LockedPackage{
        .name = "cudnn",
        .version = v("8.9.7.29"),
        .build = "cuda12",
        .external = {},
        .requires_ = {{"cuda", "<13,>=12"}, {"zlib", ""}},
        .artifacts = {archive(platform, "cudnn",
                              "https://developer.download.nvidia.com/compute/cudnn/redist/cudnn/" +
                                  p + "/cudnn-" + p + "-8.9.7.29_cuda12-archive.tar.xz",
                              'd')}};
  };
  const LockedPackage python{.name = "python",
                             .version = v("3.6.9"),
                             .build = "",
                             .external = "3.6.9",
                             .requires_ = {},
                             .artifacts = {}};
  const LockedPackage torch{.name = "torch",
                            .version = v("2.1.2"),
                            .build = "cu121",
                            .external = {},
                            .requires_ = {{"cuda", ">=12.1,<13"}, {"python", ">=3.8"}},
                            .artifacts = {}};
  const LockedPackage zlib{.name = "zlib",
                           .version = v("1.3.1"),
                           .build = "",
                           .external = {},
                           .requires_ = {},
                           .artifacts = {{.platform = Platform::linux_x86_64,
                                          .component = "zlib",
                                          .kind = ArtifactKind::source,
                                          .url = "http://zlib.net/fossils/zlib-1.3.1.tar.gz",
                                          .sha256 = std::string(64, 'e'),
                                          .size = 1512791,
                                          .format = "tar.gz",
                                          .layout = Layout::source_tree,
                                          .wheel_root = "",
                                          .build_system = specs::BuildSystem::cmake}}};
  Lockfile lock{.version = kFormatVersion,
                .manifest_hash = hash('1'),
                .recipes = {{"cuda", hash('2')},
                            {"cudnn", hash('3')},
                            {"torch", hash('4')},
                            {"zlib", hash('5')}},
                .system = {.source = envkit::specs::FactSource::manifest,
                           .driver = ">=450.80.02",
                           .cuda_arch = {{7, 0}, {8, 6}},
                           .glibc = ">=2.28"},
                .platforms = {}};
  lock.platforms.push_back(
      {.platform = Platform::linux_aarch64, .packages = {cuda_on(Platform::linux_aarch64)}});
  LockedPackage aarch64_zlib = zlib;
  aarch64_zlib.artifacts[0].platform = Platform::linux_aarch64;
  lock.platforms[0].packages.push_back(cudnn_on(Platform::linux_aarch64));
  lock.platforms[0].packages.push_back(python);
  lock.platforms[0].packages.push_back(torch);
  lock.platforms[0].packages.push_back(aarch64_zlib);
  lock.platforms.push_back({.platform = Platform::linux_x86_64,
                            .packages = {cuda_on(Platform::linux_x86_64),
                                         cudnn_on(Platform::linux_x86_64), python, torch, zlib}});
  return lock;
}

// ------------------------------------------------------------------- golden

constexpr std::string_view kSmallLock =
    R"(# envkit.lock: written by `envkit lock` from envkit.yaml. Do not edit by hand;
# rerun `envkit lock`. Format: docs/lockfile.md
version: 1
manifest-hash: "sha256:1111111111111111111111111111111111111111111111111111111111111111"
recipes:
  cudnn: "sha256:2222222222222222222222222222222222222222222222222222222222222222"
  zlib: "sha256:3333333333333333333333333333333333333333333333333333333333333333"
system:
  source: manifest
  driver: ">=390.30"
  cuda-arch: ["6.1", "7.0"]
platforms:
  - platform: linux-x86_64
    packages:
      - name: cudnn
        version: "8.9.7.29"
        build: cuda12
        requires:
          cuda: "<13,>=12"
          zlib: ""
        artifacts:
          - component: cudnn
            kind: wheel
            format: whl
            layout: nvidia-wheel
            wheel-root: nvidia/cudnn
            url: https://files.example/nvidia_cudnn_cu12-8.9.7.29-py3-none-manylinux1_x86_64.whl
            sha256: "4444444444444444444444444444444444444444444444444444444444444444"
      - name: python
        version: "3.6.9"
        external: "3.6.9"
      - name: zlib
        version: "1.3.1"
        artifacts:
          - component: zlib
            kind: source
            format: tar.gz
            layout: source-tree
            build-system: configure
            url: http://zlib.net/fossils/zlib-1.3.1.tar.gz
            sha256: "9a93b2b7dfdac77ceba5a558a580e74667dd6fede4585b91eefb60f03b72df23"
            size: 1512791
)";

Lockfile small() {
  return {
      .version = 1,
      .manifest_hash = hash('1'),
      .recipes = {{"zlib", hash('3')}, {"cudnn", hash('2')}},
      .system = {.source = envkit::specs::FactSource::manifest,
                 .driver = ">=390.30",
                 .cuda_arch = {{7, 0}, {6, 1}, {7, 0}}},
      .platforms = {{.platform = Platform::linux_x86_64,
                     .packages = {
                         {.name = "zlib",
                          .version = v("1.3.1"),
                          .artifacts = {{.platform = Platform::linux_x86_64,
                                         .component = "zlib",
                                         .kind = ArtifactKind::source,
                                         .url = "http://zlib.net/fossils/zlib-1.3.1.tar.gz",
                                         .sha256 = "9a93b2b7dfdac77ceba5a558a580e74667dd6fede4585b"
                                                   "91eefb60f03b72df23",
                                         .size = 1512791,
                                         .format = "tar.gz",
                                         .layout = Layout::source_tree,
                                         .build_system = specs::BuildSystem::configure}}},
                         {.name = "python", .version = v("3.6.9"), .external = "3.6.9"},
                         {.name = "cudnn",
                          .version = v("8.9.7.29"),
                          .build = "cuda12",
                          .requires_ = {{"zlib", ""}, {"cuda", "<13,>=12"}},
                          .artifacts = {{.platform = Platform::linux_x86_64,
                                         .component = "cudnn",
                                         .kind = ArtifactKind::wheel,
                                         .url = "https://files.example/nvidia_cudnn_cu12-8.9.7.29-"
                                                "py3-none-manylinux1_x86_64.whl",
                                         .sha256 = std::string(64, '4'),
                                         .format = "whl",
                                         .layout = Layout::nvidia_wheel,
                                         .wheel_root = "nvidia/cudnn"}}},
                     }}}};
}

TEST_CASE("a small lock writes exactly the canonical text", "[lock][write]") {
  CHECK(write(small()) == kSmallLock);
}

TEST_CASE("the canonical text parses back to the same lock", "[lock][parse]") {
  Lockfile expected = small();
  canonicalize(expected);
  const Lockfile read = parsed(kSmallLock);
  CHECK(read == expected);
  CHECK(read.platforms[0].packages[0].version.original() == "8.9.7.29");
  CHECK(read.platforms[0].packages[0].requires_.at("zlib").empty());
}

// ---------------------------------------------------------------- round trip

TEST_CASE("a multi-platform lock round-trips through its text", "[lock][parse][write]") {
  const Lockfile lock = realistic();
  const std::string text = write(lock);
  const Lockfile read = parsed(text);
  CHECK(read == lock);
  CHECK(write(read) == text);

  const auto& x86 = read.platforms.at(1);
  REQUIRE(x86.platform == Platform::linux_x86_64);
  const auto& cuda = x86.packages.at(0);
  REQUIRE(cuda.artifacts.size() == 3);
  // Sorted by (component, kind, url): the cudart archive, the cudart wheel, nvcc.
  CHECK(cuda.artifacts[1].kind == ArtifactKind::wheel);
  CHECK(cuda.artifacts[1].wheel_root == "nvidia/cuda_runtime");
  CHECK_FALSE(cuda.artifacts[1].size.has_value());
  for (const auto& artifact : cuda.artifacts)
    CHECK(artifact.platform == Platform::linux_x86_64);
  CHECK(read.platforms[0].packages[0].artifacts[0].platform == Platform::linux_aarch64);
  CHECK(x86.packages.at(2).external == "3.6.9");
  CHECK(x86.packages.at(3).build == "cu121");
  CHECK(read.system.driver == ">=450.80.02");
}

TEST_CASE("versions keep the spelling they were locked with", "[lock][parse][write]") {
  Lockfile lock = small();
  lock.platforms[0].packages[0].version = v("450.80.02");
  const std::string text = write(lock);
  CHECK_THAT(text, Catch::Contains("        version: \"450.80.02\"\n"));
  CHECK(parsed(text).platforms[0].packages.at(2).version.original() == "450.80.02");
}

TEST_CASE("the text does not depend on the order values came in", "[lock][write]") {
  const Lockfile lock = realistic();
  Lockfile shuffled = lock;
  std::reverse(shuffled.platforms.begin(), shuffled.platforms.end());
  for (auto& platform : shuffled.platforms) {
    std::reverse(platform.packages.begin(), platform.packages.end());
    for (auto& package : platform.packages)
      std::reverse(package.artifacts.begin(), package.artifacts.end());
  }
  shuffled.system.cuda_arch = {{8, 6}, {7, 0}, {8, 6}};
  REQUIRE_FALSE(shuffled == lock);
  CHECK(write(shuffled) == write(lock));
  canonicalize(shuffled);
  CHECK(shuffled == lock);
}

TEST_CASE("optional keys are left out, empty lists written empty", "[lock][write]") {
  Lockfile lock{.version = 1,
                .manifest_hash = hash('1'),
                .recipes = {},
                .system = {.source = envkit::specs::FactSource::none},
                .platforms = {{.platform = Platform::windows_x86_64, .packages = {}}}};
  const std::string text = write(lock);
  CHECK_THAT(text, Catch::EndsWith("recipes: {}\nsystem:\n  source: none\nplatforms:\n"
                                   "  - platform: windows-x86_64\n    packages: []\n"));
  CHECK(parsed(text) == lock);
}

TEST_CASE("credentials in URLs are never written", "[lock][write]") {
  Lockfile lock = small();
  lock.platforms[0].packages[0].artifacts[0].url =
      "https://user:secret@mirror.example/zlib-1.3.1.tar.gz";
  const std::string text = write(lock);
  CHECK_THAT(text, !Catch::Contains("secret"));
  CHECK_THAT(text, !Catch::Contains("user"));
  CHECK_THAT(text, Catch::Contains("            url: https://mirror.example/zlib-1.3.1.tar.gz\n"));
  CHECK(parsed(text).platforms[0].packages[2].artifacts[0].url ==
        "https://mirror.example/zlib-1.3.1.tar.gz");
}

TEST_CASE("keys may come in any order and hashes unquoted", "[lock][parse]") {
  const Lockfile read = parsed(R"(platforms:
  - packages:
      - version: 1.3.1
        name: zlib
    platform: linux-x86_64
system: { source: host }
recipes:
  zlib: sha256:3333333333333333333333333333333333333333333333333333333333333333
manifest-hash: sha256:1111111111111111111111111111111111111111111111111111111111111111
version: 1
)");
  CHECK(read.manifest_hash == hash('1'));
  CHECK(read.recipes.at("zlib") == hash('3'));
  CHECK(read.system.source == envkit::specs::FactSource::host);
  CHECK(read.platforms.at(0).packages.at(0).version.original() == "1.3.1");
}

// ------------------------------------------------------------------- load

TEST_CASE("load reads a file and names it in errors", "[lock][load]") {
  const test::TempDir dir;
  const auto good = dir.write("good/envkit.lock", kSmallLock);
  auto read = load(good);
  REQUIRE(read.ok());
  CHECK(write(*read) == kSmallLock);

  const auto bad = dir.write("bad/envkit.lock", "version: 1\nmanifest-hsh: x\n");
  auto error = load(bad);
  REQUIRE_FALSE(error.ok());
  CHECK(error.error().headline() == bad.string() + ":2:1: unknown key `manifest-hsh`");
}

TEST_CASE("a missing lock file says to run envkit lock", "[lock][load]") {
  const test::TempDir dir;
  const auto path = dir.path() / "envkit.lock";
  auto read = load(path);
  REQUIRE_FALSE(read.ok());
  CHECK(read.error().code() == ErrorCode::input);
  CHECK(read.error().headline() == path.string() + " does not exist");
  CHECK(read.error().hints() == std::vector<std::string>{"run `envkit lock` to write it"});
}

// ---------------------------------------------------------------- staleness

TEST_CASE("a lock made from the current inputs is fresh", "[lock][compare]") {
  const Lockfile lock = small();
  const Staleness fresh = compare(lock, hash('1'), lock.recipes);
  CHECK_FALSE(fresh.stale());
  CHECK(fresh.reasons.empty());
}

TEST_CASE("staleness names the manifest and each recipe, in order", "[lock][compare]") {
  Lockfile lock = small();
  lock.recipes = {{"cuda", hash('2')}, {"cudnn", hash('3')}, {"zlib", hash('4')}};
  const std::map<std::string, std::string> current = {
      {"cuda", hash('9')}, {"cudnn", hash('3')}, {"python", hash('5')}};
  const Staleness stale = compare(lock, hash('8'), current);
  CHECK(stale.stale());
  CHECK(stale.reasons ==
        std::vector<std::string>{
            "the manifest changed since the lock was written (envkit.yaml content hash differs)",
            "recipe `cuda` changed in the recipe database",
            "recipe `python` is new",
            "recipe `zlib` is no longer in the recipe database",
        });
}

TEST_CASE("only the recipes that differ are named", "[lock][compare]") {
  const Lockfile lock = small();
  auto current = lock.recipes;
  current["zlib"] = hash('7');
  const Staleness stale = compare(lock, lock.manifest_hash, current);
  CHECK(stale.reasons == std::vector<std::string>{"recipe `zlib` changed in the recipe database"});
}

}  // namespace
}  // namespace envkit::lock
