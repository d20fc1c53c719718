// Opt-in (ENVKIT_LIVE_TESTS=1; downloads about 3 GB from PyPI): a real torch
// release locked with the committed recipe database and the machine's Python,
// installed into a fresh prefix; torch imports with the locked version and the
// cuDNN it loads is the prefix's only cuDNN.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <set>

#include "envkit/lock/lockfile.hpp"
#include "support/envkit_runner.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

// torch prints its version, loads cuDNN, then the cuDNN files it mapped.
constexpr std::string_view kProbe = R"py(import torch
print(torch.__version__)
print(torch.backends.cudnn.version())
for line in open("/proc/self/maps"):
    if "libcudnn" in line and "/" in line:
        print("maps", line.split()[-1])
)py";

TEST_CASE("a real torch from PyPI installs with the prefix's cuDNN", "[python][live]") {
  if (live_tests_off("lock and install torch from PyPI (~3 GB)")) return;
  const TempDir work;
  const auto project = work.path() / "project";
  fs::create_directories(project);
  // zlib as the machine has it: its source host is not reachable from every machine.
  std::ofstream(project / "envkit.yaml") << "framework: torch ==2.4.1\n"
                                            "requires: {cuda: \"12\"}\n"
                                            "external: {python: system, zlib: \"1.2.13\"}\n"
                                            "system: {driver: \"550.54.15\"}\n";
  const auto cache = (work.path() / "cache").string();
  const auto locked = run_envkit(
      {.args = {"-C", project.string(), "lock"},
       .env = {{"ENVKIT_NO_PYTHON", std::nullopt}, {"ENVKIT_NO_LIVE_INDEX", std::nullopt}},
       .timeout = std::chrono::minutes(10)});
  INFO(locked.err);
  REQUIRE(locked.exit_code == 0);
  auto lockfile = lock::load(project / "envkit.lock");
  REQUIRE(lockfile);
  const auto& python = lockfile->platforms.at(0).python;
  REQUIRE(python);
  const auto cudnn = std::find_if(python->packages.begin(), python->packages.end(),
                                  [](const auto& w) { return w.name == "nvidia-cudnn-cu12"; });
  REQUIRE(cudnn != python->packages.end());
  CHECK(cudnn->provides == "cudnn");

  const auto installed = run_envkit(
      {.args = {"-C", project.string(), "--cache-dir", cache, "install"},
       .env = {{"ENVKIT_NO_PYTHON", std::nullopt}, {"ENVKIT_NO_LIVE_INDEX", std::nullopt}},
       .timeout = std::chrono::minutes(30)});
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);
  const auto ran = run_envkit(
      {.args = {"-C", project.string(), "run", "--", "python", "-c", std::string(kProbe)},
       .timeout = std::chrono::minutes(5)});
  INFO(ran.err);
  REQUIRE(ran.exit_code == 0);
  CHECK(ran.out.starts_with("2.4.1"));
  const auto prefix = fs::canonical(project / ".envkit" / "env");
  int mapped = 0;
  std::istringstream lines(ran.out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("maps ")) continue;
    ++mapped;
    CHECK_THAT(fs::canonical(line.substr(5)).string(), Contains(prefix.string()));
  }
  CHECK(mapped > 0);
  std::set<ino_t> cudnn_files;
  for (const auto& entry : fs::recursive_directory_iterator(prefix)) {
    if (!entry.is_regular_file() || !entry.path().filename().string().starts_with("libcudnn.so"))
      continue;
    struct stat status {};
    REQUIRE(::stat(entry.path().c_str(), &status) == 0);
    cudnn_files.insert(status.st_ino);
  }
  CHECK(cudnn_files.size() == 1);
}

}  // namespace
}  // namespace envkit::test
