#include <catch2/catch.hpp>

#include "envkit/doctor/kernel_checks.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

namespace envkit::doctor {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

const fs::path kCublasLt = "/usr/local/cuda/lib64/libcublasLt.so.13";

std::vector<const Finding*> with(const Findings& findings, Severity severity) {
  std::vector<const Finding*> out;
  for (const auto& finding : findings) {
    if (finding.id == "kernels" && finding.severity == severity) out.push_back(&finding);
  }
  return out;
}

store::KernelTargets gpus(std::vector<elf::Arch> archs, std::string ptx_isa = "9.0") {
  return {.gpus = std::move(archs),
          .driver_ptx_isa = std::move(ptx_isa),
          .source = "this machine's GPUs"};
}

// A prefix-like folder holding /usr/local/cuda's cuBLASLt (a hard link, else a
// symlink) as the CUDA package's only kernel file, read as install reads it.
std::optional<store::PrefixState> cublas_prefix(const fs::path& root) {
  if (!fs::exists(kCublasLt)) {
    test::skip_test(test::SkipKind::expected, "no " + kCublasLt.string());
    return std::nullopt;
  }
  fs::create_directories(root / "lib");
  std::error_code error;
  fs::create_hard_link(fs::canonical(kCublasLt), root / "lib" / "libcublasLt.so.13", error);
  if (error) fs::create_symlink(fs::canonical(kCublasLt), root / "lib" / "libcublasLt.so.13");
  store::PackageReceipt cuda{
      .name = "cuda",
      .version = "13.0.2",
      .build = {},
      .packaging = "archive",
      .artifacts = {},
      .files = {{.path = "lib/libcublasLt.so.13"}, {.path = "include/cublasLt.h"}}};
  cuda.kernels = store::scan_kernels(root, cuda.files);
  store::PackageReceipt zlib{.name = "zlib", .version = "1.3.1", .packaging = "source"};
  zlib.kernels = store::PackageKernels{};
  return store::PrefixState{.generation = 1, .packages = {cuda, zlib}};
}

TEST_CASE("doctor: CUDA 13's cuBLASLt has no kernel for a GTX 1080 Ti and covers an H100",
          "[doctor][kernels]") {
  test::TempDir root;
  const auto state = cublas_prefix(root.path());
  if (!state) return;

  SECTION("compute capability 6.1: an error naming the package, the file and what covers it") {
    const auto findings = check_kernel_coverage(*state, {.targets = gpus({61})});
    const auto errors = with(findings, Severity::error);
    REQUIRE(errors.size() == 1);
    CHECK_THAT(errors[0]->message,
               Contains("cuda 13.0.2") && Contains("compute capability 6.1") &&
                   Contains("no kernel image is available for execution on the device") &&
                   Contains("lib/libcublasLt.so.13 holds sm_75 sm_80") &&
                   Contains("PTX compute_75"));
    CHECK_THAT(errors[0]->fix, Contains("sm_60 or sm_61") && Contains("compute_61 or older"));
    CHECK(with(findings, Severity::ok).empty());
  }
  SECTION("compute capability 9.0: covered by SASS; zlib, without kernels, is not judged") {
    const auto findings = check_kernel_coverage(*state, {.targets = gpus({90})});
    CHECK(with(findings, Severity::error).empty());
    const auto fine = with(findings, Severity::ok);
    REQUIRE(fine.size() == 1);
    CHECK_THAT(fine[0]->message, Contains("compute capability 9.0") && Contains("SASS in cuda"));
    CHECK_THAT(fine[0]->message, !Contains("zlib"));
  }
  SECTION("the recipe database's concrete build is named where it knows one") {
    KernelFacts facts{.targets = gpus({61})};
    facts.covering_build = [](const std::string& package, elf::Arch gpu) {
      return package == "cuda" && gpu == 61 ? std::optional<std::string>("cuda 12.9.1")
                                            : std::nullopt;
    };
    const auto findings = check_kernel_coverage(*state, facts);
    const auto errors = with(findings, Severity::error);
    REQUIRE(errors.size() == 1);
    CHECK_THAT(errors[0]->fix, Contains("cuda 12.9.1"));
  }
  SECTION("where the recipe database claims 6.0, the binaries win and doctor says so") {
    KernelFacts facts{.targets = gpus({90})};
    facts.declared["cuda"] = {{6, 0}, {7, 5}, {9, 0}};
    const auto findings = check_kernel_coverage(*state, facts);
    const auto warnings = with(findings, Severity::warn);
    REQUIRE(warnings.size() == 1);
    CHECK_THAT(warnings[0]->message, Contains("recipe database") && Contains("nothing for 6.0") &&
                                         Contains("binaries win"));
  }
}

TEST_CASE("doctor: without a GPU, the lock's capabilities are judged", "[doctor][kernels]") {
  const elf::KernelCoverage modern{.sass = {70, 75, 80, 86, 90, 100, 120}};
  store::PackageReceipt torch{
      .name = "torch", .version = "2.8.0", .build = "cu128", .packaging = "pip"};
  torch.kernels = store::PackageKernels{
      .coverage = modern,
      .files = {
          {.path = "lib/python3.12/site-packages/torch/lib/libtorch_cuda.so", .coverage = modern}}};
  const store::PrefixState state{.generation = 1, .packages = {torch}};
  const auto lock_gpus = store::KernelTargets{
      .gpus = {61, 90}, .driver_ptx_isa = {}, .source = "the GPUs envkit.lock states"};

  SECTION("stated in envkit.yaml: the machines' GPUs, so a gap is an error") {
    const auto findings = check_kernel_coverage(
        state, {.targets = lock_gpus, .from_lock = true, .lock_states_machines = true});
    const auto errors = with(findings, Severity::error);
    REQUIRE(errors.size() == 1);
    CHECK_THAT(errors[0]->message,
               Contains("torch 2.8.0 (cu128)") && Contains("compute capability 6.1") &&
                   Contains("libtorch_cuda.so holds sm_70 sm_75 sm_80 sm_86 sm_90 sm_100 "
                            "sm_120, no PTX") &&
                   Contains("the GPUs envkit.lock states"));
  }
  SECTION("what the recipe database said the stack runs on: the binaries win, a warning") {
    const auto findings = check_kernel_coverage(state, {.targets = lock_gpus, .from_lock = true});
    CHECK(with(findings, Severity::error).empty());
    REQUIRE(with(findings, Severity::warn).size() == 1);
  }
}

TEST_CASE("doctor: PTX newer than the driver JIT-compiles is named as such", "[doctor][kernels]") {
  const elf::KernelCoverage ptx{.sass = {}, .ptx = {80}, .newest_ptx_isa = "9.0"};
  store::PackageReceipt jitted{.name = "jitlib", .version = "1.0", .packaging = "pip"};
  jitted.kernels =
      store::PackageKernels{.coverage = ptx, .files = {{.path = "lib/libjit.so", .coverage = ptx}}};
  const store::PrefixState state{.generation = 1, .packages = {jitted}};

  const auto old_driver = check_kernel_coverage(state, {.targets = gpus({86}, "8.4")});
  const auto errors = with(old_driver, Severity::error);
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0]->message, Contains("PTX ISA 8.4 or older") && Contains("ISA 9.0"));
  CHECK_THAT(errors[0]->fix, Contains("upgrade the NVIDIA driver"));

  const auto new_driver = check_kernel_coverage(state, {.targets = gpus({86}, "9.0")});
  const auto fine = with(new_driver, Severity::ok);
  REQUIRE(fine.size() == 1);
  CHECK_THAT(fine[0]->message, Contains("PTX the driver JIT-compiles in jitlib 1.0"));
}

TEST_CASE("doctor: a file whose kernels cannot be read is a warning, and the rest is judged",
          "[doctor][kernels]") {
  const elf::KernelCoverage modern{.sass = {80, 90}};
  store::PackageReceipt package{.name = "cudnn", .version = "9.1.0.70", .packaging = "archive"};
  package.kernels =
      store::PackageKernels{.coverage = modern,
                            .files = {{.path = "lib/libcudnn_ops.so.9", .coverage = modern},
                                      {.path = "lib/libcudnn_cut.so.9",
                                       .error = "the fatbinary at 0x151150 runs past "
                                                "its section"}}};
  const store::PrefixState state{.generation = 1, .packages = {package}};
  const auto findings = check_kernel_coverage(state, {.targets = gpus({90})});
  const auto warnings = with(findings, Severity::warn);
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0]->message,
             Contains("lib/libcudnn_cut.so.9") && Contains("runs past its section"));
  CHECK(with(findings, Severity::ok).size() == 1);
}

}  // namespace
}  // namespace envkit::doctor
