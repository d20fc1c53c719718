// Opt-in (ENVKIT_LIVE_TESTS=1; downloads about 1.6 GiB of NVIDIA's wheels from PyPI): the
// acceptance case of docs/smoke.md's compiler-free path. A CUDA 12 stack installed from NVIDIA's
// wheels (no nvcc) on a machine without a GPU: `envkit smoke` loads every library from the prefix,
// checks their versions against the lock, compiles the kernels with the prefix's NVRTC for the
// lock's GPUs, and exits 77. Output of a run: docs/live-tests-issue34.md.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "support/envkit_runner.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

// Named, not anonymous: the integration tests share unity batches.
namespace envkit::test::smoke_live {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

TEST_CASE("smoke checks a prefix of NVIDIA's CUDA 12 wheels up to the kernel launch",
          "[cli][smoke][live]") {
  if (live_tests_off("install CUDA 12.4 and cuDNN 9 from PyPI's wheels and run smoke")) return;
  TempDir work;
  const auto root = work.path() / "project";
  fs::create_directories(root);
  work.write("project/envkit.yaml",
             "requires:\n  cuda: \"12.4\"\n  cudnn: \"9\"\nsystem:\n  driver: \">=550\"\n"
             "  cuda-arch: [\"8.6\", \"9.0\"]\n");
  const auto envkit = [&](std::vector<std::string> args) {
    auto run = live_run(root, work.path() / "cache", std::move(args), std::chrono::minutes(20));
    run.env["ENVKIT_OVERRIDE_DRIVER"] = "none";
    return run_envkit(run);
  };
  auto r = envkit({"lock"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  r = envkit({"install", "--packaging", "wheel"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto prefix = fs::canonical(root / ".envkit" / "env").string() + "/";
  REQUIRE_FALSE(fs::exists(root / ".envkit" / "env" / "bin" / "nvcc"));  // wheels carry none

  r = envkit({"smoke", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 77);
  const auto out = nlohmann::json::parse(r.out);
  CHECK_THAT(out.at("reason").get<std::string>(),
             Contains("checked everything up to the kernel launch"));
  CHECK(out.at("versions").at("nvrtc") == "12.4");
  std::vector<std::string> targets;
  for (const auto& kernel : out.at("kernels"))
    targets.push_back(kernel.at("target"));
  CHECK(targets == std::vector<std::string>{"sm_86", "sm_90"});
  std::size_t from_prefix = 0;
  for (const auto& library : out.at("libraries")) {
    INFO(library.dump());
    CHECK(library.at("in_prefix") == true);
    CHECK(library.at("path").get<std::string>().starts_with(prefix));
    ++from_prefix;
  }
  CHECK(from_prefix >= 5);  // NVRTC and its builtins, cuBLAS and cuBLASLt, cuDNN
  CHECK_THAT(r.err, Contains("kernels:       compiled by the prefix's NVRTC for sm_86 sm_90"));
}

}  // namespace envkit::test::smoke_live
