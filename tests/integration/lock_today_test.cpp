// `envkit lock` answers from today's index, the recipe database as memory (docs/recipes.md,
// "Today's index"). Hermetic: the index of tests/data/pyindex-today (PyPI's torch 2.14.1 and
// 2.15.0, jax 0.4.30 and their closures, with real names, versions, tags and metadata;
// generated contents) on nginx as envkit's download mirror, resolved by envkit's uv, with the
// committed recipe database, which stops at CUDA 13.0.2 and cuDNN 9.22: CUDA 13.2.2 and cuDNN
// 9.26 exist only as NVIDIA's wheels on the index. Nothing can reach the real internet.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "closure_project.hpp"
#include "envkit/lock/lockfile.hpp"
#include "install_support.hpp"
#include "isolated_project.hpp"
#include "locked_version.hpp"
#include "support/http_server.hpp"
#include "support/python_index.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

fs::path today_description() {
  return test_data_dir() / "pyindex-today" / "pypi.org-simple.json";
}

// The index as it was before some releases were published: `description` without them.
fs::path without_releases(const fs::path& dir,
                          const std::vector<std::pair<std::string, std::string>>& releases) {
  std::ifstream in(today_description());
  auto description = nlohmann::json::parse(in);
  for (const auto& [project, version] : releases) {
    auto& list = description.at("projects").at(project);
    list.erase(std::remove_if(list.begin(), list.end(),
                              [&](const nlohmann::json& r) { return r.at("version") == version; }),
               list.end());
  }
  const auto path = dir / "pypi.org-simple.json";
  std::ofstream(path) << description.dump(1);
  return path;
}

// The index of tests/data/pyindex-today, and the project's requirements.txt.
struct TodayProject : ClosureOnProject {
  bool skip() { return ClosureOnProject::skip({today_description()}); }

  [[nodiscard]] sys::ProcessOutput lock(std::vector<std::string> flags = {}) const {
    flags.insert(flags.begin(), "lock");
    return envkit(std::move(flags));
  }

  void requirements(const std::string& lines, const std::string& framework) const {
    write("requirements.txt", lines);
    write("envkit.yaml", "framework: " + framework + "\npython-requirements: [requirements.txt]\n");
  }
};

}  // namespace

TEST_CASE("a bare torch locks the newest release the index serves, with its wheels' CUDA",
          "[slow]") {
  TodayProject today;
  if (today.skip()) return;
  today.requirements("torch\n", "torch");
  const auto lockfile = today.locked();
  // torch 2.15.0 pins cuda-toolkit 13.2.2 and nvidia-cudnn-cu13 9.26.0.51: newer than the
  // database, they come from the index, and the lock says so.
  CHECK(locked_version(lockfile, "torch") == "2.15.0 cu132");
  CHECK(locked_version(lockfile, "cuda") == "13.2.2");
  CHECK(locked_version(lockfile, "cudnn") == "9.26.0.51 cuda13");
  CHECK_THAT(locked_version(lockfile, "python"), Catch::Matchers::StartsWith("3.14."));
  CHECK_THAT(lockfile.index_facts.at("cuda"), Contains("https://pypi.org/simple (read "));
  CHECK(lockfile.index_facts.contains("cudnn"));
  // What the lock needs of a machine: the family minimum of CUDA 13 (minor-version
  // compatibility), as the database's driver table gives it for 13.0.
  CHECK(lockfile.system.driver == ">=580.65.06");
  // The CUDA runtime and cuDNN are the very wheels the closure installs (one copy).
  const auto& python = lockfile.platforms.at(0).python;
  REQUIRE(python);
  const auto cudnn = std::find_if(python->packages.begin(), python->packages.end(),
                                  [](const auto& w) { return w.name == "nvidia-cudnn-cu13"; });
  REQUIRE(cudnn != python->packages.end());
  CHECK(cudnn->version == "9.26.0.51");
  CHECK(cudnn->provides == "cudnn");

  // What no index says was inferred, and the lock says so.
  const auto again = today.lock();
  CHECK_THAT(again.err, Contains("note: cuda 13.2.2: newer than the database's driver table; the "
                                 "13.x family minimum (minor-version compatibility"));

  // `torch==` that version locks the same, from the cached overlay.
  today.requirements("torch==2.15.0\n", "torch ==2.15.0");
  CHECK(locked_version(today.locked(), "torch") == "2.15.0 cu132");
}

TEST_CASE("a release the index gains between two locks is seen by the second", "[slow]") {
  TodayProject today;
  if (today.skip()) return;
  const auto before = without_releases(
      today.project.dir.path(),
      {{"torch", "2.15.0"}, {"cuda-toolkit", "13.2.2"}, {"nvidia-cudnn-cu13", "9.26.0.51"}});
  today.serve({before});
  today.requirements("torch\n", "torch");
  // The database knows torch 2.15.0, but this index does not serve it: 2.14.1 is its newest.
  CHECK(locked_version(today.locked(), "torch") == "2.14.1 cu130");

  today.serve({today_description()});  // torch 2.15.0 is published
  // Within the overlay's TTL the lock keeps what it read; --refresh reads the index now.
  CHECK(locked_version(today.locked(), "torch") == "2.14.1 cu130");
  const auto lockfile = today.locked({"--refresh"});
  CHECK(locked_version(lockfile, "torch") == "2.15.0 cu132");
  CHECK(locked_version(lockfile, "cuda") == "13.2.2");
}

TEST_CASE("jax[cuda12]==0.4.30 locks with the cuDNN its closure picks from the index", "[slow]") {
  TodayProject today;
  if (today.skip()) return;
  today.requirements("jax[cuda12]==0.4.30\n", "jax ==0.4.30");
  const auto lockfile = today.locked();
  CHECK(locked_version(lockfile, "jax") == "0.4.30 cuda12");
  // uv picks nvidia-cudnn-cu12 9.28.0.42, newer than the database: the index's facts have it.
  CHECK(locked_version(lockfile, "cudnn") == "9.28.0.42 cuda12");
  CHECK_THAT(locked_version(lockfile, "cuda"), Catch::Matchers::StartsWith("12.9"));
  // With the closure on, the extra's CUDA is a reason of the solve, named at its line, never
  // as envkit.yaml's (closure_e2e_test.cpp: a pin of the closure's wheels, named as theirs).
  const auto why = today.envkit({"why", "cuda"});
  INFO(why.err);
  CHECK(why.exit_code == 0);
  CHECK_THAT(why.err,
             Contains("`jax[cuda12]==0.4.30` in requirements.txt:1 requires cuda <13,>=12"));
  CHECK_THAT(why.err, !Contains("envkit.yaml requires cuda"));
}

TEST_CASE("offline with nothing cached, the lock says the built-in database answers alone",
          "[slow]") {
  TodayProject today;
  if (today.skip()) return;
  today.requirements("torch==2.14.1\n", "torch ==2.14.1");
  const auto ran = today.lock({"--offline"});
  CHECK_THAT(ran.err, Contains("offline") && Contains("answers alone"));
}

}  // namespace envkit::test
