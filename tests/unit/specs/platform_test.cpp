#include "envkit/specs/platform.hpp"

#include <catch2/catch.hpp>

#include "envkit/specs/package_name.hpp"

using namespace envkit::specs;

TEST_CASE("platforms parse and suggest", "[specs][platform]") {
  CHECK(parse_platform("linux-x86_64").value() == Platform::linux_x86_64);
  CHECK(parse_platform("linux-aarch64").value() == Platform::linux_aarch64);
  CHECK(parse_platform("windows-x86_64").value() == Platform::windows_x86_64);
  CHECK(to_string(Platform::linux_aarch64) == "linux-aarch64");
  auto typo = parse_platform("linux-x86-64");
  REQUIRE_FALSE(typo);
  CHECK(typo.error().message() == "unknown platform `linux-x86-64`");
  CHECK(typo.error().hints().at(0) == "did you mean `linux-x86_64`?");
  auto sbsa = parse_platform("linux-sbsa");
  REQUIRE_FALSE(sbsa);
  CHECK(sbsa.error().hints().at(0) == "NVIDIA's `linux-sbsa` is envkit's `linux-aarch64`");
  auto mac = parse_platform("macos-arm64");
  REQUIRE_FALSE(mac);
  CHECK(mac.error().hints().at(0) ==
        "envkit knows `linux-x86_64`, `linux-aarch64` and `windows-x86_64`");
}

TEST_CASE("compute capabilities", "[specs][platform]") {
  CHECK(ComputeCapability::parse("8.6").value() == ComputeCapability{8, 6});
  CHECK(ComputeCapability::parse("sm_90").value() == ComputeCapability{9, 0});
  CHECK(ComputeCapability::parse("sm_100").value() == ComputeCapability{10, 0});
  CHECK(ComputeCapability::parse("sm_90a").value() == ComputeCapability{9, 0});
  CHECK(ComputeCapability::parse("12.0").value().to_string() == "12.0");
  CHECK(ComputeCapability{6, 1} < ComputeCapability{7, 0});
  for (auto bad : {"86", "8.", ".6", "8.6.1", "x.y", "", "sm_"}) {
    INFO(bad);
    CHECK_FALSE(ComputeCapability::parse(bad));
  }
}

TEST_CASE("package names", "[specs][package]") {
  CHECK(canonical_package_name("TensorFlow_GPU") == "tensorflow-gpu");
  CHECK(canonical_package_name("a.-_b") == "a-b");
  CHECK(known_package("PyTorch").value() == "torch");
  CHECK(known_package("cuDNN").value() == "cudnn");
  CHECK_FALSE(known_package("numpy"));
  CHECK(is_framework("tensorflow-gpu"));
  CHECK_FALSE(is_framework("cuda"));
}

TEST_CASE("a GPU runs code of its own major and an older or equal minor", "[specs]") {
  const std::vector<ComputeCapability> archs = {{6, 0}, {7, 0}, {8, 0}, {8, 6}};
  CHECK(runs_on(archs, {6, 1}));
  CHECK(runs_on(archs, {8, 9}));
  CHECK_FALSE(runs_on(archs, {5, 2}));
  CHECK_FALSE(runs_on(archs, {9, 0}));  // no sm_90 code: a Hopper GPU does not run it
}

TEST_CASE("the GPUs several builds all run", "[specs]") {
  const std::vector<std::vector<ComputeCapability>> lists = {
      {{5, 0}, {6, 0}, {7, 0}, {7, 5}, {8, 0}, {8, 6}, {9, 0}},
      {},  // a build without a known list restricts nothing
      {{6, 1}, {7, 0}, {8, 0}},
  };
  const auto common = common_archs(lists);
  REQUIRE(common);
  CHECK(*common == std::vector<ComputeCapability>{{6, 1}, {7, 0}, {8, 0}});
  CHECK_FALSE(runs_on(*common, {6, 0}));
  CHECK(runs_on(*common, {8, 6}));
  CHECK_FALSE(common_archs(std::vector<std::vector<ComputeCapability>>{{}, {}}));
}
