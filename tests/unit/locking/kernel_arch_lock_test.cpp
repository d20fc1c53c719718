// Kernel architectures in the lock: a framework build whose kernels (SASS of the
// GPU's major with a minor no higher, or PTX no newer) do not cover the lock's GPUs is
// refused before anything is downloaded, with the source tree's real recipe database
// (torch's arch lists come from PyTorch's build scripts, upstream/pytorch-build-scripts).
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "envkit/locking/lock_pipeline.hpp"
#include "envkit/locking/python_closure.hpp"
#include "support/source_database.hpp"
#include "support/temp_dir.hpp"

namespace envkit::locking {
namespace kernel_arch_test {

const recipes::Database& kernels_database() {
  return test::source_database();
}

gpu::ProbeSources kernels_machine(std::map<std::string, std::string> variables) {
  return {.variable = [variables](const env::Variable& v) -> std::optional<std::string> {
            const auto it = variables.find(std::string(v.name));
            if (it == variables.end()) return std::nullopt;
            return it->second;
          },
          .read_file = [](const std::filesystem::path&) { return std::optional<std::string>(); },
          .query_nvidia_smi = [] { return std::optional<sys::ProcessOutput>(); },
          .query_libcuda = {}};
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
  // torch 2.8 and 2.9 from PyPI (cu128, cu130) have none. (2.10 and 2.11 have no arch
  // list in the database: not known to lack any, they are not ruled out.)
  const auto line = torch.version.major_minor().original();
  CHECK(line != "2.8");
  CHECK(line != "2.9");
}

TEST_CASE("torch 2.8.0 on a compute capability 8.6 GPU locks its cu128 build",
          "[locking][kernels]") {
  const auto attempt = solve_on("8.6", fmt::format("framework: torch ==2.8.0\n{}", kPypi));
  const auto& torch = chosen_torch(attempt.solved);
  CHECK(torch.version.original() == "2.8.0");
  CHECK(torch.build == "cu128");
}

}  // namespace envkit::locking
