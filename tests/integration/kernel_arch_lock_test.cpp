// `envkit lock` refuses a framework build without kernels for the lock's GPUs, as a user
// runs it: the real binary, the source tree's recipe database (torch's arch lists from
// PyTorch's build scripts and PyPI's wheels, upstream/pytorch-build-scripts), a GTX 1080 Ti
// (compute capability 6.1) and driver 580 stated by ENVKIT_OVERRIDE_*. Hermetic: no
// internet, no today's index (ENVKIT_NO_LIVE_INDEX) and no Python closure (ENVKIT_NO_PYTHON):
// the closure is not what this is about, the solver's kernel facts are; the lock-time check
// of cached wheel coverage is tested in tests/unit/locking/kernel_arch_lock_test.cpp.
#include <catch2/catch.hpp>
#include <regex>

#include "envkit/sys/fs.hpp"
#include "support/envkit_runner.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using envkit::test::TempDir;

envkit::sys::ProcessOutput lock_on_gtx_1080_ti(const fs::path& project) {
  return envkit::test::run_envkit(
      {.args = {"--recipes", (envkit::test::source_dir() / "recipes").string(), "lock"},
       .cwd = project,
       .env = {{"ENVKIT_OVERRIDE_DRIVER", "580.65.06"},
               {"ENVKIT_OVERRIDE_CUDA_ARCH", "6.1"},
               {"ENVKIT_NO_LIVE_INDEX", "1"},
               {"ENVKIT_NO_PYTHON", "1"}},
       .stdin_data = {}});
}

// A hint that edits envkit.yaml: the envkit.yaml a user has after following it, and the
// torch the lock must then hold ("torch 2.7.1 (" or "torch 2.8.0 (cu126)").
struct Followed {
  std::string manifest;
  std::string torch;
};

// "use torch X, the nearest version …" pins X; "add its index to envkit.yaml: `indexes:
// [..., https://download.pytorch.org/whl/cuXYZ]`" adds that line, for that build.
std::vector<Followed> follow_hints(const std::string& err, const std::string& manifest,
                                   const std::string& version) {
  std::vector<Followed> out;
  const std::regex use(R"(hint: use torch ([0-9][0-9.]*), the)");
  for (auto it = std::sregex_iterator(err.begin(), err.end(), use); it != std::sregex_iterator();
       ++it)
    out.push_back(
        {"framework: torch ==" + (*it)[1].str() + "\n", "torch " + (*it)[1].str() + " ("});
  const std::regex index(
      R"(hint: [^\n]*add its index to envkit\.yaml: `(indexes: \[[^\]]*/(cu[0-9]+)\])`)");
  for (auto it = std::sregex_iterator(err.begin(), err.end(), index); it != std::sregex_iterator();
       ++it)
    out.push_back(
        {manifest + (*it)[1].str() + "\n", "torch " + version + " (" + (*it)[2].str() + ")"});
  return out;
}

}  // namespace

TEST_CASE("lock: torch 2.8.0 on a GTX 1080 Ti is refused with its missing kernels named",
          "[cli][lock][kernels]") {
  TempDir dir;
  const std::string manifest = "framework: torch ==2.8.0\n";
  dir.write("p/envkit.yaml", manifest);
  const auto project = dir.path() / "p";
  const auto refused = lock_on_gtx_1080_ti(project);
  INFO(refused.err);
  // Unsatisfiable: a reason the user can act on (CLI.md: exit 1), and nothing written.
  CHECK(refused.exit_code == 1);
  CHECK_FALSE(fs::exists(project / "envkit.lock"));
  // PyPI's torch 2.8.0 is the cu128 build: SASS from sm_70 up, no PTX (issue 34's cuobjdump).
  CHECK_THAT(refused.err, Catch::Contains("torch >=2.8.0,<=2.9.1 (cu128)"));
  CHECK_THAT(refused.err, Catch::Contains("has kernels for sm_70 sm_75 sm_80 sm_86 sm_90 sm_100 "
                                          "sm_120 and no PTX"));
  CHECK_THAT(refused.err, Catch::Contains("none runs on compute capability 6.1"));

  // Every hint that edits envkit.yaml, followed, locks what it names.
  const auto fixes = follow_hints(refused.err, manifest, "2.8.0");
  REQUIRE_FALSE(fixes.empty());
  for (const auto& fixed : fixes) {
    CAPTURE(fixed.manifest);
    dir.write("p/envkit.yaml", fixed.manifest);
    const auto locked = lock_on_gtx_1080_ti(project);
    INFO(locked.err);
    CHECK(locked.exit_code == 0);
    CHECK_THAT(locked.err,
               Catch::StartsWith("locked linux-x86_64: ") && Catch::Contains(", " + fixed.torch));
    CHECK(fs::exists(project / "envkit.lock"));
    fs::remove(project / "envkit.lock");
  }
}
