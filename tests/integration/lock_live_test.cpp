// Opt-in (ENVKIT_LIVE_TESTS=1; reads PyPI's pages and wheel METADATA, downloads no wheel):
// today's index as a user meets it. A bare `torch` locks what pip would install today,
// `torch==` that version locks, `jax[cuda12]==0.4.30` locks unchanged with the cuDNN uv
// picks (newer than the recipe database), a requirement line's CUDA is a reason of the
// solve, a hint holds when followed, and `envkit recipes update` lists what the index adds.
// Output of a run: docs/recipes.md, "Live tests".
#include <catch2/catch.hpp>
#include <regex>

#include "envkit/lock/lockfile.hpp"
#include "envkit/sys/process.hpp"
#include "locked_version.hpp"
#include "support/envkit_runner.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

// A project of `requirements` with `manifest`'s other lines, locked against PyPI with a cache
// of its own (the overlay read fresh) and today's index on.
struct LiveProject {
  TempDir work;
  fs::path root = work.path() / "project";

  LiveProject(const std::string& requirements, const std::string& manifest) {
    fs::create_directories(root);
    work.write("project/requirements.txt", requirements);
    work.write("project/envkit.yaml", manifest + "python-requirements: [requirements.txt]\n");
  }

  [[nodiscard]] sys::ProcessOutput envkit(std::vector<std::string> args) const {
    auto run = live_run(root, work.path() / "cache", std::move(args));
    run.env["ENVKIT_OVERRIDE_DRIVER"] = "none";
    return run_envkit(run);
  }

  [[nodiscard]] lock::Lockfile locked() const {
    const auto ran = envkit({"lock"});
    INFO(ran.err);
    REQUIRE(ran.exit_code == 0);
    WARN(ran.err);
    auto loaded = lock::load(root / "envkit.lock");
    REQUIRE(loaded);
    return *std::move(loaded);
  }
};

// The torch release `pip` would install here today: `pip index versions torch` (the newest
// release with a file for this machine's Python).
std::optional<std::string> pip_newest_torch() {
  auto ran = sys::run_process({"python3", "-m", "pip", "index", "versions", "torch"}, {});
  if (!ran || ran->exit_code != 0) return std::nullopt;
  std::smatch match;
  if (!std::regex_search(ran->out, match, std::regex(R"(^torch \(([^)]+)\))"))) return std::nullopt;
  return match[1].str();
}

}  // namespace

TEST_CASE("live: a bare torch locks the release pip installs today, and torch== it locks",
          "[live]") {
  if (live_tests_off("lock torch against PyPI's index today")) return;
  const auto newest = pip_newest_torch();
  REQUIRE(newest);
  WARN("pip index versions torch: " << *newest);
  LiveProject bare("torch\n", "framework: torch\n");
  const auto lockfile = bare.locked();
  CHECK_THAT(locked_version(lockfile, "torch"), Catch::Matchers::StartsWith(*newest + " "));
  LiveProject pinned("torch==" + *newest + "\n", "framework: torch ==" + *newest + "\n");
  CHECK(locked_version(pinned.locked(), "torch") == locked_version(lockfile, "torch"));
}

TEST_CASE("live: jax[cuda12]==0.4.30 locks unchanged, its cuDNN from today's index", "[live]") {
  if (live_tests_off("lock jax against PyPI's index today")) return;
  LiveProject jax("jax[cuda12]==0.4.30\n", "framework: jax ==0.4.30\n");
  const auto lockfile = jax.locked();
  CHECK(locked_version(lockfile, "jax") == "0.4.30 cuda12");
  const auto& closure = lockfile.platforms.at(0).python;
  REQUIRE(closure);
  const auto cudnn = std::find_if(closure->packages.begin(), closure->packages.end(),
                                  [](const auto& w) { return w.name == "nvidia-cudnn-cu12"; });
  REQUIRE(cudnn != closure->packages.end());
  // The lock's cuDNN is the wheel uv picked, whatever the database knew.
  CHECK(locked_version(lockfile, "cudnn") == cudnn->version + " cuda12");
  // The extra names CUDA 12: a reason of the solve, with its line.
  const auto why = jax.envkit({"why", "cuda"});
  INFO(why.err);
  CHECK(why.exit_code == 0);
  CHECK_THAT(why.err, Contains("requirements.txt:1"));
  WARN(why.err);
}

TEST_CASE("live: torch 2.4.1 on a 450 driver gets a driver hint that holds", "[live]") {
  if (live_tests_off("lock torch 2.4.1 against PyPI's index today")) return;
  LiveProject old("torch==2.4.1\n", "framework: torch ==2.4.1\nsystem: {driver: 450.80.02}\n");
  const auto failed = old.envkit({"lock"});
  INFO(failed.err);
  CHECK(failed.exit_code == 1);
  CHECK_THAT(failed.err, Contains("hint: upgrade the NVIDIA driver to >= 525.60.13"));
  WARN(failed.err);
  LiveProject followed("torch==2.4.1\n", "framework: torch ==2.4.1\nsystem: {driver: 525.60.13}\n");
  CHECK(locked_version(followed.locked(), "torch") == "2.4.1 cu121");
}

TEST_CASE("live: recipes update lists what today's index adds to the database", "[live]") {
  if (live_tests_off("read today's releases from PyPI")) return;
  LiveProject project("", "");
  const auto ran = project.envkit({"recipes", "update"});
  INFO(ran.err);
  CHECK(ran.exit_code == 0);
  CHECK_THAT(ran.err, Contains("read https://pypi.org/simple on ") && Contains("cudnn: "));
  WARN(ran.err);
}

}  // namespace envkit::test
