#include "envkit/doctor/host_checks.hpp"

#include <catch2/catch.hpp>

#include "envkit/doctor/prefix_checks.hpp"

namespace {

using Catch::Matchers::Contains;
using envkit::doctor::Severity;
using envkit::gpu::HostFacts;
using envkit::specs::ComputeCapability;
using envkit::specs::Version;

Version v(std::string_view text) {
  return Version::parse(text).value();
}
ComputeCapability cc(std::string_view text) {
  return ComputeCapability::parse(text).value();
}

// CUDA 12.4 as the recipe database describes it.
envkit::doctor::StackNeeds cuda_12_4() {
  return {.cuda = v("12.4.0"),
          .min_driver = v("550.54.14"),
          .min_driver_compat = v("525.60.13"),
          .cuda_arch = {cc("5.0"), cc("6.0"), cc("7.0"), cc("8.0"), cc("8.9"), cc("9.0")}};
}

HostFacts host(std::optional<std::string_view> driver, std::vector<ComputeCapability> gpus = {}) {
  HostFacts facts;
  if (driver) facts.driver = v(*driver);
  for (const auto& capability : gpus)
    facts.gpus.push_back({"NVIDIA Test GPU", capability});
  return facts;
}

}  // namespace

TEST_CASE("the driver check grades a driver against the locked CUDA", "[doctor]") {
  const auto needs = cuda_12_4();
  SECTION("new enough natively") {
    const auto found = envkit::doctor::check_driver(host("550.54.15"), needs);
    REQUIRE(found.size() == 1);
    CHECK(found[0].severity == Severity::ok);
  }
  SECTION("only through minor-version compatibility") {
    const auto found = envkit::doctor::check_driver(host("535.104.05"), needs);
    REQUIRE(found.size() == 1);
    CHECK(found[0].severity == Severity::warn);
    CHECK_THAT(found[0].message, Contains("minor-version compatibility"));
    CHECK_THAT(found[0].fix, Contains("550.54.14"));
  }
  SECTION("too old") {
    const auto found = envkit::doctor::check_driver(host("520.61.05"), needs);
    REQUIRE(found.size() == 1);
    CHECK(found[0].severity == Severity::error);
    CHECK_THAT(found[0].message, Contains("insufficient"));
    CHECK_THAT(found[0].message, Contains("520.61.05"));
    CHECK_THAT(found[0].message, Contains("525.60.13"));
  }
  SECTION("libcuda reports an older CUDA major than the lock's") {
    auto facts = host("550.54.15");
    facts.driver_cuda = v("11.8");
    const auto found = envkit::doctor::check_driver(facts, needs);
    CHECK(found.at(0).severity == Severity::error);
    CHECK_THAT(found[0].message, Contains("supports CUDA up to 11.8"));
  }
  SECTION("no lock: the driver is only reported") {
    const auto found = envkit::doctor::check_driver(host("550.54.15"), {});
    CHECK(found.at(0).severity == Severity::ok);
  }
}

TEST_CASE("the GPU check grades each distinct GPU against CUDA and the framework", "[doctor]") {
  auto needs = cuda_12_4();
  SECTION("eight identical GPUs make one finding") {
    const auto found =
        envkit::doctor::check_gpu_arch(host("550.54.15", std::vector(8, cc("9.0"))), needs);
    REQUIRE(found.size() == 1);
    CHECK(found[0].severity == Severity::ok);
  }
  SECTION("newer than the release knows: a warning (PTX only)") {
    const auto found = envkit::doctor::check_gpu_arch(host("570.0", {cc("12.0")}), needs);
    REQUIRE(found.size() == 1);
    CHECK(found[0].severity == Severity::warn);
    CHECK_THAT(found[0].message, Contains("newer than CUDA 12.4.0"));
  }
  SECTION("older than the framework build supports: an error naming the build") {
    needs.frameworks.push_back({"torch 2.4.1 (cu124)", {cc("5.0"), cc("8.0"), cc("9.0")}});
    const auto found = envkit::doctor::check_gpu_arch(host("550.54.15", {cc("3.7")}), needs);
    REQUIRE(found.size() == 2);
    CHECK(found[1].severity == Severity::error);
    CHECK_THAT(found[1].message, Contains("torch 2.4.1 (cu124)"));
    CHECK_THAT(found[1].message, Contains("no kernel image is available"));
  }
  SECTION("a driver but no GPU") {
    const auto found = envkit::doctor::check_gpu_arch(host("550.54.15"), needs);
    REQUIRE(found.size() == 1);
    CHECK(found[0].severity == Severity::warn);
  }
  SECTION("no driver: the driver check speaks") {
    CHECK(envkit::doctor::check_gpu_arch(host(std::nullopt), needs).empty());
  }
}

TEST_CASE("nvcc's release is read from its --version output", "[doctor]") {
  const auto output =
      "nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2024 NVIDIA Corporation\n"
      "Built on Thu_Mar_28_02:18:24_PDT_2024\nCuda compilation tools, release 12.4, V12.4.131\n"
      "Build cuda_12.4.r12.4/compiler.34097967_0\n";
  CHECK(envkit::doctor::parse_nvcc_release(output)->original() == "12.4.131");
  CHECK_FALSE(envkit::doctor::parse_nvcc_release("gcc (Debian 12.2.0-14) 12.2.0").has_value());
}
