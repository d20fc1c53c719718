// Requirement lines that name a CUDA or cuDNN (`jax[cuda11_cudnn86]`, `torch==2.1.0+cu118`,
// `cupy-cuda11x`, NVIDIA's wheels) as requirements of the solve, each naming its line.
#include "envkit/locking/requirement_constraints.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <variant>
#include <vector>

#include "envkit/core/text.hpp"
#include "envkit/locking/inputs.hpp"
#include "envkit/locking/lock_pipeline.hpp"
#include "support/source_database.hpp"
#include "support/temp_dir.hpp"

namespace envkit::locking {
namespace {

using Lines = std::vector<std::string>;

// What `text`, written at requirements.txt:3, requires: "cuda <12,>=11" ...
Lines implied_by(std::string_view text) {
  auto parsed = project::parse_pep508(text, {"requirements.txt", 3, 1});
  if (!parsed) FAIL(parsed.error().to_string());
  auto implied = cuda_requirements_of(*parsed);
  if (!implied) FAIL(implied.error().to_string());
  Lines out;
  for (const auto& requirement : *implied) {
    CHECK(requirement.origin == "python-requirements");
    REQUIRE(requirement.written_at);
    CHECK(requirement.written_at->location == "requirements.txt:3");
    CHECK(requirement.platforms.empty());
    out.push_back(requirement.package + " " + requirement.spec.to_string());
  }
  return out;
}

// Every requirement of a project's files, as "package spec <- location `text` [platforms]".
Lines implied_by_files(const test::TempDir& project, const std::vector<std::string>& files,
                       std::vector<specs::Platform> platforms, Lines* warnings = nullptr) {
  const auto found = cuda_requirements_of_files(project.path(), files, platforms);
  if (warnings != nullptr) *warnings = found.warnings;
  Lines out;
  for (const auto& requirement : found.requirements) {
    auto line = requirement.package + " " + requirement.spec.to_string() + " <- " +
                requirement.written_at->location + " `" + requirement.written_at->text + "`";
    for (const auto platform : requirement.platforms)
      line += " " + std::string(specs::to_string(platform));
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace

TEST_CASE("jax extras that name a CUDA major require it", "[locking][cuda-lines]") {
  CHECK(implied_by("jax[cuda12]") == Lines{"cuda <13,>=12"});
  CHECK(implied_by("jax[cuda13]>=0.7") == Lines{"cuda <14,>=13"});
  CHECK(implied_by("jax[cuda12_pip]") == Lines{"cuda <13,>=12"});
  CHECK(implied_by("jax[cuda12-local]") == Lines{"cuda <13,>=12"});
  CHECK(implied_by("jax[cuda11_pip]==0.4.20") == Lines{"cuda <12,>=11"});
  CHECK(implied_by("jax[cuda11_local]") == Lines{"cuda <12,>=11"});
  CHECK(implied_by("jax[cuda11]") == Lines{"cuda <12,>=11"});  // no such extra; its name says 11
  CHECK(implied_by("jax[cuda12,cuda12_pip]") == Lines{"cuda <13,>=12"});  // said once
  CHECK(implied_by("jax[cpu]").empty());
  CHECK(implied_by("jax==0.4.26").empty());
  CHECK(implied_by("numpy>=1.26").empty());
}

TEST_CASE("jax extras that name a cuDNN require its series", "[locking][cuda-lines]") {
  CHECK(implied_by("jax[cuda11_cudnn86]>=0.4.2") == Lines{"cuda <12,>=11", "cudnn <9,>=8.6"});
  CHECK(implied_by("jax[cuda11_cudnn82]") == Lines{"cuda <12,>=11", "cudnn <9,>=8.2"});
  CHECK(implied_by("jax[cuda11_cudnn805]") == Lines{"cuda <12,>=11", "cudnn <9,>=8.0.5"});
  CHECK(implied_by("jax[cuda12_cudnn89]") == Lines{"cuda <13,>=12", "cudnn <9,>=8.9"});
  CHECK(implied_by("jax[cuda12_cudnn91]") == Lines{"cuda <13,>=12", "cudnn <10,>=9.1"});
}

TEST_CASE("old jax extras name a CUDA release series", "[locking][cuda-lines]") {
  // jax 0.2.13 ... 0.2.22: `cuda101` ... `cuda112` (0.2.11, 0.2.12: `cuda-110`).
  CHECK(implied_by("jax[cuda111]==0.2.17") == Lines{"cuda <12,>=11.1"});
  CHECK(implied_by("jax[cuda-110]==0.2.11") == Lines{"cuda <12,>=11.0"});
  CHECK(implied_by("jax[cuda102]") == Lines{"cuda ==10.2.*"});
}

TEST_CASE("jax[cuda] means what the admitted releases' metadata says", "[locking][cuda-lines]") {
  // jaxlib==V+cuda11.cudnn82 (0.2.23 ... 0.3.25), +cuda11.cudnn86 (0.4.0 ... 0.4.25),
  // +cuda12.cudnn89 (0.4.26 ... 0.4.28), +cuda12.cudnn91 (0.4.29), the CUDA 12 plugin after.
  CHECK(implied_by("jax[cuda]==0.3.25") == Lines{"cuda <12,>=11", "cudnn <9,>=8.2"});
  CHECK(implied_by("jax[cuda]==0.4.7") == Lines{"cuda <12,>=11", "cudnn <9,>=8.6"});
  CHECK(implied_by("jax[cuda]>=0.4.2,<0.4.26") == Lines{"cuda <12,>=11", "cudnn <9,>=8.6"});
  CHECK(implied_by("jax[cuda]==0.4.26") == Lines{"cuda <13,>=12", "cudnn <9,>=8.9"});
  CHECK(implied_by("jax[cuda]==0.4.29") == Lines{"cuda <13,>=12", "cudnn <10,>=9.1"});
  CHECK(implied_by("jax[cuda]==0.4.30") == Lines{"cuda <13,>=12"});
  // Releases of different meaning: the majors they span.
  CHECK(implied_by("jax[cuda]>=0.4.20,<0.4.30") == Lines{"cuda <13,>=11", "cudnn <10,>=8"});
  // Open above: a later release may mean a later CUDA.
  CHECK(implied_by("jax[cuda]") == Lines{"cuda >=11"});
  CHECK(implied_by("jax[cuda]>=0.4.30") == Lines{"cuda >=12"});
  // Before 0.2.23 jax had no `cuda` extra.
  CHECK(implied_by("jax[cuda]<0.2.20").empty());
}

TEST_CASE("jaxlib's local versions name its CUDA and cuDNN", "[locking][cuda-lines]") {
  CHECK(implied_by("jaxlib==0.4.7+cuda11.cudnn86") == Lines{"cuda <12,>=11", "cudnn <9,>=8.6"});
  CHECK(implied_by("jaxlib==0.4.26+cuda12.cudnn89") == Lines{"cuda <13,>=12", "cudnn <9,>=8.9"});
  CHECK(implied_by("jaxlib==0.1.69+cuda111") == Lines{"cuda <12,>=11.1"});
  CHECK(implied_by("jaxlib==0.4.7").empty());
  CHECK(implied_by("jax-cuda12-plugin[with-cuda]==0.4.30") == Lines{"cuda <13,>=12"});
  CHECK(implied_by("jax-cuda13-pjrt") == Lines{"cuda <14,>=13"});
}

TEST_CASE("tensorflow[and-cuda] requires what its release's extra pins", "[locking][cuda-lines]") {
  // 2.15.x pins nvidia-cuda-runtime-cu12 ==12.2.140 and nvidia-cudnn-cu12 ==8.9.4.25.
  CHECK(implied_by("tensorflow[and-cuda]==2.15.0") == Lines{"cuda ==12.2.*", "cudnn ==8.9.4.25"});
  CHECK(implied_by("tensorflow[and-cuda]==2.14.*") == Lines{"cuda ==11.8.*", "cudnn ==8.7.0.84"});
  CHECK(implied_by("tensorflow[and-cuda]==2.17.1") == Lines{"cuda ==12.3.*", "cudnn ==8.9.7.29"});
  CHECK(implied_by("tensorflow[and-cuda]==2.19.0") == Lines{"cuda ==12.5.*", "cudnn ==9.3.0.75"});
  CHECK(implied_by("tensorflow[and-cuda]==2.20.0") ==
        Lines{"cuda <13.0,>=12.5", "cudnn <10.0,>=9.3.0.75"});
  CHECK(implied_by("tensorflow[and-cuda]>=2.15,<2.18") == Lines{"cuda <13,>=12", "cudnn <9,>=8"});
  CHECK(implied_by("tensorflow[and-cuda]") == Lines{"cuda >=11", "cudnn >=8"});
  CHECK(implied_by("tensorflow[and-cuda]<2.14").empty());  // the extra came with 2.14
  CHECK(implied_by("tensorflow==2.15.0").empty());
}

TEST_CASE("CuPy's wheel names state their CUDA", "[locking][cuda-lines]") {
  CHECK(implied_by("cupy-cuda11x") == Lines{"cuda <12,>=11.2"});
  CHECK(implied_by("cupy-cuda12x>=13") == Lines{"cuda <13,>=12"});
  CHECK(implied_by("cupy-cuda13x") == Lines{"cuda <14,>=13"});
  CHECK(implied_by("cupy-cuda102") == Lines{"cuda ==10.2.*"});
  CHECK(implied_by("cupy_cuda110") == Lines{"cuda ==11.0.*"});
  CHECK(implied_by("cupy-cuda92") == Lines{"cuda ==9.2.*"});
  CHECK(implied_by("cupy").empty());
  CHECK(implied_by("cupy-cuda11").empty());  // not a CuPy name: 1.1 is no CUDA
}

TEST_CASE("PyTorch's local labels name the build's CUDA", "[locking][cuda-lines]") {
  CHECK(implied_by("torch==2.1.0+cu118") == Lines{"cuda <12,>=11.8"});
  CHECK(implied_by("torchvision==0.16.0+cu118") == Lines{"cuda <12,>=11.8"});
  CHECK(implied_by("torchaudio==2.4.1+cu124") == Lines{"cuda <13,>=12.4"});
  CHECK(implied_by("torch==1.8.0+cu102") == Lines{"cuda ==10.2.*"});
  CHECK(implied_by("torch==2.0.0+cu118.with.pypi.cudnn") == Lines{"cuda <12,>=11.8"});
  CHECK(implied_by("torch==2.1.0+cpu").empty());
  CHECK(implied_by("torch==2.1.0+rocm5.6").empty());
  CHECK(implied_by("torch==2.1.0").empty());
}

TEST_CASE("NVIDIA's wheels name their CUDA major, cuDNN and runtime", "[locking][cuda-lines]") {
  CHECK(implied_by("nvidia-cudnn-cu12==8.9.*") == Lines{"cuda <13,>=12", "cudnn ==8.9.*"});
  CHECK(implied_by("nvidia-cuda-runtime-cu12==12.1.105") == Lines{"cuda ==12.1.*"});
  CHECK(implied_by("nvidia-cuda-runtime-cu12>=12.2.140") == Lines{"cuda <13,>=12.2"});
  CHECK(implied_by("nvidia-cuda-runtime-cu12<=12.4.127") == Lines{"cuda <12.5,>=12"});
  CHECK(implied_by("nvidia-cuda-runtime==13.0.96") == Lines{"cuda ==13.0.*"});
  CHECK(implied_by("nvidia-cublas-cu11") == Lines{"cuda <12,>=11"});
  CHECK(implied_by("nvidia_nccl_cu12==2.18.3") == Lines{"cuda <13,>=12"});
  CHECK(implied_by("nvidia-dali-cuda110").empty());  // DALI's own naming, not a -cuNN wheel
}

TEST_CASE("a requirement's line is its reason, without its marker", "[locking][cuda-lines]") {
  auto parsed = project::parse_pep508(R"(jax[cuda11_cudnn86]>=0.4.2 ; sys_platform == "linux")",
                                      {"requirements.txt", 3, 1});
  REQUIRE(parsed);
  const auto implied = cuda_requirements_of(*parsed);
  REQUIRE(implied);
  REQUIRE(implied->size() == 2);
  const auto& cuda = implied->front();
  CHECK(cuda.package == "cuda");
  CHECK(cuda.spec.to_string() == "<12,>=11");
  CHECK(cuda.origin == "python-requirements");
  REQUIRE(cuda.written_at);
  CHECK(cuda.written_at->location == "requirements.txt:3");
  CHECK(cuda.written_at->text == "jax[cuda11_cudnn86]>=0.4.2");
}

TEST_CASE("an unreadable version constraint on a CUDA line names its place",
          "[locking][cuda-lines]") {
  auto parsed = project::parse_pep508("jax[cuda]==4.x", {"requirements.txt", 7, 1});
  REQUIRE(parsed);
  const auto implied = cuda_requirements_of(*parsed);
  REQUIRE_FALSE(implied);
  CHECK_THAT(implied.error().headline(), Catch::StartsWith("requirements.txt:7:1: "));
}

TEST_CASE("requirement files are read with their includes, markers per platform",
          "[locking][cuda-lines]") {
  test::TempDir project;
  project.write("requirements.txt",
                "numpy\n"
                "torch==2.1.0+cu118  # the cu118 build\n"
                "-r requirements/gpu.txt\n"
                "cupy-cuda11x; sys_platform == \"win32\"\n");
  project.write("requirements/gpu.txt", "jax[cuda12]\n-r ../requirements.txt\n");
  const std::vector<std::string> files{"requirements.txt"};
  CHECK(implied_by_files(project, files, {specs::Platform::linux_x86_64}) ==
        Lines{"cuda <12,>=11.8 <- requirements.txt:2 `torch==2.1.0+cu118`",
              "cuda <13,>=12 <- requirements/gpu.txt:1 `jax[cuda12]`"});
  // A line whose marker holds on some of the lock's platforms holds on those.
  CHECK(implied_by_files(project, files,
                         {specs::Platform::linux_x86_64, specs::Platform::windows_x86_64}) ==
        Lines{"cuda <12,>=11.8 <- requirements.txt:2 `torch==2.1.0+cu118`",
              "cuda <12,>=11.2 <- requirements.txt:4 `cupy-cuda11x` windows-x86_64",
              "cuda <13,>=12 <- requirements/gpu.txt:1 `jax[cuda12]`"});
}

TEST_CASE("pyproject.toml and environment.yml lines name their files", "[locking][cuda-lines]") {
  test::TempDir project;
  project.write("pyproject.toml",
                "[project]\nname = \"p\"\nversion = \"1\"\n"
                "dependencies = [\n  \"numpy\",\n  \"jax[cuda12]>=0.4.30\",\n]\n");
  project.write("environment.yml",
                "name: p\ndependencies:\n  - cudatoolkit=11.8\n  - pip:\n    - cupy-cuda12x\n");
  CHECK(implied_by_files(project, {"pyproject.toml", "environment.yml"},
                         {specs::Platform::linux_x86_64}) ==
        Lines{"cuda <13,>=12 <- pyproject.toml:6 `jax[cuda12]>=0.4.30`",
              "cuda <13,>=12 <- environment.yml:5 `cupy-cuda12x`"});
}

TEST_CASE("files envkit cannot read are passed over, naming the place", "[locking][cuda-lines]") {
  test::TempDir project;
  project.write("requirements.txt", "jax[cuda12\n");
  Lines warnings;
  CHECK(implied_by_files(project, {"requirements.txt", "missing.txt"},
                         {specs::Platform::linux_x86_64}, &warnings)
            .empty());
  REQUIRE(warnings.size() == 1);  // a missing file is the closure's to report
  CHECK_THAT(warnings[0], Catch::StartsWith("requirements.txt:1:") &&
                              Catch::Contains("envkit reads no CUDA or cuDNN requirement from "
                                              "requirements.txt"));
}

namespace {

const char* const kTorchManifest =
    "framework: torch 2.1.*\npython-requirements: requirements.txt\n"
    "system: {driver: 535.104.05}\n";

// envkit.yaml and requirements.txt in a fresh project, solved on linux-x86_64.
solve::Outcome solve_project(const test::TempDir& project, std::string_view manifest,
                             std::string_view requirements) {
  project.write("envkit.yaml", manifest);
  project.write("requirements.txt", requirements);
  const gpu::ProbeSources no_probe{
      .variable = [](const env::Variable&) { return std::optional<std::string>(); },
      .read_file = [](const std::filesystem::path&) { return std::optional<std::string>(); },
      .query_nvidia_smi = [] { return std::optional<sys::ProcessOutput>(); },
      .query_libcuda = {}};
  auto inputs = gather_lock_inputs(project.path(), {}, no_probe);
  if (!inputs) FAIL(inputs.error().to_string());
  auto solved = solve_platforms(test::source_database(), *inputs);
  if (!solved) FAIL(solved.error().to_string());
  if (solved->failure) return solved->failure->second;
  return solved->solutions.begin()->second;
}

}  // namespace

TEST_CASE("a torch local label picks the build and says why", "[locking][cuda-lines]") {
  test::TempDir project;
  const auto outcome = solve_project(project, kTorchManifest, "torch==2.1.0+cu118\n");
  const auto* solution = std::get_if<solve::Solution>(&outcome);
  REQUIRE(solution);
  const auto* torch = solution->find("torch");
  const auto* cuda = solution->find("cuda");
  REQUIRE((torch && cuda));
  CHECK(torch->build == "cu118");
  CHECK(cuda->version.major() == 11);
  CHECK(std::find(cuda->because.begin(), cuda->because.end(),
                  "`torch==2.1.0+cu118` in requirements.txt:1 requires cuda <12,>=11.8") !=
        cuda->because.end());
}

TEST_CASE("two contradictory lines are explained by both, and the hints name them",
          "[locking][cuda-lines]") {
  test::TempDir project;
  const auto outcome = solve_project(project, kTorchManifest, "numpy\njax[cuda11]\ncupy-cuda12x\n");
  const auto* failure = std::get_if<solve::Unsolvable>(&outcome);
  REQUIRE(failure);
  const auto explanation = text::join(failure->explanation, "\n");
  CHECK_THAT(explanation,
             Catch::Contains("`jax[cuda11]` in requirements.txt:2 requires cuda <12,>=11") &&
                 Catch::Contains("`cupy-cuda12x` in requirements.txt:3 requires cuda <13,>=12"));
  CHECK_THAT(explanation, !Catch::Contains("under `requires:`"));
  const auto hints = text::join(failure->hints, "\n");
  CHECK_THAT(hints, Catch::Contains("change `jax[cuda11]` in requirements.txt:2 (it requires "
                                    "cuda <12,>=11): without that, envkit would choose cuda "));
  CHECK_THAT(hints, Catch::Contains("change `cupy-cuda12x` in requirements.txt:3"));
  CHECK_THAT(hints, !Catch::Contains("requires:"));
}

}  // namespace envkit::locking
