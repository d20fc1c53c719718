// `envkit lock` resolves the Python closure for the lock's own target — the
// Python the solver chose (or the machine's declared one), the lock's
// platforms — never for the machine running it. Hermetic: the package index of
// tests/data/pyindex (real names, versions, tags and requirements; generated
// contents) on nginx as envkit's download mirror (ENVKIT_MIRRORS), resolved by
// envkit's uv (tests/.tools/uv or ENVKIT_UV), with the committed recipe
// database. The lock records the upstream URLs; a proxy on a closed port stops
// anything that would reach the real internet.
#include <catch2/catch.hpp>
#include <set>

#include "closure_project.hpp"
#include "envkit/core/url.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/sys/fs.hpp"
#include "install_support.hpp"
#include "isolated_project.hpp"
#include "support/http_server.hpp"
#include "support/python_index.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

constexpr std::string_view kPypi = "https://files.pythonhosted.org/packages/";

// The hermetic index of tests/data/pyindex, and a manifest written before each lock.
struct ClosureProject : ClosureOnProject {
  bool skip() { return ClosureOnProject::skip(pyindex_descriptions(test_data_dir())); }

  // `envkit lock` of `manifest` (through `mirror`, when given, instead of the index).
  [[nodiscard]] sys::ProcessOutput lock(const std::string& manifest,
                                        std::optional<std::string> mirror = {}) const {
    write("envkit.yaml", manifest);
    return envkit({"lock"}, std::move(mirror));
  }
  // Locks `manifest`, which must succeed, and reads the lock back.
  [[nodiscard]] lock::Lockfile locked(const std::string& manifest) const {
    write("envkit.yaml", manifest);
    return ClosureOnProject::locked();
  }
};

const lock::PlatformLock& platform_of(const lock::Lockfile& lockfile, specs::Platform platform) {
  for (const auto& locked : lockfile.platforms) {
    if (locked.platform == platform) return locked;
  }
  FAIL("the lock has no " << specs::to_string(platform));
  throw std::logic_error("unreachable");
}

// The file names of a platform's closure; every URL is upstream's, not the mirror's.
std::set<std::string> closure_files(const lock::PlatformLock& locked) {
  REQUIRE(locked.python);
  std::set<std::string> files;
  for (const auto& package : locked.python->packages) {
    CHECK_THAT(package.url, StartsWith("https://"));
    CHECK_THAT(package.url, !Contains("127.0.0.1"));
    files.insert(url::file_name(package.url));
  }
  return files;
}

std::string version_of(const lock::PlatformLock& locked, std::string_view name) {
  for (const auto& package : locked.packages) {
    if (package.name == name) return package.version.original();
  }
  return "";
}

TEST_CASE("tensorflow-gpu 1.6.0 locks CPython 3.6 wheels and the sdists PyPI has no wheel for",
          "[lock][python][closure]") {
  ClosureProject fixture;
  if (fixture.skip()) return;
  const auto lockfile = fixture.locked(
      "framework: tensorflow-gpu ==1.6.0\nexternal: {python: \"3.6.9\"}\n"
      "system: {driver: \"390.48\", cuda-arch: [\"6.1\"]}\n");
  const auto& platform = platform_of(lockfile, specs::Platform::linux_x86_64);
  const auto files = closure_files(platform);
  CHECK(files.count("tensorflow_gpu-1.6.0-cp36-cp36m-manylinux1_x86_64.whl") == 1);
  CHECK(files.count("html5lib-0.9999999.tar.gz") == 1);
  CHECK(files.count("termcolor-1.1.0.tar.gz") == 1);
  CHECK(files.count("dataclasses-0.8-py3-none-any.whl") == 1);  // python_version < "3.7"
  CHECK(platform.python->python == "3.6.9");
  for (const auto& package : platform.python->packages)
    CHECK_THAT(package.url, StartsWith(std::string(kPypi)));
}

TEST_CASE("only-binary: true refuses a requirement that has only a source distribution",
          "[lock][python][closure]") {
  ClosureProject fixture;
  if (fixture.skip()) return;
  const auto locked = fixture.lock(
      "framework: tensorflow-gpu ==1.6.0\nexternal: {python: \"3.6.9\"}\nonly-binary: true\n"
      "system: {driver: \"390.48\", cuda-arch: [\"6.1\"]}\n");
  CHECK(locked.exit_code == 1);
  // html5lib 0.9999999 and termcolor 1.1.0 exist on PyPI as sdists only.
  CHECK_THAT(locked.err, Contains("html5lib") || Contains("termcolor"));
  CHECK_THAT(locked.err, Contains("CPython 3.6.9"));
  CHECK_FALSE(fs::exists(fixture.project.root / "envkit.lock"));
}

TEST_CASE("torch 1.8.0 with Python 3.8 locks cp38 wheels", "[lock][python][closure]") {
  ClosureProject fixture;
  if (fixture.skip()) return;
  const auto lockfile = fixture.locked(
      "framework: torch ==1.8.0\nrequires: {python: \"3.8\"}\n"
      "system: {driver: \"460.32.03\", cuda-arch: [\"7.5\"]}\n");
  const auto files = closure_files(platform_of(lockfile, specs::Platform::linux_x86_64));
  CHECK(files.count("torch-1.8.0-cp38-cp38-manylinux1_x86_64.whl") == 1);
  CHECK(files.count("numpy-1.24.4-cp38-cp38-manylinux_2_17_x86_64.manylinux2014_x86_64.whl") == 1);
}

TEST_CASE("tensorflow 2.10.0 locks for the Python the solver chose, not the machine's",
          "[lock][python][closure]") {
  ClosureProject fixture;
  if (fixture.skip()) return;
  const auto lockfile = fixture.locked(
      "framework: tensorflow ==2.10.0\nsystem: {driver: \"470.57.02\", cuda-arch: [\"7.0\"]}\n");
  const auto& platform = platform_of(lockfile, specs::Platform::linux_x86_64);
  CHECK_THAT(version_of(platform, "python"), StartsWith("3.10."));
  const auto files = closure_files(platform);
  CHECK(files.count(
            "tensorflow-2.10.0-cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64.whl") == 1);
  for (const auto& file : files)
    CHECK_THAT(file, !Contains("cp311"));
}

TEST_CASE("torch 2.4.1 from PyPI is the cu121 build: the lock's CUDA is 12.1",
          "[lock][python][closure]") {
  ClosureProject fixture;
  if (fixture.skip()) return;
  const auto lockfile = fixture.locked(
      "framework: torch ==2.4.1\nindexes: [https://pypi.org/simple]\n"
      "system: {driver: \"550.54.15\", cuda-arch: [\"8.9\"]}\n");
  const auto& platform = platform_of(lockfile, specs::Platform::linux_x86_64);
  CHECK_THAT(version_of(platform, "cuda"), StartsWith("12.1."));
  CHECK(version_of(platform, "cudnn") == "9.1.0.70");
  const auto files = closure_files(platform);
  CHECK(files.count("torch-2.4.1-cp312-cp312-manylinux1_x86_64.whl") == 1);
  CHECK(files.count("nvidia_cuda_runtime_cu12-12.1.105-py3-none-manylinux1_x86_64.whl") == 1);
  for (const auto& package : platform.python->packages) {
    if (package.name == "nvidia-cudnn-cu12") CHECK(package.provides == "cudnn");
  }
}

TEST_CASE("torch 2.4.1 with PyTorch's cu124 index locks torch 2.4.1+cu124",
          "[lock][python][closure]") {
  ClosureProject fixture;
  if (fixture.skip()) return;
  const auto lockfile = fixture.locked(
      "framework: torch ==2.4.1\n"
      "indexes: [https://pypi.org/simple, https://download.pytorch.org/whl/cu124]\n"
      "system: {driver: \"550.54.15\", cuda-arch: [\"8.9\"]}\n");
  const auto& platform = platform_of(lockfile, specs::Platform::linux_x86_64);
  CHECK_THAT(version_of(platform, "cuda"), StartsWith("12.4."));
  REQUIRE(platform.python);
  const auto torch =
      std::find_if(platform.python->packages.begin(), platform.python->packages.end(),
                   [](const auto& package) { return package.name == "torch"; });
  REQUIRE(torch != platform.python->packages.end());
  CHECK(torch->version == "2.4.1+cu124");
  CHECK_THAT(torch->url, StartsWith("https://download.pytorch.org/whl/cu124/torch-2.4.1%2Bcu124-"));
  CHECK(closure_files(platform).count(
            "nvidia_cuda_runtime_cu12-12.4.99-py3-none-manylinux2014_x86_64.whl") == 1);
}

TEST_CASE("a lock for linux-x86_64 and linux-aarch64 has a closure for each",
          "[lock][python][closure]") {
  ClosureProject fixture;
  if (fixture.skip()) return;
  const auto lockfile = fixture.locked(
      "framework: torch ==2.12.1\nplatforms: [linux-x86_64, linux-aarch64]\n"
      "system: {driver: \"580.65.06\", cuda-arch: [\"9.0\"]}\n");
  const auto x86_64 = closure_files(platform_of(lockfile, specs::Platform::linux_x86_64));
  const auto aarch64 = closure_files(platform_of(lockfile, specs::Platform::linux_aarch64));
  CHECK(x86_64.count("torch-2.12.1-cp313-cp313-manylinux_2_28_x86_64.whl") == 1);
  CHECK(aarch64.count("torch-2.12.1-cp313-cp313-manylinux_2_28_aarch64.whl") == 1);
  for (const auto& file : aarch64)
    CHECK_THAT(file, !Contains("x86_64"));
}

TEST_CASE("a requirement with neither a CPython 3.6 wheel nor an sdist fails, naming it",
          "[lock][python][closure]") {
  ClosureProject fixture;
  if (fixture.skip()) return;
  fixture.project.write(fixture.project.root / "requirements.txt", "torch==2.4.1\n");
  const auto locked = fixture.lock(
      "framework: tensorflow-gpu ==1.6.0\nexternal: {python: \"3.6.9\"}\n"
      "python-requirements: requirements.txt\nsystem: {driver: \"390.48\"}\n");
  CHECK(locked.exit_code == 1);
  CHECK_THAT(locked.err, Contains("torch==2.4.1"));
  CHECK_THAT(locked.err, Contains("CPython 3.6"));
  CHECK_THAT(locked.err, Contains("https://pypi.org/simple"));
  CHECK_FALSE(fs::exists(fixture.project.root / "envkit.lock"));
}

TEST_CASE("an index that cannot be reached fails with its URL and keeps the previous lock",
          "[lock][python][closure][slow]") {
  ClosureProject fixture;
  if (fixture.skip()) return;
  const std::string manifest =
      "framework: torch ==2.4.1\npython-requirements: requirements.txt\n"
      "system: {driver: \"550.54.15\", cuda-arch: [\"8.9\"]}\n";
  fixture.project.write(fixture.project.root / "requirements.txt", "six\n");
  const auto first = fixture.lock(manifest);
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  const auto before = sys::read_file(fixture.project.root / "envkit.lock").value();

  // A port nothing listens on any more; a changed requirement makes the closure resolve again.
  std::string closed;
  {
    const StaticHttpServer gone(fixture.served);
    closed = gone.url("");
  }
  fixture.project.write(fixture.project.root / "requirements.txt", "six\nwheel\n");
  const auto failed = fixture.lock(manifest, closed);
  CHECK(failed.exit_code == 1);
  // A network error naming the index, never "no matching distribution" or a ruled-out torch.
  CHECK_THAT(failed.err, Contains("uv could not read a package index"));
  CHECK_THAT(failed.err, Contains("Failed to fetch") && Contains("pypi.org/simple"));
  CHECK_THAT(failed.err, !Contains("cannot be installed"));
  CHECK(sys::read_file(fixture.project.root / "envkit.lock").value() == before);
}

}  // namespace
}  // namespace envkit::test

namespace envkit::test {
namespace {

// The hints of an unsatisfiable lock, one per `hint:` line.
std::vector<std::string> hints_of(const std::string& err) {
  std::vector<std::string> hints;
  std::size_t at = 0;
  while ((at = err.find("\nhint: ", at)) != std::string::npos) {
    at += 7;
    hints.push_back(err.substr(at, err.find('\n', at) - at));
  }
  return hints;
}

}  // namespace

// What a user with a driver too old for CUDA 12 gets from PyPI alone: the error, and hints
// that each lock when followed.
TEST_CASE("torch 2.1 on a driver too old for CUDA 12: PyPI's build is cu121, and the hints hold",
          "[lock][python][closure][hints]") {
  ClosureProject fixture;
  if (fixture.skip()) return;
  const auto failed = fixture.lock("framework: torch 2.1.*\nsystem: {driver: 520.61.05}\n");
  INFO(failed.err);
  CHECK(failed.exit_code == 1);
  CHECK_THAT(failed.err, Contains("torch 2.1.2 on https://pypi.org/simple is the cu121 build") &&
                             Contains("520.61.05"));
  const auto hints = hints_of(failed.err);
  // The smallest driver: CUDA 12's family minimum, not CUDA 12.1's own 530.30.02.
  CHECK(std::find(hints.begin(), hints.end(),
                  "upgrade the NVIDIA driver to >= 525.60.13 (what cuda 12.1.1 needs, through "
                  "minor-version compatibility)") != hints.end());
  CHECK(std::any_of(hints.begin(), hints.end(), [](const std::string& hint) {
    return hint.find("https://download.pytorch.org/whl/cu118") != std::string::npos;
  }));
  // No hint proposes a torch release: none of 2.1 fits this driver from PyPI.
  CHECK(std::none_of(hints.begin(), hints.end(),
                     [](const std::string& hint) { return hint.starts_with("use torch"); }));
  // Following the driver hint locks.
  const auto followed = fixture.locked("framework: torch 2.1.*\nsystem: {driver: 525.60.13}\n");
  CHECK(version_of(platform_of(followed, specs::Platform::linux_x86_64), "torch") == "2.1.2");
}

TEST_CASE("why on torch 2.4 with a 450 driver gives the user's error, and its hint holds",
          "[lock][python][closure][hints]") {
  ClosureProject fixture;
  if (fixture.skip()) return;
  fixture.project.write(fixture.project.root / "envkit.yaml",
                        "framework: torch 2.4.*\nsystem: {driver: 450.80.02}\n");
  const auto failed = fixture.envkit({"why", "cuda"});
  INFO(failed.err);
  CHECK(failed.exit_code == 1);
  CHECK_THAT(failed.err, Contains("torch 2.4.1 on https://pypi.org/simple is the cu121 build"));
  const auto hints = hints_of(failed.err);
  REQUIRE_FALSE(hints.empty());
  CHECK(hints[0] ==
        "upgrade the NVIDIA driver to >= 525.60.13 (what cuda 12.1.1 needs, through "
        "minor-version compatibility)");
  fixture.project.write(fixture.project.root / "envkit.yaml",
                        "framework: torch 2.4.*\nsystem: {driver: 525.60.13}\n");
  const auto followed = fixture.envkit({"why", "cuda"});
  INFO(followed.err);
  CHECK(followed.exit_code == 0);
  CHECK_THAT(followed.err, Catch::StartsWith("cuda 12.1.1 on linux-x86_64, because:\n") &&
                               Contains("only through minor-version compatibility"));
}

TEST_CASE("torch 2.12 for Linux and Windows from PyPI alone: Windows has no CUDA build there",
          "[lock][python][closure][hints]") {
  ClosureProject fixture;
  if (fixture.skip()) return;
  const auto failed = fixture.lock(
      "framework: torch 2.12.*\nplatforms: [linux-x86_64, windows-x86_64]\n"
      "system: {driver: 580.65.06}\n");
  INFO(failed.err);
  CHECK(failed.exit_code == 1);
  CHECK_THAT(failed.err, Contains("no environment satisfies envkit.yaml on windows-x86_64"));
  CHECK_THAT(
      failed.err,
      Contains("hint: to use torch's cu130 build, add its index to envkit.yaml: "
               "`indexes: [https://pypi.org/simple, https://download.pytorch.org/whl/cu130]`"));
  CHECK_FALSE(fs::exists(fixture.project.root / "envkit.lock"));
}

}  // namespace envkit::test
