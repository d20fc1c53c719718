// doctor's host checks on WSL 2: the driver is the Windows one, reached through
// /dev/dxg, so no hint may send the user to install a Linux driver or load the
// nvidia kernel module inside WSL.
#include <catch2/catch.hpp>

#include "envkit/doctor/host_checks.hpp"

// A namespace of its own: test_doctor is a unity build.
namespace wsl_host_checks {
namespace {

using Catch::Matchers::Contains;
using envkit::doctor::Finding;
using envkit::doctor::Severity;
using envkit::gpu::HostFacts;
using envkit::specs::Version;

Version v(std::string_view text) {
  return Version::parse(text).value();
}

envkit::doctor::StackNeeds cuda_12_4() {
  return {.cuda = v("12.4.0"), .min_driver = v("550.54.14"), .min_driver_compat = v("525.60.13")};
}

HostFacts wsl(bool dxg, std::optional<std::string_view> driver = std::nullopt) {
  HostFacts facts;
  facts.wsl =
      envkit::gpu::Wsl{.evidence = "/proc/version names Microsoft's WSL kernel", .gpu_device = dxg};
  if (driver) facts.driver = v(*driver);
  facts.driver_source = {envkit::gpu::Provenance::Kind::nothing_found,
                         "/sys/module/nvidia/version, /proc/driver/nvidia/version, nvidia-smi"};
  return facts;
}

// Nothing a WSL user must not do: a Linux driver, a kernel module, /dev/nvidia*.
void check_fits_wsl(const Finding& finding) {
  INFO(finding.message << "\nfix: " << finding.fix);
  for (const auto* wrong : {"modprobe", "kernel module", "/dev/nvidia", "apt", "run file"}) {
    CHECK_THAT(finding.fix, !Contains(wrong));
  }
}

}  // namespace

TEST_CASE("on WSL 2 without a driver, doctor says to install it on Windows", "[doctor][wsl]") {
  const auto found = envkit::doctor::check_driver(wsl(true), cuda_12_4());
  REQUIRE(found.size() == 1);
  CHECK(found[0].severity == Severity::error);
  CHECK_THAT(found[0].message, Contains("WSL 2"));
  CHECK_THAT(found[0].message, Contains("/usr/lib/wsl/lib"));
  CHECK_THAT(found[0].message, Contains("550.54.14"));
  CHECK_THAT(found[0].fix, Contains("on Windows"));
  CHECK_THAT(found[0].fix, Contains("install nothing NVIDIA inside WSL"));
  CHECK_THAT(found[0].fix, Contains("wsl --shutdown"));
  check_fits_wsl(found[0]);
}

TEST_CASE("on WSL 1 doctor says CUDA needs WSL 2", "[doctor][wsl]") {
  const auto found = envkit::doctor::check_driver(wsl(false), {});
  REQUIRE(found.size() == 1);
  CHECK(found[0].severity == Severity::error);
  CHECK_THAT(found[0].message, Contains("without /dev/dxg"));
  CHECK_THAT(found[0].fix, Contains("wsl --set-version"));
  check_fits_wsl(found[0]);
}

TEST_CASE("on WSL 2 an old driver is upgraded on Windows", "[doctor][wsl]") {
  SECTION("too old") {
    const auto found = envkit::doctor::check_driver(wsl(true, "520.61.05"), cuda_12_4());
    REQUIRE(found.size() == 1);
    CHECK(found[0].severity == Severity::error);
    CHECK_THAT(found[0].message, Contains("the Windows driver through WSL 2"));
    CHECK_THAT(found[0].fix, Contains("the NVIDIA driver on Windows"));
    check_fits_wsl(found[0]);
  }
  SECTION("compatibility only") {
    const auto found = envkit::doctor::check_driver(wsl(true, "537.58"), cuda_12_4());
    REQUIRE(found.size() == 1);
    CHECK(found[0].severity == Severity::warn);
    CHECK_THAT(found[0].fix, Contains("the NVIDIA driver on Windows"));
    check_fits_wsl(found[0]);
  }
  SECTION("a driver but no GPU: check WSL's nvidia-smi, not a container flag") {
    const auto found = envkit::doctor::check_gpu_arch(wsl(true, "566.36"), {});
    REQUIRE(found.size() == 1);
    CHECK(found[0].severity == Severity::warn);
    CHECK_THAT(found[0].fix, Contains("/usr/lib/wsl/lib/nvidia-smi"));
    CHECK_THAT(found[0].fix, !Contains("--gpus all"));
  }
}

TEST_CASE("off WSL the driver hints are unchanged", "[doctor][wsl]") {
  HostFacts facts;
  const auto found = envkit::doctor::check_driver(facts, cuda_12_4());
  REQUIRE(found.size() == 1);
  CHECK_THAT(found[0].fix, !Contains("Windows"));
  CHECK_THAT(found[0].fix, Contains("install an NVIDIA driver"));
}

}  // namespace wsl_host_checks
