// The framework and the project's Python requirements, end to end and
// hermetic: a PEP 503 index on nginx (127.0.0.1) holding small wheels the test
// makes (a fake `torch` pinning a fake `nvidia-cudnn-cu12`, plus a dependency
// with a console script), a recipe database naming that cuDNN wheel, and the
// machine's real python3 with its real pip: `envkit lock` resolves the closure
// with uv, `envkit install` makes a venv in the prefix, installs every wheel
// itself from envkit's verified downloads, and links the cuDNN
// wheel's files into the prefix's lib/ (one inode, two paths).
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <set>

#include "envkit/lock/lockfile.hpp"
#include "install_support.hpp"
#include "isolated_project.hpp"
#include "support/http_server.hpp"
#include "support/python_index.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

const FakeWheel kCudnn{.name = "nvidia-cudnn-cu12",
                       .version = "9.1.0.70",
                       .requires_dist = {},
                       .files = {{"nvidia/__init__.py", ""},
                                 {"nvidia/cudnn/__init__.py", ""},
                                 {"nvidia/cudnn/lib/libcudnn.so.9", "not really cuDNN 9\n"},
                                 {"nvidia/cudnn/include/cudnn.h", "#define CUDNN_MAJOR 9\n"}}};

const FakeWheel kDependency{
    .name = "fakedep",
    .version = "1.0",
    .requires_dist = {},
    .files = {{"fakedep/__init__.py", "def main():\n    print('hello from fakedep')\n"},
              // Bytecode the wheel ships, which pip compiles again over it at install
              // (numpy ships such files): one per CPython the host may have.
              {"fakedep/__pycache__/__init__.cpython-39.pyc", "stale bytecode"},
              {"fakedep/__pycache__/__init__.cpython-310.pyc", "stale bytecode"},
              {"fakedep/__pycache__/__init__.cpython-311.pyc", "stale bytecode"},
              {"fakedep/__pycache__/__init__.cpython-312.pyc", "stale bytecode"},
              {"fakedep/__pycache__/__init__.cpython-313.pyc", "stale bytecode"},
              {"fakedep-1.0.dist-info/entry_points.txt",
               "[console_scripts]\nfakedep-hello = fakedep:main\n"}}};

const FakeWheel kTorch{.name = "torch",
                       .version = "9.9.0",
                       .requires_dist = {"nvidia-cudnn-cu12==9.1.0.70", "fakedep"},
                       .files = {{"torch/__init__.py", "__version__ = '9.9.0'\n"}}};

ino_t inode_of(const fs::path& path) {
  struct stat status {};
  REQUIRE(::stat(path.c_str(), &status) == 0);
  return status.st_ino;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct PythonProject {
  IsolatedProject project;
  fs::path served = project.dir.path() / "index";
  fs::path recipes = project.dir.path() / "recipes";
  PythonIndex index{served};
  std::optional<StaticHttpServer> server;

  bool skip() {
    if (nginx_missing() || host_python_missing()) return true;
    index.add(kCudnn);
    index.add(kDependency);
    index.add(kTorch);
    server.emplace(served);
    write_recipes();
    project.write(project.root / "requirements.txt", "fakedep\n");
    project.write(project.root / "envkit.yaml",
                  "framework: torch ==9.9.0\n"
                  "external: {python: system}\n"
                  "python-requirements: requirements.txt\n"
                  "indexes: [" +
                      server->url("/simple/") +
                      "]\n"
                      "system: {driver: \"550.54.15\"}\n");
    return false;
  }

  // A recipe database with the fake torch, pinning the cuDNN the index serves.
  void write_recipes() const {
    const auto wheel = served / "files" / PythonIndex::filename_of(kCudnn);
    project.write(recipes / "torch.yaml",
                  "name: torch\nversions:\n  - version: \"9.9.0\"\n    builds:\n"
                  "      - id: cu121\n        requires:\n          cudnn: \"==9.1.0.70\"\n"
                  "          python: \">=3.8\"\n        platforms: [linux-x86_64]\n");
    project.write(recipes / "cudnn.yaml",
                  "name: cudnn\nversions:\n  - version: \"9.1.0.70\"\n    builds:\n"
                  "      - id: cuda12\n        platforms: [linux-x86_64]\n");
    project.write(recipes / "cudnn" / "9.1.0.70.yaml",
                  "version: \"9.1.0.70\"\nartifacts:\n  - build: cuda12\n"
                  "    platform: linux-x86_64\n    component: cudnn\n    kind: wheel\n"
                  "    format: whl\n    layout: nvidia-wheel\n    wheel-root: nvidia/cudnn\n"
                  "    url: " +
                      server->url("/files/" + PythonIndex::filename_of(kCudnn)) +
                      "\n    sha256: \"" + PythonIndex::sha256_of(wheel) + "\"\n");
  }

  [[nodiscard]] sys::ProcessOutput envkit(std::vector<std::string> args) const {
    args.insert(args.begin(), {"--recipes", recipes.string()});
    return project.envkit(std::move(args), {{"ENVKIT_NO_PYTHON", std::nullopt}});
  }
  [[nodiscard]] fs::path prefix() const { return project.prefix(); }
  [[nodiscard]] fs::path site() const {
    for (const auto& entry : fs::directory_iterator(prefix() / "lib")) {
      if (entry.path().filename().string().starts_with("python3"))
        return entry.path() / "site-packages";
    }
    FAIL("no lib/python3.X in the prefix");
    return {};
  }
};

TEST_CASE("envkit lock records the Python closure with exact wheels", "[python][integration]") {
  PythonProject fixture;
  if (fixture.skip()) return;
  const auto locked = fixture.envkit({"lock"});
  INFO(locked.err);
  REQUIRE(locked.exit_code == 0);
  auto lockfile = lock::load(fixture.project.root / "envkit.lock");
  REQUIRE(lockfile);
  const auto& platform = lockfile->platforms.at(0);
  REQUIRE(platform.python);
  std::map<std::string, lock::PythonWheel> wheels;
  for (const auto& wheel : platform.python->packages)
    wheels[wheel.name] = wheel;
  REQUIRE(wheels.size() == 3);
  // Resolved by uv for the lock's Python, which is the external one here.
  CHECK_THAT(platform.python->resolver, Contains("uv 0.13.9 (for CPython 3.11"));
  for (const auto& wheel : {kCudnn, kDependency, kTorch}) {
    const auto& locked_wheel = wheels.at(wheel.name);
    CHECK(locked_wheel.version == wheel.version);
    CHECK(locked_wheel.url == fixture.server->url("/files/" + PythonIndex::filename_of(wheel)));
    CHECK(locked_wheel.sha256 ==
          PythonIndex::sha256_of(fixture.served / "files" / PythonIndex::filename_of(wheel)));
  }
  // The framework's cuDNN wheel is the prefix's cuDNN, and nothing else is.
  CHECK(wheels.at("nvidia-cudnn-cu12").provides == "cudnn");
  CHECK(wheels.at("torch").provides.empty());
  const auto cudnn = std::find_if(platform.packages.begin(), platform.packages.end(),
                                  [](const auto& p) { return p.name == "cudnn"; });
  REQUIRE(cudnn != platform.packages.end());
  REQUIRE(cudnn->artifacts.size() == 1);
  CHECK(cudnn->artifacts[0].sha256 == wheels.at("nvidia-cudnn-cu12").sha256);

  SECTION("the same inputs lock the same bytes, and --check agrees") {
    const auto first = read_text(fixture.project.root / "envkit.lock");
    REQUIRE(fixture.envkit({"lock"}).exit_code == 0);
    CHECK(read_text(fixture.project.root / "envkit.lock") == first);
    CHECK(fixture.envkit({"lock", "--check"}).exit_code == 0);
  }
  SECTION("a changed requirements file makes the lock stale") {
    fixture.project.write(fixture.project.root / "requirements.txt", "fakedep==1.0\n");
    const auto check = fixture.envkit({"lock", "--check"});
    CHECK(check.exit_code == 1);
    CHECK_THAT(check.err, Contains("Python requirements"));
  }
  SECTION("a requirement the index cannot meet fails with the resolver's words") {
    const auto before = read_text(fixture.project.root / "envkit.lock");
    fixture.project.write(fixture.project.root / "requirements.txt", "fakedep==2.0\n");
    const auto failed = fixture.envkit({"lock"});
    CHECK(failed.exit_code == 1);
    CHECK_THAT(failed.err, Contains("fakedep==2.0"));
    CHECK_THAT(failed.err, Contains("there is no version of fakedep==2.0") &&
                               Contains("envkit resolved for CPython 3.11"));
    CHECK(read_text(fixture.project.root / "envkit.lock") == before);
  }
}

TEST_CASE("envkit install puts the closure in the prefix, with one copy of cuDNN",
          "[python][integration][slow]") {
  PythonProject fixture;
  if (fixture.skip()) return;
  const auto installed = fixture.envkit({"install"});
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);
  // envkit installs the wheels itself (no pip phase), and the report counts them.
  CHECK_THAT(installed.err, !Contains("with pip") && Contains(" Python packages: "));

  const auto imported = fixture.project.envkit(
      {"run", "--", "python", "-c", "import torch, fakedep, sys; print(torch.__version__)"});
  INFO(imported.err);
  CHECK(imported.exit_code == 0);
  CHECK(imported.out == "9.9.0\n");

  // One cuDNN: the framework's wheel and the prefix's lib/ are one file.
  const auto site = fixture.site();
  const auto in_site = site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9";
  const auto in_lib = fixture.prefix() / "lib" / "libcudnn.so.9";
  REQUIRE(fs::is_regular_file(in_site));
  REQUIRE(fs::exists(in_lib));
  CHECK(inode_of(in_site) == inode_of(in_lib));
  CHECK(fs::exists(fixture.prefix() / "include" / "cudnn.h"));
  std::set<ino_t> cudnn_files;
  for (const auto& entry : fs::recursive_directory_iterator(fixture.prefix())) {
    if (entry.is_regular_file() && entry.path().filename().string().starts_with("libcudnn"))
      cudnn_files.insert(inode_of(entry.path()));
  }
  CHECK(cudnn_files.size() == 1);

  // pip sees every wheel as installed, the NVIDIA one included.
  const auto listed = fixture.project.envkit({"run", "--", "python", "-m", "pip", "list"});
  CHECK_THAT(listed.out, Contains("nvidia-cudnn-cu12"));
  CHECK_THAT(listed.out, Contains("torch"));
  // The venv's own pip is ensurepip's wheel, installed by envkit from the cache (`venv`
  // with pip runs pip for seconds): pip knows it, and its files are the cache's.
  std::optional<fs::path> pip_dist_info;
  for (const auto& entry : fs::directory_iterator(site)) {
    if (entry.path().filename().string().starts_with("pip-") &&
        entry.path().extension() == ".dist-info")
      pip_dist_info = entry.path();
  }
  REQUIRE(pip_dist_info);
  CHECK(read_text(*pip_dist_info / "INSTALLER") == "envkit\n");
  CHECK(fs::hard_link_count(site / "pip" / "__init__.py") >= 2);
  const auto pip_version = fixture.project.envkit({"run", "--", "pip", "--version"});
  CHECK(pip_version.exit_code == 0);
  CHECK_THAT(pip_version.out, Catch::Matchers::StartsWith("pip ") && Contains("site-packages/pip"));
  // A console script runs, whatever the generation's folder is called.
  const auto hello = fixture.project.envkit({"run", "--", "fakedep-hello"});
  CHECK(hello.out == "hello from fakedep\n");

  // The stale bytecode the wheel ships is linked as it is (no --compile-bytecode): doctor
  // finds every file intact.
  const auto doctor = fixture.project.envkit({"doctor"});
  CHECK_THAT(doctor.out + doctor.err, !Contains(".pyc") && !Contains("differs from what envkit"));

  const auto receipts = fixture.prefix() / ".envkit" / "receipts";
  for (const auto* name : {"torch", "fakedep", "nvidia-cudnn-cu12", "cudnn", "python"})
    CHECK(fs::exists(receipts / (std::string(name) + ".json")));
  CHECK_THAT(read_text(receipts / "cudnn.json"), Contains("lib/libcudnn.so.9"));

  SECTION("installing again changes nothing") {
    const auto again = fixture.envkit({"install"});
    CHECK(again.exit_code == 0);
    CHECK_THAT(again.err + again.out, Contains("nothing to do"));
  }

  SECTION("a new wheel whose download differs from the lock fails and leaves the prefix") {
    const auto generation = fs::read_symlink(fixture.prefix());
    fixture.index.add({.name = "extra", .version = "1.0"});
    fixture.project.write(fixture.project.root / "requirements.txt", "fakedep\nextra\n");
    REQUIRE(fixture.envkit({"lock"}).exit_code == 0);
    // The server's copy changes after the lock was written.
    const auto wheel =
        fixture.served / "files" / PythonIndex::filename_of({.name = "extra", .version = "1.0"});
    std::ofstream(wheel, std::ios::app) << "tampered";
    const auto failed = fixture.envkit({"install", "--locked"});
    CHECK(failed.exit_code == 1);
    CHECK_THAT(failed.err, Contains("extra"));
    CHECK_THAT(failed.err, Contains("checksum mismatch"));
    CHECK(fs::read_symlink(fixture.prefix()) == generation);
    CHECK_FALSE(fs::exists(site / "extra"));
    CHECK(fixture.project.envkit({"run", "--", "python", "-c", "import torch"}).exit_code == 0);
  }

  SECTION("a wheel the index no longer has fails with its URL and leaves the prefix") {
    const auto generation = fs::read_symlink(fixture.prefix());
    fixture.index.add({.name = "extra", .version = "1.0"});
    fixture.project.write(fixture.project.root / "requirements.txt", "fakedep\nextra\n");
    REQUIRE(fixture.envkit({"lock"}).exit_code == 0);
    fs::remove(fixture.served / "files" /
               PythonIndex::filename_of({.name = "extra", .version = "1.0"}));
    const auto failed = fixture.envkit({"install", "--locked"});
    CHECK(failed.exit_code == 1);
    CHECK_THAT(failed.err, Contains("extra-1.0"));
    CHECK(fs::read_symlink(fixture.prefix()) == generation);
  }
}

}  // namespace
}  // namespace envkit::test
