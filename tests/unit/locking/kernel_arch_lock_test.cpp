// Kernel architectures in the lock: a framework build whose kernels (SASS of the
// GPU's major with a minor no higher, or PTX no newer) do not cover the lock's GPUs is
// refused before anything is downloaded, with the source tree's real recipe database
// (torch's arch lists come from PyTorch's build scripts and, for 2.6, 2.7, 2.10 and 2.11,
// from PyPI's wheels' libtorch_cuda.so: upstream/pytorch-build-scripts). And what envkit's
// kernel cache knows of a wheel's binaries (read at an earlier install) is judged too.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "envkit/core/sha256.hpp"
#include "envkit/locking/lock_pipeline.hpp"
#include "envkit/locking/python_closure.hpp"
#include "envkit/store/kernel_cache.hpp"
#include "override_machine.hpp"
#include "support/source_database.hpp"
#include "support/temp_dir.hpp"

namespace envkit::locking {
namespace kernel_arch_test {

const recipes::Database& kernels_database() {
  return test::source_database();
}

gpu::ProbeSources kernels_machine(std::map<std::string, std::string> variables) {
  return test::override_machine(std::move(variables));
}

// The solve the lock runs for `manifest` on a machine with driver 580 and GPUs of
// `capability`, PyPI being the only index (builds on PyTorch's own indexes unavailable).
struct Attempt {
  LockInputs inputs;
  Solved solved;
};

Attempt solve_on(std::string_view capability, std::string_view manifest) {
  test::TempDir project;
  project.write("envkit.yaml", manifest);
  auto inputs =
      gather_lock_inputs(project.path(), {},
                         kernels_machine({{"ENVKIT_OVERRIDE_DRIVER", "580.65.06"},
                                          {"ENVKIT_OVERRIDE_CUDA_ARCH", std::string(capability)}}));
  if (!inputs) FAIL(inputs.error().to_string());
  auto unavailable = unavailable_builds(kernels_database(), *inputs);
  if (!unavailable) FAIL(unavailable.error().to_string());
  inputs->unavailable.insert(inputs->unavailable.end(), unavailable->begin(), unavailable->end());
  auto solved = solve_platforms(kernels_database(), *inputs);
  if (!solved) FAIL(solved.error().to_string());
  return {*std::move(inputs), *std::move(solved)};
}

const solve::Choice& chosen_torch(const Solved& solved) {
  if (solved.failure) FAIL("no solution: " << solved.failure->second.explanation.front());
  const auto* torch = solved.solutions.begin()->second.find("torch");
  if (torch == nullptr) FAIL("no torch in the solution");
  return *torch;
}

const recipes::Build* build_of(const solve::Choice& choice) {
  auto facts = kernels_database().facts("torch");
  if (!facts) FAIL(facts.error().to_string());
  const auto* version = (*facts)->find(choice.version);
  if (version == nullptr) return nullptr;
  for (const auto& build : version->builds) {
    if (build.id == choice.build) return &build;
  }
  return nullptr;
}

constexpr std::string_view kPypi = "indexes: [https://pypi.org/simple]\n";

}  // namespace kernel_arch_test

using namespace kernel_arch_test;

TEST_CASE("torch 2.8.0 on a compute capability 6.1 GPU is refused with its kernels named",
          "[locking][kernels]") {
  const auto attempt = solve_on("6.1", fmt::format("framework: torch ==2.8.0\n{}", kPypi));
  REQUIRE(attempt.solved.failure);
  const auto& failure = attempt.solved.failure->second;
  std::string explanation;
  for (const auto& line : failure.explanation)
    explanation += line + "\n";
  INFO(explanation);
  // PyPI's torch 2.8.0 is the cu128 build: SASS for sm_70 … sm_120, no PTX; its cu126
  // build (sm_50, sm_60) is on PyTorch's own index, which envkit.yaml does not list.
  CHECK_THAT(explanation, Catch::Contains("torch >=2.8.0,<=2.9.1 (cu128)"));
  CHECK_THAT(explanation, Catch::Contains("has kernels for sm_70 sm_75 sm_80 sm_86 sm_90 sm_100 "
                                          "sm_120 and no PTX"));
  CHECK_THAT(explanation, Catch::Contains("torch 2.8.0 (cu126) cannot be installed"));
  CHECK_THAT(explanation, Catch::Contains("none runs on compute capability 6.1"));

  // Every hint the lock prints holds: following a requirement change solves.
  REQUIRE_FALSE(failure.hints.empty());
  bool followed = false;
  for (std::size_t i = 0; i < failure.hints.size(); ++i) {
    const auto& change = failure.changes[i];
    if (change.kind != solve::HintChange::Kind::requirement || !change.spec) continue;
    INFO(failure.hints[i]);
    auto inputs = attempt.inputs;
    REQUIRE(inputs.manifest.framework);
    inputs.manifest.framework->spec = *change.spec;
    const auto fixed = solve_platforms(kernels_database(), inputs);
    REQUIRE(fixed.ok());
    const auto& torch = chosen_torch(*fixed);
    const auto* build = build_of(torch);
    REQUIRE(build != nullptr);
    CHECK(recipes::has_kernels_for(*build, {6, 1}));
    followed = true;
  }
  CHECK(followed);
}

TEST_CASE(
    "a bare torch on a compute capability 6.1 GPU locks the newest release with kernels "
    "for it",
    "[locking][kernels]") {
  const auto attempt = solve_on("6.1", fmt::format("framework: torch\n{}", kPypi));
  const auto& torch = chosen_torch(attempt.solved);
  const auto* build = build_of(torch);
  REQUIRE(build != nullptr);
  INFO(torch.version.original() << " " << torch.build);
  CHECK(recipes::has_kernels_for(*build, {6, 1}));
  // PyPI's torch 2.8 … 2.10 are cu128 builds (SASS from sm_70, no PTX; 2.10's read from its
  // wheel's libtorch_cuda.so), 2.11 and later CUDA 13 builds from sm_75: 2.7.1's cu126
  // build (sm_50, sm_60, … read from its wheel) is the newest that runs on a GTX 1080 Ti.
  CHECK(torch.version.original() == "2.7.1");
  CHECK(torch.build == "cu126");
}

TEST_CASE("torch 2.8.0 on a compute capability 8.6 GPU locks its cu128 build",
          "[locking][kernels]") {
  const auto attempt = solve_on("8.6", fmt::format("framework: torch ==2.8.0\n{}", kPypi));
  const auto& torch = chosen_torch(attempt.solved);
  CHECK(torch.version.original() == "2.8.0");
  CHECK(torch.build == "cu128");
}

namespace kernel_cache_test {

// A wheel as a fake index lists it; the hash stands for the file.
python::ResolvedWheel wheel(std::string name, std::string version, const std::string& file) {
  return {.name = std::move(name),
          .version = std::move(version),
          .url = "https://files.example/" + file,
          .sha256 = core::sha256_hex(file)};
}

std::string torch_file(std::string_view version) {
  return fmt::format("torch-{}-cp312-cp312-manylinux_2_28_x86_64.whl", version);
}
const std::string kCusparselt = "nvidia_cusparselt_cu12-0.6.3-py3-none-manylinux2014_x86_64.whl";
const std::string kFlashAttn = "flash_attn-2.8.3-cp312-cp312-linux_x86_64.whl";

// Answers as an index would for the framework's pin (`torch==2.7.1`): that torch wheel,
// NVIDIA's cuSPARSELt wheel, and flash-attn while `with_flash_attn`.
struct FakeIndex {
  bool with_flash_attn = false;
  ResolverFactory factory() {
    return [this]() -> Result<ClosureResolver> {
      return ClosureResolver([this](const python::ResolveRequest& request,
                                    const python::ResolveTarget&) -> Result<python::Closure> {
        std::string version = "2.7.1";
        for (const auto& requirement : request.requirements) {
          if (requirement.starts_with("torch==")) version = requirement.substr(7);
        }
        python::Closure closure{.resolver = "fake index"};
        if (with_flash_attn && !request.no_deps)
          closure.wheels.push_back(wheel("flash-attn", "2.8.3", kFlashAttn));
        if (!request.no_deps)
          closure.wheels.push_back(wheel("nvidia-cusparselt-cu12", "0.6.3", kCusparselt));
        closure.wheels.push_back(wheel("torch", version, torch_file(version)));
        return closure;
      });
    };
  }
};

elf::KernelCoverage sass(std::vector<elf::Arch> archs) {
  return {.sass = std::move(archs)};
}

// The lock a user's `envkit lock` runs for a bare torch on a 6.1 GPU, envkit's cache at
// `cache`.
Result<LockAttempt> lock_with_cache(const std::filesystem::path& cache, FakeIndex& index) {
  test::TempDir project;
  project.write("envkit.yaml", fmt::format("framework: torch\n{}", kPypi));
  auto inputs = gather_lock_inputs(project.path(), {},
                                   kernels_machine({{"ENVKIT_OVERRIDE_DRIVER", "580.65.06"},
                                                    {"ENVKIT_OVERRIDE_CUDA_ARCH", "6.1"}}));
  if (!inputs) FAIL(inputs.error().to_string());
  inputs->cache_root = cache;
  return solve_lock(kernels_database(), *inputs, nullptr, index.factory());
}

std::string locked_torch(const LockAttempt& attempt) {
  if (!attempt.lockfile) FAIL("no lock: " << attempt.failure->second.summary);
  for (const auto& package : attempt.lockfile->platforms.front().packages) {
    if (package.name == "torch") return package.version.original() + " (" + package.build + ")";
  }
  FAIL("no torch in the lock");
  return {};
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines)
    out += line + "\n";
  return out;
}

}  // namespace kernel_cache_test

using namespace kernel_cache_test;

TEST_CASE("a torch wheel whose cached kernels lack the GPU is not locked: the next release is",
          "[locking][kernels]") {
  test::TempDir cache;
  FakeIndex index;
  const auto before = lock_with_cache(cache.path(), index);
  REQUIRE(before.ok());
  REQUIRE(locked_torch(*before) == "2.7.1 (cu126)");

  // An install read 2.7.1's wheel without sm_50 and sm_60 (a rebuild, say): its binaries win
  // over the recipe database's list.
  REQUIRE(store::remember_coverage(cache.path(), core::sha256_hex(torch_file("2.7.1")),
                                   sass({70, 75, 80, 86, 89, 90}))
              .ok());
  const auto after = lock_with_cache(cache.path(), index);
  REQUIRE(after.ok());
  // The cache knows that one wheel: 2.7.0's (another file) is still taken at its word.
  CHECK(locked_torch(*after) == "2.7.0 (cu126)");
  const auto said = joined(after->warnings);
  INFO(said);
  CHECK_THAT(said, Catch::Contains("torch 2.7.1 (cu126): its wheel " + torch_file("2.7.1") +
                                   " has kernels for sm_70 sm_75 sm_80 sm_86 sm_89 sm_90, no PTX"));
  CHECK_THAT(said, Catch::Contains("none runs on compute capability 6.1"));
}

TEST_CASE("a wheel whose cached kernels lack the GPU fails the lock, naming it",
          "[locking][kernels]") {
  test::TempDir cache;
  // NVIDIA's cuSPARSELt 0.6.3 (torch 2.7.1's) holds SASS and PTX from sm_80 only, by design:
  // torch uses it only there, so it does not fail the lock.
  REQUIRE(store::remember_coverage(cache.path(), core::sha256_hex(kCusparselt),
                                   {.sass = {80, 86, 87, 89, 90}, .ptx = {80, 86, 89, 90}})
              .ok());
  REQUIRE(
      store::remember_coverage(cache.path(), core::sha256_hex(kFlashAttn), sass({80, 90})).ok());
  FakeIndex index{.with_flash_attn = true};
  const auto attempt = lock_with_cache(cache.path(), index);
  REQUIRE_FALSE(attempt.ok());
  const auto& error = attempt.error();
  INFO(error.to_string());
  CHECK(error.code() == ErrorCode::failed);
  CHECK_THAT(error.message(), Catch::Contains("flash-attn 2.8.3 has no kernels for compute "
                                              "capability 6.1"));
  CHECK_THAT(error.message(), Catch::Contains(kFlashAttn + " has kernels for sm_80 sm_90, no PTX"));
  CHECK_THAT(error.to_string(), Catch::Contains("hint: "));
  CHECK_THAT(error.to_string(), Catch::Contains("leave flash-attn out"));

  // Following the hint (no flash-attn) locks, cuSPARSELt and all.
  index.with_flash_attn = false;
  const auto followed = lock_with_cache(cache.path(), index);
  REQUIRE(followed.ok());
  CHECK(locked_torch(*followed) == "2.7.1 (cu126)");
}

}  // namespace envkit::locking
