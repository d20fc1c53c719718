// Opt-in (ENVKIT_LIVE_TESTS=1; reads PyPI's pages and wheel METADATA, downloads no wheel): the
// public examples of issue 33 against today's PyPI. The Python is chosen with the closure
// (`torchdata==0.9.0` has no cp313/cp314 wheels; `jax==0.4.26` with `numpy==1.24.3` resolves
// on Python 3.11 alone), and a requirements file's `--find-links` this machine cannot reach is
// left out with a warning, or named in the error when a requirement needs it.
// Output of a run: docs/live-tests-issue33.md.
#include <catch2/catch.hpp>

#include "envkit/lock/lockfile.hpp"
#include "envkit/sys/fs.hpp"
#include "locked_version.hpp"
#include "support/envkit_runner.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

namespace envkit::test::python_choice_live {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

constexpr std::string_view kLibtpu =
    "https://storage.googleapis.com/jax-releases/libtpu_releases.html";

// A project of `requirements` with `manifest`'s other lines, locked against PyPI with a cache
// of its own, today's index on, the hosts of requirement files asked.
struct PypiProject {
  TempDir work;
  fs::path root = work.path() / "project";

  std::string driver;

  PypiProject(const std::string& requirements, const std::string& manifest,
              std::string driver_version = "550.54.15")
      : driver(std::move(driver_version)) {
    fs::create_directories(root);
    work.write("project/requirements.txt", requirements);
    work.write("project/envkit.yaml", manifest + "python-requirements: [requirements.txt]\n");
  }

  [[nodiscard]] sys::ProcessOutput envkit(std::vector<std::string> args) const {
    auto run = live_run(root, work.path() / "cache", args);
    run.env["ENVKIT_OVERRIDE_DRIVER"] = driver;
    auto ran = run_envkit(run);
    WARN("$ envkit " << text_of(args) << "  (exit " << ran.exit_code << ")\n" << ran.err);
    return ran;
  }

  [[nodiscard]] lock::Lockfile locked() const {
    const auto ran = envkit({"lock"});
    REQUIRE(ran.exit_code == 0);
    auto loaded = lock::load(root / "envkit.lock");
    REQUIRE(loaded);
    return *std::move(loaded);
  }

 private:
  static std::string text_of(const std::vector<std::string>& args) {
    std::string out;
    for (std::size_t i = 4; i < args.size(); ++i)  // past -C DIR --cache-dir DIR
      out += (out.empty() ? "" : " ") + args[i];
    return out;
  }
};

}  // namespace

TEST_CASE("live: torch with torchdata 0.9.0 locks a Python below 3.14 and why python names it",
          "[live][python-choice]") {
  if (live_tests_off("lock torch with torchdata==0.9.0 against PyPI")) return;
  // A driver for CUDA 13: the newest torch, which allows Python 3.14.
  PypiProject project("torch\ntorchdata==0.9.0\n", "framework: torch\n", "580.65.06");
  const auto lockfile = project.locked();
  const auto python = locked_version(lockfile, "python");
  // torchdata 0.9.0's wheels are cp39 ... cp312.
  CHECK_THAT(python, StartsWith("3.12."));
  const auto why = project.envkit({"why", "python"});
  CHECK(why.exit_code == 0);
  CHECK_THAT(why.err, Contains("ruled out: requirements.txt:2 `torchdata==0.9.0` has no wheel "
                               "for CPython 3.14 / 3.13"));
}

TEST_CASE("live: jax 0.4.26 with numpy 1.24.3 locks Python 3.11", "[live][python-choice]") {
  if (live_tests_off("lock jax==0.4.26 with numpy==1.24.3 against PyPI")) return;
  PypiProject project("jax==0.4.26\nnumpy==1.24.3\n", "framework: jax ==0.4.26\n");
  const auto lockfile = project.locked();
  CHECK_THAT(locked_version(lockfile, "python"), StartsWith("3.11."));
  const auto why = project.envkit({"why", "python"});
  CHECK(why.exit_code == 0);
  CHECK_THAT(why.err, Contains("python 3.12 ruled out: requirements.txt:1 `jax==0.4.26` and "
                               "requirements.txt:2 `numpy==1.24.3` do not resolve together"));
}

TEST_CASE("live: a --find-links this machine cannot reach is left out with a warning",
          "[live][requirement-indexes]") {
  if (live_tests_off("lock jax==0.4.26 with jax's libtpu --find-links against PyPI")) return;
  PypiProject project("--find-links " + std::string(kLibtpu) + "\njax==0.4.26\n",
                      "framework: jax ==0.4.26\n");
  const auto ran = project.envkit({"lock"});
  REQUIRE(ran.exit_code == 0);
  CHECK(locked_version(lock::load(project.root / "envkit.lock").value(), "jax") == "0.4.26 cuda12");
  const auto warning = "warning: requirements.txt:1 `--find-links " + std::string(kLibtpu) +
                       "` is not reachable from this machine (";
  if (ran.err.find(warning) == std::string::npos) {
    // Where storage.googleapis.com answers, uv read the page: nothing was left out.
    CHECK_THAT(ran.err, !Contains("left out"));
    WARN("storage.googleapis.com answers here: the --find-links was passed to uv");
  } else {
    CHECK_THAT(ran.err, Contains("left out; the Python requirements resolve without it"));
  }
}

TEST_CASE("live: a --find-links this machine cannot reach that jax[tpu] needs is the error",
          "[live][requirement-indexes]") {
  if (live_tests_off("lock jax[tpu]==0.4.26 with jax's libtpu --find-links against PyPI")) return;
  PypiProject project("--find-links " + std::string(kLibtpu) + "\njax[tpu]==0.4.26\n",
                      "framework: jax ==0.4.26\n");
  const auto ran = project.envkit({"lock"});
  if (ran.exit_code == 0) {
    WARN("storage.googleapis.com answers here: libtpu-nightly came from it");
    return;
  }
  CHECK(ran.exit_code == 1);
  CHECK_THAT(ran.err, Contains("error: the Python requirements do not resolve without " +
                               std::string(kLibtpu) + ", which this machine cannot reach"));
  CHECK_THAT(
      ran.err,
      Contains("without it, uv finds no solution for requirements.txt:2 `jax[tpu]==0.4.26`"));
  CHECK_FALSE(fs::exists(project.root / "envkit.lock"));
}

}  // namespace envkit::test::python_choice_live
