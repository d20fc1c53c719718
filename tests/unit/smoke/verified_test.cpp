// The record of a passing GPU smoke test (.envkit/verified.json): what a passing run's report
// puts in it, that it reads back, and that the GPU's UUID itself never lands in the file.
#include "envkit/smoke/verified.hpp"

#include <catch2/catch.hpp>
#include <fstream>

#include "envkit/smoke/program.hpp"
#include "envkit/sys/fs.hpp"
#include "support/temp_dir.hpp"

namespace envkit::smoke {
namespace {

namespace fs = std::filesystem;
using Catch::Contains;

// What envkit-smoke prints after training on a GPU (share/envkit/smoke/README.md's fields).
constexpr std::string_view kPassingRun = R"({
  "status": "pass", "reason": "", "gpu": "NVIDIA H200", "compute_capability": "9.0",
  "driver": "13.0", "cuda_runtime": "12.4", "cudnn": "9.1.0", "steps": 200,
  "loss_first": 1.39, "loss_last": 0.09, "accuracy": 1.0, "max_reference_error": 2e-7,
  "gpu_seconds": 0.05, "cpu_seconds": 1.5, "compiler": "nvrtc",
  "gpu_uuid": "5f2b3c4d5e6f708192a3b4c5d6e7f801",
  "versions": {"nvrtc": "12.4", "cublas": "12.4.5", "cudnn": "9.1.0",
               "cudnn_built_for_cuda": "12.2"},
  "libraries": [{"name": "libcudnn.so.9", "path": "/p/lib/libcudnn.so.9", "in_prefix": true,
                 "driver": false},
                {"name": "libcuda.so.1", "path": "/usr/lib/libcuda.so.580.95.05",
                 "in_prefix": false, "driver": true}],
  "kernels": [{"target": "sm_90", "bytes": 23416}]
})";

TEST_CASE("a passing GPU run is recorded beside the prefix and reads back", "[smoke][verified]") {
  const test::TempDir dir;
  const auto prefix = dir.path() / ".envkit" / "env";
  fs::create_directories(prefix);
  const auto report = parse_report(kPassingRun);
  REQUIRE(report);
  const auto verified = verified_from(*report, "sha-of-lock", "2026-11-29T05:20:00Z");
  REQUIRE(write_verified(prefix, verified));
  CHECK(verified_path(prefix) == dir.path() / ".envkit" / "verified.json");

  const auto text = sys::read_file(verified_path(prefix));
  REQUIRE(text);
  CHECK_THAT(*text, !Contains("5f2b3c4d5e6f708192a3b4c5d6e7f801"));  // only its hash

  const auto read = read_verified(prefix);
  REQUIRE(read);
  REQUIRE(*read);
  const auto& v = **read;
  CHECK(v.lock_sha256 == "sha-of-lock");
  CHECK(v.gpu == "NVIDIA H200");
  CHECK(v.compute_capability == "9.0");
  CHECK(v.gpu_uuid_sha256.size() == 64);
  CHECK(v.libraries == "NVRTC 12.4, cuBLAS 12.4.5, cuDNN 9.1.0 (built for CUDA 12.2)");
  CHECK(v.loaded ==
        std::vector<std::string>{"/p/lib/libcudnn.so.9", "/usr/lib/libcuda.so.580.95.05"});
  REQUIRE(v.speedup);
  CHECK(*v.speedup == Approx(30.0));
  CHECK_THAT(describe(v), Contains("passed on NVIDIA H200 (compute capability 9.0), driver CUDA "
                                   "13.0, 2026-11-29T05:20:00Z: 200 steps, 30.0x faster"));
}

TEST_CASE("no record reads as none, and a damaged one is named with how to recover",
          "[smoke][verified]") {
  const test::TempDir dir;
  const auto prefix = dir.path() / "env";
  auto none = read_verified(prefix);
  REQUIRE(none);
  CHECK_FALSE(*none);
  std::ofstream(dir.path() / "verified.json") << "{\"format\": 1, \"gpu\": ";
  const auto damaged = read_verified(prefix);
  REQUIRE_FALSE(damaged);
  CHECK_THAT(damaged.error().headline(),
             Contains((dir.path() / "verified.json").string()) && Contains("is damaged"));
  CHECK_THAT(damaged.error().hints().front(), Contains("`envkit smoke` on a GPU writes it again"));
}

}  // namespace
}  // namespace envkit::smoke
