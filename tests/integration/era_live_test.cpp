// Opt-in (ENVKIT_LIVE_TESTS=1; reads PyPI and builds sdists for their metadata, downloading
// torch into a build environment): source builds in the project's era against the real
// index. A stable-diffusion environment (`python=3.8.5`, pytorch 1.11.0, pip's
// `albumentations==0.4.3`, whose setup.py imports pkg_resources) and `mmcv==2.2.0` with torch
// 2.1.2 (whose setup.py imports pkg_resources and torch) lock. Output of a run:
// docs/live-tests-issue33.md, "Source builds in the project's era".
#include <catch2/catch.hpp>

#include "envkit/lock/lockfile.hpp"
#include "support/envkit_runner.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

// Named, not anonymous: the integration tests share unity batches.
namespace envkit::test::era_live {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

// A project with `files`, run against PyPI with a cache of its own.
struct LiveEraProject {
  TempDir work;
  fs::path root = work.path() / "project";

  explicit LiveEraProject(const std::vector<std::pair<std::string, std::string>>& files) {
    fs::create_directories(root);
    for (const auto& [name, text] : files)
      work.write("project/" + name, text);
  }
  [[nodiscard]] sys::ProcessOutput envkit(std::vector<std::string> args) const {
    auto run = live_run(root, work.path() / "cache", std::move(args), std::chrono::minutes(20));
    run.env["ENVKIT_OVERRIDE_DRIVER"] = "none";
    return run_envkit(run);
  }
  [[nodiscard]] lock::PythonClosure closure() const {
    auto loaded = lock::load(root / "envkit.lock");
    INFO((loaded ? "" : loaded.error().to_string()));
    REQUIRE(loaded);
    REQUIRE(loaded->platforms.size() == 1);
    REQUIRE(loaded->platforms[0].python);
    return *loaded->platforms[0].python;
  }
};

const lock::PythonWheel* package_of(const lock::PythonClosure& closure, std::string_view name) {
  for (const auto& package : closure.packages) {
    if (package.name == name) return &package;
  }
  return nullptr;
}

// stable-diffusion's environment.yaml (CompVis), without its `-e` git checkouts.
constexpr std::string_view kStableDiffusion = R"(name: ldm
channels:
  - pytorch
  - defaults
dependencies:
  - python=3.8.5
  - pip=20.3
  - cudatoolkit=11.3
  - pytorch=1.11.0
  - torchvision=0.12.0
  - numpy=1.19.2
  - pip:
    - albumentations==0.4.3
    - opencv-python==4.1.2.30
    - pudb==2019.2
    - imageio==2.9.0
    - imageio-ffmpeg==0.4.2
    - pytorch-lightning==1.4.2
    - omegaconf==2.1.1
    - test-tube>=0.7.5
    - streamlit>=0.73.1
    - einops==0.3.0
    - torch-fidelity==0.3.0
    - transformers==4.19.2
    - torchmetrics==0.6.0
    - kornia==0.6
)";

TEST_CASE("live: a stable-diffusion environment with python=3.8.5 and albumentations 0.4.3 locks",
          "[live][era]") {
  if (live_tests_off("lock stable-diffusion's environment against PyPI")) return;
  LiveEraProject project({{"environment.yaml", std::string(kStableDiffusion)}});
  const auto init = project.envkit({"init"});
  INFO(init.err);
  REQUIRE(init.exit_code == 0);
  const auto locked = project.envkit({"lock"});
  INFO(locked.err);
  REQUIRE(locked.exit_code == 0);
  WARN(locked.err);
  const auto closure = project.closure();
  CHECK(closure.python.starts_with("3.8."));
  const auto* albumentations = package_of(closure, "albumentations");
  REQUIRE(albumentations);
  CHECK(albumentations->version == "0.4.3");
  CHECK(albumentations->kind == lock::Distribution::sdist);
  const auto* torch = package_of(closure, "torch");
  REQUIRE(torch);
  CHECK(torch->version.starts_with("1.11.0"));
}

TEST_CASE("live: mmcv 2.2.0 with torch 2.1.2 locks, built with torch in its build environment",
          "[live][era]") {
  if (live_tests_off("lock mmcv 2.2.0 against PyPI, torch in its build environment")) return;
  LiveEraProject project(
      {{"requirements.txt", "mmcv==2.2.0\n"},
       {"envkit.yaml", "framework: torch ==2.1.2\npython-requirements: requirements.txt\n"}});
  const auto locked = project.envkit({"lock"});
  INFO(locked.err);
  REQUIRE(locked.exit_code == 0);
  WARN(locked.err);
  CHECK_THAT(locked.err, Contains("mmcv built with the framework in the build environment"));
  const auto closure = project.closure();
  const auto* mmcv = package_of(closure, "mmcv");
  REQUIRE(mmcv);
  CHECK(mmcv->version == "2.2.0");
  CHECK(mmcv->kind == lock::Distribution::sdist);
  CHECK(closure.built_with_framework == std::vector<std::string>{"mmcv"});
  // Its setup.py imports pkg_resources: the build tools of mmcv 2.2.0's day built it.
  CHECK(closure.build_as_of == "2024-04-24");
}

}  // namespace envkit::test::era_live
