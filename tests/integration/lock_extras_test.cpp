// `envkit lock` and `envkit why` on projects whose requirements.txt names a CUDA
// (`torch==2.1.0+cu118`, `jax[cuda11_cudnn86]`, `cupy-cuda12x`): the real binary on
// temporary projects, solved against the source tree's recipe database.
//
// The test runner sets ENVKIT_NO_PYTHON=1 (no Python closure without an index of the
// test's own). That is on purpose here: the lines' CUDA requirements are read from the
// files when envkit gathers the lock's inputs, before and whether or not uv resolves the
// closure, so these cases show they hold without it. The main path, with the closure on
// against a served index: tests/integration/lock_today_test.cpp (`jax[cuda12]==0.4.30`:
// the lock, and `why cuda` naming requirements.txt:1).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "envkit/sys/fs.hpp"
#include "support/envkit_runner.hpp"
#include "support/temp_dir.hpp"

// Named, not anonymous: the integration tests share unity batches.
namespace envkit::test::lock_extras {

namespace fs = std::filesystem;
using nlohmann::json;

// Runs `envkit --recipes <source tree>/recipes ARGS...` in `project`; envkit.yaml states
// the machines' driver, so the host's is never read.
sys::ProcessOutput envkit_at(const fs::path& project, std::vector<std::string> args) {
  std::vector<std::string> argv{"--recipes", (source_dir() / "recipes").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_envkit({.args = argv, .cwd = project, .env = {}, .stdin_data = {}});
}

// A project with `manifest` as envkit.yaml and `requirements` as requirements.txt.
fs::path project_with(const TempDir& dir, std::string_view manifest,
                      std::string_view requirements) {
  dir.write("p/envkit.yaml", manifest);
  dir.write("p/requirements.txt", requirements);
  return dir.path() / "p";
}

// name -> "version (build)" of linux-x86_64 in a `lock --json` answer.
std::map<std::string, std::string> locked_versions(const std::string& out) {
  INFO(out);
  REQUIRE(json::accept(out));
  std::map<std::string, std::string> versions;
  const auto answer = json::parse(out);
  for (const auto& package : answer.at("packages")) {
    if (package.at("platform") != "linux-x86_64") continue;
    auto text = package.at("version").get<std::string>();
    if (!package.at("build").get<std::string>().empty())
      text += " (" + package.at("build").get<std::string>() + ")";
    versions[package.at("name").get<std::string>()] = text;
  }
  return versions;
}

// PyPI serves torch 2.1 as its cu121 build; the cu118 build is on PyTorch's own index.
const char* const kTorch21 =
    "framework: torch 2.1.*\n"
    "indexes: [https://pypi.org/simple, https://download.pytorch.org/whl/cu118]\n"
    "python-requirements: requirements.txt\nsystem: {driver: 535.104.05}\n";

TEST_CASE("a torch==2.1.0+cu118 line locks the cu118 build on CUDA 11.8",
          "[cli][lock][cuda-lines]") {
  TempDir dir;
  // Without the line, driver 535 gets the cu121 build on CUDA 12.1.
  const auto plain = project_with(dir, kTorch21, "numpy\n");
  const auto before = envkit_at(plain, {"lock", "--json"});
  INFO(before.err);
  REQUIRE(before.exit_code == 0);
  CHECK_THAT(locked_versions(before.out).at("cuda"), Catch::StartsWith("12.1."));

  const auto p = project_with(dir, kTorch21, "numpy\ntorch==2.1.0+cu118\n");
  const auto r = envkit_at(p, {"lock", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto versions = locked_versions(r.out);
  CHECK_THAT(versions.at("torch"), Catch::EndsWith("(cu118)"));
  CHECK_THAT(versions.at("cuda"), Catch::StartsWith("11.8."));
  CHECK_THAT(sys::read_file(p / "envkit.lock").value(), Catch::Contains("cu118"));

  const auto why = envkit_at(p, {"why", "cuda"});
  CHECK(why.exit_code == 0);
  CHECK_THAT(why.err, Catch::StartsWith("cuda 11.8.") &&
                          Catch::Contains("\n  `torch==2.1.0+cu118` in requirements.txt:2 "
                                          "requires cuda <12,>=11.8\n"));
}

TEST_CASE("why cudnn names a line that names a cuDNN", "[cli][why][cuda-lines]") {
  TempDir dir;
  const auto p = project_with(dir, kTorch21, "nvidia-cudnn-cu11==8.9.*\n");
  const auto r = envkit_at(p, {"why", "cudnn", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(json::accept(r.out));
  const auto answer = json::parse(r.out);
  CHECK_THAT(answer.at("version").get<std::string>(), Catch::StartsWith("8.9."));
  std::vector<std::string> because;
  for (const auto& line : answer.at("because"))
    because.push_back(line.get<std::string>());
  CHECK(std::find(because.begin(), because.end(),
                  "`nvidia-cudnn-cu11==8.9.*` in requirements.txt:1 requires cudnn ==8.9.*") !=
        because.end());
}

TEST_CASE("jax[cuda11_cudnn86] is not locked on CUDA 12: the explanation names its line",
          "[cli][lock][cuda-lines]") {
  TempDir dir;
  // The database's jax builds (0.4.22 on, PyPI's) are CUDA 12 and 13 ones.
  const auto p = project_with(dir,
                              "framework: jax\npython-requirements: requirements.txt\n"
                              "system: {driver: 535.104.05}\n",
                              "jax[cuda11_cudnn86]>=0.4.2\n");
  const auto r = envkit_at(p, {"lock"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::StartsWith("error: no environment satisfies envkit.yaml on "
                                      "linux-x86_64\n"));
  CHECK_THAT(r.err, Catch::Contains("`jax[cuda11_cudnn86]>=0.4.2` in requirements.txt:1 requires "
                                    "cuda <12,>=11"));
  CHECK_THAT(r.err, Catch::Contains("\nhint: change `jax[cuda11_cudnn86]>=0.4.2` in "
                                    "requirements.txt:1 (it requires cuda <12,>=11): without "
                                    "that, envkit would choose cuda 12."));
  CHECK_THAT(r.err, !Catch::Contains("under `requires:`"));  // envkit.yaml has no such line
  CHECK_FALSE(fs::exists(p / "envkit.lock"));
}

TEST_CASE("two lines that want different CUDA majors are explained by both",
          "[cli][lock][cuda-lines]") {
  TempDir dir;
  const auto p = project_with(dir, kTorch21, "numpy\njax[cuda11]\ncupy-cuda12x\n");
  const auto r = envkit_at(p, {"lock", "--json"});
  CHECK(r.exit_code == 1);
  INFO(r.out);
  REQUIRE(json::accept(r.out));
  const auto answer = json::parse(r.out);
  CHECK(answer.at("error") == "unsatisfiable");
  std::string explanation;
  for (const auto& line : answer.at("explanation"))
    explanation += line.get<std::string>() + "\n";
  CHECK_THAT(explanation,
             Catch::Contains("`jax[cuda11]` in requirements.txt:2 requires cuda <12,>=11") &&
                 Catch::Contains("`cupy-cuda12x` in requirements.txt:3 requires cuda <13,>=12"));
  std::vector<std::string> hints;
  for (const auto& hint : answer.at("hints"))
    hints.push_back(hint.get<std::string>());
  CHECK(hints == std::vector<std::string>{
                     "change `jax[cuda11]` in requirements.txt:2 (it requires cuda <12,>=11): "
                     "without that, envkit would choose cuda 12.1.1",
                     "change `cupy-cuda12x` in requirements.txt:3 (it requires cuda <13,>=12): "
                     "without that, envkit would choose cuda 11.8.0"});
}

}  // namespace envkit::test::lock_extras
