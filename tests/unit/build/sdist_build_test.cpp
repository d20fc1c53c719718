// Python sdists built into wheels by an environment's own Python: a venv of
// the machine's python3, a setup.py sdist packed by the test. Without
// setuptools the failure says what the build lacked and what to add.
#include "envkit/build/sdist_build.hpp"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <source_location>

#include "envkit/sys/fs.hpp"
#include "envkit/sys/process.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

namespace envkit::build {
namespace {

namespace fs = std::filesystem;
using namespace store;
using Catch::Matchers::Contains;
using test::TempDir;

// A venv of the machine's python3 under `dir`, with pip; nullopt (the skip
// recorded) where the machine has no python3 with venv and pip.
std::optional<fs::path> make_venv(const TempDir& dir,
                                  std::source_location where = std::source_location::current()) {
  const auto venv = dir.path() / "venv";
  const auto command = "python3 -m venv '" + venv.string() + "' >/dev/null 2>&1";
  if (std::system(command.c_str()) != 0) {
    test::skip_test(test::SkipKind::setup_should_provide,
                    "no python3 with venv and pip on PATH (scripts/setup installs python3-venv "
                    "and python3-pip)",
                    where);
    return std::nullopt;
  }
  return venv / "bin" / "python3";
}

// `setup.py` (and PKG-INFO) of NAME 1.0 packed as DIR/NAME-1.0.tar.gz.
fs::path setup_py_sdist(const TempDir& dir, const std::string& name, const std::string& setup) {
  const auto top = dir.path() / "src" / (name + "-1.0");
  fs::create_directories(top);
  std::ofstream(top / "setup.py") << setup;
  std::ofstream(top / "PKG-INFO") << "Metadata-Version: 2.1\nName: " << name << "\nVersion: 1.0\n";
  const auto sdist = dir.path() / (name + "-1.0.tar.gz");
  auto packed = sys::run_process(
      {"tar", "-czf", sdist.string(), "-C", top.parent_path().string(), top.filename().string()});
  REQUIRE(packed);
  REQUIRE(packed->exit_code == 0);
  return sdist;
}

SdistBuild build_of(const TempDir& dir, const fs::path& python, const fs::path& sdist,
                    std::set<std::string> closure) {
  return {.label = "needs-setuptools 1.0",
          .sdist = sdist,
          .out = dir.path() / "out",
          .log = dir.path() / "logs" / "needs-setuptools.log",
          .context = {.python = python, .python_version = "3", .closure = std::move(closure)}};
}

}  // namespace

TEST_CASE("an sdist built without setuptools says to add it to the requirements",
          "[store][sdist][slow]") {
  const TempDir dir;
  const auto python = make_venv(dir);
  if (!python) return;
  // The environment lacks setuptools, as a venv of Python 3.12 does.
  auto removed = sys::run_process(
      {python->string(), "-m", "pip", "uninstall", "--yes", "--quiet", "setuptools"},
      {.env = {{"PIP_CONFIG_FILE", "/dev/null"}}, .timeout = std::chrono::minutes(2)});
  REQUIRE(removed);
  const auto sdist = setup_py_sdist(
      dir, "needs-setuptools",
      "from setuptools import setup\nsetup(name='needs-setuptools', version='1.0')\n");

  // The closure lacks it.
  const auto build = build_of(dir, *python, sdist, {"tinybuild"});
  auto built = build_sdist(build);
  REQUIRE_FALSE(built);
  const auto& error = built.error();
  CHECK(error.message() ==
        "cannot build needs-setuptools 1.0 from source: `pip wheel` failed (exit status 2)");
  CHECK_THAT(error.to_string(), Contains("No module named 'setuptools'"));
  CHECK(error.causes().back() ==
        "the build needs `setuptools`, which the environment's Python cannot import: the lock's "
        "Python closure does not have it");
  CHECK_THAT(error.to_string(),
             Contains("hint: add `setuptools` to the project's Python requirements"));
  CHECK_THAT(error.to_string(), Contains("the whole log: " + build.log.string()));
  CHECK_THAT(*sys::read_file(build.log), Contains("$ " + python->string() + " -I -m pip wheel"));

  // The closure has it, yet the environment cannot import it.
  auto again = build_sdist(build_of(dir, *python, sdist, {"setuptools"}));
  REQUIRE_FALSE(again);
  CHECK(again.error().causes().back() ==
        "the build needs `setuptools`, which the environment's Python cannot import");
}

TEST_CASE("an sdist whose setup.py imports pkg_resources or the framework says what to add",
          "[store][sdist][slow]") {
  const TempDir dir;
  const auto python = make_venv(dir);
  if (!python) return;
  SECTION("pkg_resources, which setuptools 82 no longer has") {
    // What a setup.py's `import pkg_resources` raises under setuptools 82.
    const auto sdist = setup_py_sdist(
        dir, "old-era", "raise ModuleNotFoundError(\"No module named 'pkg_resources'\")\n");
    auto built = build_sdist(build_of(dir, *python, sdist, {"setuptools"}));
    REQUIRE_FALSE(built);
    CHECK(built.error().causes().back() ==
          "the build imports `pkg_resources`, which setuptools 82 and later no longer have: the "
          "lock's Python closure has such a setuptools");
    CHECK_THAT(built.error().to_string(),
               Contains("hint: add `setuptools<82` to the project's Python requirements"));
  }
  SECTION("the framework, which the closure lacks") {
    const auto sdist = setup_py_sdist(dir, "imports-torch",
                                      "import torch\nfrom setuptools import setup\nsetup()\n");
    auto built = build_sdist(build_of(dir, *python, sdist, {"setuptools"}));
    REQUIRE_FALSE(built);
    CHECK(built.error().causes().back() ==
          "the build imports `torch`, which the environment's Python cannot import: the lock's "
          "Python closure does not have it");
    CHECK_THAT(built.error().to_string(), Contains("hint: build it with the framework"));
  }
}

TEST_CASE("the wheel built from an sdist is cached by sdist and Python version", "[store][sdist]") {
  CHECK(Cache::sdist_wheel_id(std::string(64, 'a'), "3.11.7") ==
        Cache::sdist_wheel_id(std::string(64, 'a'), "3.11.7"));
  CHECK(Cache::sdist_wheel_id(std::string(64, 'a'), "3.11.7") !=
        Cache::sdist_wheel_id(std::string(64, 'a'), "3.6.9"));
  CHECK(Cache::sdist_wheel_id(std::string(64, 'a'), "3.11.7")
            .starts_with(std::string(64, 'a') + "-wheel-"));
}

}  // namespace envkit::build
