// Locks that do not parse: the exact error a user sees, with file:line:column.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "envkit/lock/lockfile.hpp"

namespace envkit::lock {
namespace {

using Strings = std::vector<std::string>;

// A valid lock; each test breaks one line of it.
constexpr std::string_view kLock =
    R"(# envkit.lock: written by `envkit lock` from envkit.yaml. Do not edit by hand;
# rerun `envkit lock`. Format: docs/lockfile.md
version: 1
manifest-hash: "sha256:1111111111111111111111111111111111111111111111111111111111111111"
recipes:
  zlib: "sha256:3333333333333333333333333333333333333333333333333333333333333333"
system:
  source: manifest
  cuda-arch: ["6.1", "7.0"]
platforms:
  - platform: linux-x86_64
    packages:
      - name: zlib
        version: "1.3.1"
        artifacts:
          - component: zlib
            kind: source
            format: tar.gz
            layout: source-tree
            url: http://zlib.net/fossils/zlib-1.3.1.tar.gz
            sha256: "9a93b2b7dfdac77ceba5a558a580e74667dd6fede4585b91eefb60f03b72df23"
            size: 1512791
)";

// kLock with the first `from` replaced by `to`.
std::string with(std::string_view from, std::string_view to) {
  std::string text(kLock);
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

Error error_for(std::string_view text) {
  auto result = parse(text, "envkit.lock");
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().code() == ErrorCode::input);
  return result.error();
}

TEST_CASE("the lock the error tests break is valid", "[lock][errors]") {
  auto result = parse(kLock, "envkit.lock");
  INFO((result ? std::string() : result.error().to_string()));
  REQUIRE(result.ok());
  CHECK(write(*result) == kLock);
}

TEST_CASE("malformed YAML is located", "[lock][errors]") {
  // Located at the bracket, not at the next line where the parser notices.
  const Error error = error_for(with("[\"6.1\", \"7.0\"]", "[\"6.1\", \"7.0\""));
  CHECK(error.headline() == "envkit.lock:9:14: invalid YAML: `[` is not closed by `]`");
}

TEST_CASE("an unknown key suggests the known one", "[lock][errors]") {
  const Error top = error_for(with("manifest-hash:", "manifest-hsh:"));
  CHECK(top.headline() == "envkit.lock:4:1: unknown key `manifest-hsh`");
  CHECK(top.hints() == Strings{"did you mean `manifest-hash`?"});

  const Error nested = error_for(std::string(kLock) + "            wheel_root: nvidia/zlib\n");
  CHECK(nested.headline() == "envkit.lock:23:13: unknown key `wheel_root` in `artifacts`");
  CHECK(nested.hints() == Strings{"did you mean `wheel-root`?"});

  const Error far = error_for(with("  source: manifest", "  source: manifest\n  gpu: a100"));
  CHECK(far.headline() == "envkit.lock:9:3: unknown key `gpu` in `system`");
  CHECK(far.hints() == Strings{"the keys of `system` are `source`, `driver`, `cuda-arch` and "
                               "`glibc`"});
}

TEST_CASE("a missing key is named", "[lock][errors]") {
  const Error top = error_for(with("version: 1\n", ""));
  CHECK(top.headline() == "envkit.lock: a lock needs `version:`");

  const Error artifact = error_for(with("            format: tar.gz\n", ""));
  CHECK(artifact.headline() == "envkit.lock:16:13: an artifact needs `format:`");
}

TEST_CASE("a sha256 must be 64 lowercase hex digits", "[lock][errors]") {
  const Error upper = error_for(with("9a93b2b7dfdac77ceba5", "9A93B2B7DFDAC77CEBA5"));
  CHECK(upper.headline() ==
        "envkit.lock:21:21: `sha256`: expected 64 lowercase hex digits, found "
        "`9A93B2B7DFDAC77CEBA5a558a580e74667dd6fed...`");

  const Error recipe = error_for(with("\"sha256:3333", "\"sha256:333"));
  CHECK(recipe.headline() ==
        "envkit.lock:6:9: `recipes.zlib`: expected `sha256:` and 64 lowercase hex digits, found "
        "`sha256:333333333333333333333333333333333...`");

  const Error manifest = error_for(with("\"sha256:1111", "\"md5:1111"));
  CHECK(manifest.headline().starts_with(
      "envkit.lock:4:16: `manifest-hash`: expected `sha256:` and 64 lowercase hex digits"));
}

TEST_CASE("a newer lock format asks for a newer envkit", "[lock][errors]") {
  // Even before keys the newer format may have added.
  const auto text = GENERATE(as<std::string>{}, with("version: 1", "version: 3"),
                             with("version: 1", "version: 3\nsolver: pubgrub-2"));
  const Error error = error_for(text);
  CHECK(error.headline() ==
        "envkit.lock:3:10: lock format 3 is newer than this envkit understands (2)");
  CHECK(error.hints() ==
        Strings{"the lock was written by a newer envkit: upgrade envkit to read it"});

  const Error zero = error_for(with("version: 1", "version: 0"));
  CHECK(zero.headline() ==
        "envkit.lock:3:10: `version`: expected a lock format number such as `1`, found `0`");
}

TEST_CASE("a package appears once per platform", "[lock][errors]") {
  const Error error =
      error_for(std::string(kLock) + "      - name: zlib\n        version: 1.2.13\n");
  CHECK(
      error.headline() ==
      "envkit.lock:23:15: duplicate package `zlib` in platform `linux-x86_64` (first on line 13)");
  CHECK(error.hints() == Strings{"a platform locks one version of `zlib`"});
}

TEST_CASE("a platform appears once", "[lock][errors]") {
  const Error error =
      error_for(std::string(kLock) + "  - platform: linux-x86_64\n    packages: []\n");
  CHECK(error.headline() ==
        "envkit.lock:23:15: duplicate platform `linux-x86_64` (first on line 11)");
}

TEST_CASE("credentials in a URL are refused", "[lock][errors]") {
  const Error error =
      error_for(with("http://zlib.net/", "https://builder:hunter2@mirror.example/"));
  CHECK(error.headline() ==
        "envkit.lock:20:18: `url`: `https://***@mirror.example/fossils/zlib-1.3.1.tar.gz` holds "
        "credentials, which a lock file never does");
  CHECK_THAT(error.to_string(), !Catch::Contains("hunter2"));
}

TEST_CASE("bad platforms, versions and values are located", "[lock][errors]") {
  const Error platform = error_for(with("platform: linux-x86_64", "platform: linux-sbsa"));
  CHECK(platform.headline() == "envkit.lock:11:15: unknown platform `linux-sbsa`");
  CHECK(platform.hints() == Strings{"NVIDIA's `linux-sbsa` is envkit's `linux-aarch64`"});

  const Error version = error_for(with("\"1.3.1\"", "\"1..3\""));
  CHECK(version.headline() == "envkit.lock:14:18: `version`: `1..3` is not a valid version");

  const Error kind = error_for(with("kind: source", "kind: tarball"));
  CHECK(kind.headline() ==
        "envkit.lock:17:19: `kind`: expected archive, wheel, runfile or source, found `tarball`");

  const Error source = error_for(with("source: manifest", "source: probe"));
  CHECK(source.headline() ==
        "envkit.lock:8:11: `system.source`: expected `manifest`, `override`, `host` or `none`, "
        "found `probe`");

  const Error arch = error_for(with("\"7.0\"]", "\"70\"]"));
  CHECK(arch.headline() ==
        "envkit.lock:9:22: `system.cuda-arch`: `70` is not a GPU compute capability");

  const Error size = error_for(with("size: 1512791", "size: big"));
  CHECK(size.headline() == "envkit.lock:22:19: `size`: expected a number of bytes, found `big`");

  const Error build_system = error_for(
      with("layout: source-tree\n", "layout: source-tree\n            build-system: make\n"));
  CHECK(build_system.headline() ==
        "envkit.lock:20:27: `build-system`: expected configure or cmake, found `make`");
}

// kLock with CUDA 9.0's runfile added: two components, two patches.
std::string with_runfile() {
  return std::string(kLock) + R"(      - name: cuda
        version: "9.0.176"
        artifacts:
          - component: cuda
            kind: runfile
            format: run
            layout: cuda-runfile-nested
            components: [cuda_cudart, libcublas]
            url: https://developer.nvidia.com/compute/cuda/9.0/Prod/local_installers/cuda_9.0.176_384.81_linux-run
            sha256: "96863423feaa50b5c1c5e1b9ec537ef7ba77576a3986652351ae43e66bcd080c"
            patches:
              - url: https://developer.nvidia.com/compute/cuda/9.0/Prod/patches/1/cuda_9.0.176.1_linux-run
                sha256: "a4bf63e08f01fcbdfa9ff147f54e45a84a3a70e571b28d2d62e9277c4f7a78ed"
              - url: https://developer.nvidia.com/compute/cuda/9.0/Prod/patches/2/cuda_9.0.176.2_linux-run
                sha256: "ec345f6d17d52c0ab6ea296ec389efdabca2ca56bddde8723bcea7be646ce5eb"
)";
}

std::string runfile_with(std::string_view from, std::string_view to) {
  std::string text = with_runfile();
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

TEST_CASE("a runfile's components and patches are read, and bad ones located", "[lock][errors]") {
  auto read = parse(with_runfile(), "envkit.lock");
  INFO((read ? std::string() : read.error().to_string()));
  REQUIRE(read.ok());
  const auto& packages = read->platforms.at(0).packages;
  REQUIRE(packages.size() == 2);
  const auto& runfile = packages.at(1).artifacts.at(0);  // as written: cuda after zlib
  CHECK(runfile.components == Strings{"cuda_cudart", "libcublas"});
  REQUIRE(runfile.patches.size() == 2);
  CHECK(runfile.patches[1].url.ends_with("/patches/2/cuda_9.0.176.2_linux-run"));
  // The canonical text: cuda sorts before zlib, the patches keep their order.
  const auto text = write(*read);
  CHECK(text.find("name: cuda") < text.find("name: zlib"));
  Lockfile canonical = *read;
  canonicalize(canonical);
  CHECK(parse(text, "envkit.lock").value() == canonical);

  const Error no_sha = error_for(
      runfile_with("                sha256: "
                   "\"ec345f6d17d52c0ab6ea296ec389efdabca2ca56bddde8723bcea7be646ce5eb\"\n",
                   ""));
  CHECK(no_sha.headline() == "envkit.lock:36:17: a patch needs `sha256:`");

  const Error bad_sha = error_for(runfile_with("\"ec345f6d", "\"EC345F6D"));
  CHECK(bad_sha.headline() ==
        "envkit.lock:37:25: `sha256`: expected 64 lowercase hex digits, found "
        "`EC345F6D17d52c0ab6ea296ec389efdabca2ca56...`");

  const Error twice = error_for(runfile_with("[cuda_cudart, libcublas]", "[libcublas, libcublas]"));
  CHECK(twice.headline() == "envkit.lock:30:37: `components` names `libcublas` twice");
}

TEST_CASE("an empty or non-mapping lock is refused", "[lock][errors]") {
  const Error empty = error_for("# nothing\n");
  CHECK(empty.headline() == "envkit.lock: the lock file is empty");
  const Error list = error_for("- version: 1\n");
  CHECK(list.headline() ==
        "envkit.lock:1:1: expected a mapping of lock keys such as `version:`, found a list");
}

}  // namespace
}  // namespace envkit::lock
