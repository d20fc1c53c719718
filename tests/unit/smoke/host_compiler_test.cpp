// Choosing nvcc's host compiler and the GPU architectures to build for.
#include "envkit/smoke/host_compiler.hpp"

#include <catch2/catch.hpp>

#include "envkit/smoke/host_gpus.hpp"

namespace envkit::smoke {
namespace {

// What CUDA 11.8's nvcc prints when the default g++ is GCC 12.
constexpr std::string_view kCuda11Refusal =
    "In file included from /opt/cuda/bin/../targets/x86_64-linux/include/cuda_runtime.h:83,\n"
    "                 from <command-line>:\n"
    "/opt/cuda/bin/../targets/x86_64-linux/include/crt/host_config.h:132:2: error: #error -- "
    "unsupported GNU version! gcc versions later than 11 are not supported! The nvcc flag "
    "'-allow-unsupported-compiler' can be used to override this version check; however, using "
    "an unsupported host compiler may cause compilation failure or incorrect run time "
    "execution. Use at your own risk.\n"
    "  132 | #error -- unsupported GNU version! gcc versions later than 11 are not supported! "
    "...\n";

TEST_CASE("nvcc's refusal of a too-new GCC gives the newest major it accepts", "[smoke]") {
  CHECK(parse_gcc_limit(kCuda11Refusal) == 11);
  CHECK(parse_gcc_limit("#error -- unsupported GNU version! gcc versions later than 13 are not "
                        "supported!") == 13);
}

TEST_CASE("other nvcc failures are not a host compiler refusal", "[smoke]") {
  CHECK_FALSE(parse_gcc_limit(""));
  CHECK_FALSE(parse_gcc_limit("smoke.cu(12): error: identifier \"cudnnFoo\" is undefined"));
  CHECK_FALSE(
      parse_gcc_limit("#error -- unsupported clang version! clang version must be less "
                      "than 16 and greater than 3.2"));
  CHECK_FALSE(parse_gcc_limit("unsupported GNU version! gcc versions later than X are"));
}

TEST_CASE("older g++ candidates run from the limit down, newest first", "[smoke]") {
  const auto candidates = host_compiler_candidates(11);
  REQUIRE(candidates.size() == 7);
  CHECK(candidates.front() == "g++-11");
  CHECK(candidates[1] == "g++-10");
  CHECK(candidates.back() == "g++-5");
  CHECK(host_compiler_candidates(4).empty());
}

TEST_CASE("the newest accepted g++ on PATH is chosen", "[smoke]") {
  const auto candidates = host_compiler_candidates(11);
  const std::vector<std::string> several = {"g++-12", "g++-9", "g++-10"};
  CHECK(choose_host_compiler(candidates, several) == "g++-10");
  const std::vector<std::string> too_new = {"g++-12", "g++-13"};
  CHECK_FALSE(choose_host_compiler(candidates, too_new));
  CHECK_FALSE(choose_host_compiler(candidates, {}));
}

TEST_CASE("without an older GCC the hints name the package and the unsafe flag", "[smoke]") {
  const auto hints = no_host_compiler_hints(11);
  REQUIRE(hints.size() == 2);
  CHECK_THAT(hints[0], Catch::Contains("apt-get install g++-11"));
  CHECK_THAT(hints[1], Catch::Contains("-allow-unsupported-compiler"));
}

gpu::HostFacts host(std::optional<std::string> driver, std::vector<std::string> capabilities) {
  gpu::HostFacts facts;
  if (driver) facts.driver = specs::Version::parse(*driver).value();
  facts.driver_source = {gpu::Provenance::Kind::nothing_found,
                         "/sys/module/nvidia/version, /proc/driver/nvidia/version, nvidia-smi"};
  facts.gpus_source = {gpu::Provenance::Kind::nvidia_smi, "nvidia-smi"};
  for (const auto& text : capabilities)
    facts.gpus.push_back({.name = std::nullopt,
                          .compute_capability = specs::ComputeCapability::parse(text).value()});
  return facts;
}

TEST_CASE("no driver, or no GPU, is a skip that says where envkit looked", "[smoke]") {
  const auto no_driver = skip_reason(host(std::nullopt, {}));
  REQUIRE(no_driver);
  CHECK_THAT(*no_driver, Catch::StartsWith("no NVIDIA driver on this machine (checked "
                                           "/sys/module/nvidia/version"));
  CHECK_THAT(*no_driver, Catch::Contains("`--cpu-only` runs the CPU half"));

  auto overridden = host(std::nullopt, {});
  overridden.driver_source = {gpu::Provenance::Kind::override_variable, "ENVKIT_OVERRIDE_DRIVER"};
  CHECK_THAT(skip_reason(overridden).value_or(""),
             Catch::Contains("(ENVKIT_OVERRIDE_DRIVER=none)"));

  const auto no_gpu = skip_reason(host("550.54.15", {}));
  REQUIRE(no_gpu);
  CHECK_THAT(*no_gpu, Catch::Contains("driver 550.54.15 is installed, but no GPU was found"));

  CHECK_FALSE(skip_reason(host("550.54.15", {"8.0"})));
}

TEST_CASE("gencode flags: machine code per distinct GPU, PTX of the newest", "[smoke]") {
  const auto facts = host("550.54.15", {"9.0", "8.6", "9.0", "8.6"});
  const auto capabilities = distinct_capabilities(facts);
  REQUIRE(capabilities.size() == 2);
  CHECK(capabilities[0].to_string() == "8.6");
  const std::vector<std::string> expected = {"-gencode", "arch=compute_86,code=sm_86",
                                             "-gencode", "arch=compute_90,code=sm_90",
                                             "-gencode", "arch=compute_90,code=compute_90"};
  CHECK(gencode_flags(capabilities) == expected);
  CHECK(gencode_flags({}).empty());
}

}  // namespace
}  // namespace envkit::smoke
