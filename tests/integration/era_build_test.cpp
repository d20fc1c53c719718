// Source builds in the project's era, end to end and hermetic: the real envkit and uv
// lock against an index on disk served by nginx, whose pages give upload times
// (PEP 691 JSON, PEP 700). Its `setuptools` is a stand-in in two versions: 1.0
// (2019) still has the module `oldapi`, 2.0 (2026) no longer does, as setuptools 82
// dropped `pkg_resources`. `legacy` 1.0 (2019) is an sdist whose build backend imports
// `oldapi`; `usestorch` 1.0 one whose backend imports the framework, as mmcv's setup.py
// imports torch. Nothing here reaches the internet (a proxy on a closed port).
#include <catch2/catch.hpp>
#include <fstream>

#include "envkit/core/text.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/sys/fs.hpp"
#include "envkit/sys/process.hpp"
#include "isolated_project.hpp"
#include "support/http_server.hpp"
#include "support/python_index.hpp"
#include "support/skip.hpp"

// Named, not anonymous: the integration tests share unity batches.
namespace envkit::test::era_build {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

// An in-tree PEP 517 backend that imports `module` when it is loaded (a setup.py's
// `import pkg_resources`, `import torch`), then writes NAME-1.0's wheel.
std::string backend_importing(const std::string& module, const std::string& name) {
  return "import base64, hashlib, os, zipfile\nimport " + module + "\n\nDIST = '" + name +
         "-1.0.dist-info'\n\n"
         "def _hash(data):\n"
         "    digest = hashlib.sha256(data).digest()\n"
         "    return 'sha256=' + base64.urlsafe_b64encode(digest).rstrip(b'=').decode()\n\n"
         "def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):\n"
         "    files = {\n"
         "        '" +
         name +
         ".py': 'BUILT = True\\n',\n"
         "        DIST + '/METADATA': 'Metadata-Version: 2.1\\nName: " +
         name +
         "\\nVersion: 1.0\\n',\n"
         "        DIST + '/WHEEL': 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: "
         "true\\nTag: py3-none-any\\n',\n"
         "    }\n"
         "    wheel = '" +
         name +
         "-1.0-py3-none-any.whl'\n"
         "    record = ''.join('%s,%s,%d\\n' % (p, _hash(t.encode()), len(t.encode())) for p, t "
         "in files.items())\n"
         "    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), 'w') as z:\n"
         "        for path, text in files.items():\n"
         "            z.writestr(path, text)\n"
         "        z.writestr(DIST + '/RECORD', record + DIST + '/RECORD,,\\n')\n"
         "    return wheel\n";
}

// The machine's python3: its real executable and its version.
struct HostPython {
  fs::path executable;
  std::string version;  // 3.11.7
};

std::optional<HostPython> host_python() {
  auto run = sys::run_process(
      {"python3", "-c",
       "import sys; print(sys.executable); print('%d.%d.%d' % sys.version_info[:3])"});
  if (!run || run->exit_code != 0) return std::nullopt;
  const auto lines = text::split(text::trim(run->out), '\n');
  if (lines.size() != 2) return std::nullopt;
  return HostPython{.executable = fs::path(std::string(lines[0])),
                    .version = std::string(lines[1])};
}

// envkit.yaml's lines for a lock of `python`, which the machine provides.
std::string python_of(const HostPython& python) {
  return "requires: {python: \"==" + python.version + "\"}\nexternal: {python: \"" +
         python.version + "\"}\n";
}

struct EraProject {
  IsolatedProject project;
  fs::path served = project.dir.path() / "index";
  fs::path sources = project.dir.path() / "sources";
  PythonIndex index{served};
  std::optional<StaticHttpServer> server;
  std::optional<HostPython> python = host_python();

  // Records the skip and returns true without uv, nginx or a python3.
  bool skip() {
    if (uv_missing() || nginx_missing() || host_python_missing() || !python) return true;
    index.add({.name = "setuptools",
               .version = "1.0",
               .requires_dist = {},
               .files = {{"oldapi.py", "VALUE = 'the old API'\n"}},
               .upload_time = "2019-04-01T12:00:00Z"});
    index.add({.name = "setuptools",
               .version = "2.0",
               .requires_dist = {},
               .files = {{"newapi.py", "VALUE = 'the new API'\n"}},
               .upload_time = "2026-01-01T12:00:00Z"});
    server.emplace(served);
    return false;
  }

  // NAME-1.0.tar.gz, a PKG-INFO that does not state the metadata statically (uv must
  // run the build) and a build backend that imports `module`, served as uploaded on `day`.
  void add_sdist(const std::string& name, const std::string& module,
                 const std::vector<std::string>& build_requires, const std::string& day) {
    const auto top = sources / (name + "-1.0");
    std::string requires_;
    for (const auto& requirement : build_requires)
      requires_ += (requires_.empty() ? "\"" : ", \"") + requirement + "\"";
    project.write(top / "pyproject.toml",
                  "[build-system]\nrequires = [" + requires_ +
                      "]\nbuild-backend = \"backend\"\nbackend-path = [\".\"]\n");
    project.write(top / "backend.py", backend_importing(module, name));
    project.write(top / "PKG-INFO", "Metadata-Version: 2.1\nName: " + name + "\nVersion: 1.0\n");
    const auto sdist = sources / (name + "-1.0.tar.gz");
    auto packed =
        sys::run_process({"tar", "-czf", sdist.string(), "-C", sources.string(), name + "-1.0"});
    REQUIRE(packed);
    REQUIRE(packed->exit_code == 0);
    index.add_file(sdist, day + "T09:00:00Z");
  }

  void write(const std::string& file, const std::string& text) const {
    project.write(project.root / file, text);
  }
  [[nodiscard]] std::string index_url() const { return server->url("/simple"); }

  // `envkit lock` with the closure on, the interpreters searched only where `search` says.
  [[nodiscard]] sys::ProcessOutput lock(std::optional<std::string> search = {},
                                        std::optional<std::string> path = {}) const {
    if (!search) search = python->executable.parent_path().string();
    std::map<std::string, std::optional<std::string>> env = {{"ENVKIT_NO_PYTHON", std::nullopt},
                                                             {"ENVKIT_PYTHON_SEARCH_PATH", search},
                                                             {"https_proxy", "http://127.0.0.1:9"},
                                                             {"http_proxy", "http://127.0.0.1:9"},
                                                             {"no_proxy", "127.0.0.1"}};
    if (path) env["PATH"] = *path;
    return project.envkit({"--recipes", (source_dir() / "recipes").string(), "lock"}, env);
  }
  [[nodiscard]] lock::Lockfile lockfile() const {
    auto loaded = lock::load(project.root / "envkit.lock");
    INFO((loaded ? "" : loaded.error().to_string()));
    REQUIRE(loaded);
    return *std::move(loaded);
  }
};

TEST_CASE("an sdist whose build needs an old build tool locks with the project's era",
          "[python][sdist][era][integration]") {
  EraProject fixture;
  if (fixture.skip()) return;
  // Uploaded in 2019, when setuptools 1.0 was the newest: the project pins it.
  fixture.add_sdist("legacy", "oldapi", {"setuptools"}, "2019-05-01");
  fixture.write("requirements.txt", "legacy==1.0\n");
  const std::string manifest = python_of(*fixture.python) +
                               "python-requirements: requirements.txt\nindexes: [" +
                               fixture.index_url() + "]\n";
  fixture.write("envkit.yaml", manifest);

  const auto locked = fixture.lock();
  INFO(locked.err);
  REQUIRE(locked.exit_code == 0);
  // Today's setuptools (2.0) failed the build; the era's (1.0) built it.
  CHECK_THAT(locked.err, Contains("build tools as of 2019-05-01"));
  const auto lockfile = fixture.lockfile();
  REQUIRE(lockfile.platforms.size() == 1);
  const auto& closure = lockfile.platforms[0].python;
  REQUIRE(closure);
  CHECK(closure->build_as_of == "2019-05-01");
  REQUIRE(closure->packages.size() == 1);
  CHECK(closure->packages[0].name == "legacy");
  CHECK(closure->packages[0].kind == lock::Distribution::sdist);
  const auto text = sys::read_file(fixture.project.root / "envkit.lock").value();
  CHECK_THAT(text, Contains("build-as-of: \"2019-05-01\""));

  SECTION("another as-of in envkit.yaml makes the lock stale, and it locks as of that day") {
    fixture.write("envkit.yaml", manifest + "resolution: {as-of: 2019-06-30}\n");
    const auto check = fixture.project.envkit(
        {"--recipes", (source_dir() / "recipes").string(), "lock", "--check"},
        {{"ENVKIT_NO_PYTHON", std::nullopt}});
    CHECK(check.exit_code == 1);
    CHECK_THAT(check.err, Contains("the Python requirements of linux-x86_64 changed"));
    const auto again = fixture.lock();
    INFO(again.err);
    REQUIRE(again.exit_code == 0);
    CHECK(fixture.lockfile().platforms[0].python->build_as_of == "2019-06-30");
  }

  SECTION("a lock that fails leaves envkit.lock as it was") {
    const auto before = sys::read_file(fixture.project.root / "envkit.lock").value();
    // No day of the era has a setuptools: nothing can build legacy 1.0.
    fixture.write("requirements.txt", "legacy==1.0\nbrokenbuild==1.0\n");
    fixture.add_sdist("brokenbuild", "no_such_module_anywhere", {"setuptools"}, "2019-05-02");
    const auto failed = fixture.lock();
    CHECK(failed.exit_code == 1);
    CHECK_THAT(failed.err, Contains("Failed to build `brokenbuild==1.0`"));
    CHECK_THAT(failed.err, Contains("the build tools were taken as of 2019-05-02"));
    CHECK(sys::read_file(fixture.project.root / "envkit.lock").value() == before);
  }
}

TEST_CASE("an sdist's build with no interpreter of the lock's minor is an error naming it",
          "[python][sdist][era][integration]") {
  EraProject fixture;
  if (fixture.skip()) return;
  fixture.add_sdist("legacy", "oldapi", {"setuptools"}, "2019-05-01");
  fixture.write("requirements.txt", "legacy==1.0\n");
  // Python 3.6, which none of the places searched has.
  fixture.write("envkit.yaml", python_of({.executable = {}, .version = "3.6.9"}) +
                                   "python-requirements: requirements.txt\nindexes: [" +
                                   fixture.index_url() + "]\n");
  // The one place searched has a `python3.6` that is another Python: refused, and said so.
  const TempDir search;
  const auto liar = search.write("python3.6", "#!/bin/sh\necho 3.9.0\n");
  fs::permissions(liar, fs::perms::owner_all, fs::perm_options::replace);
  const auto failed = fixture.lock(search.path().string(), "/usr/bin:/bin");
  CHECK(failed.exit_code == 1);
  CHECK_THAT(failed.err,
             Contains("error: no CPython 3.6 on this machine to build legacy 1.0 from its source "
                      "distribution"));
  CHECK_THAT(failed.err, Contains("hint: install CPython 3.6 (`pyenv install 3.6`"));
  CHECK_THAT(failed.err, Contains("caused by: " + liar.string() +
                                  " is named for Python 3.6 but is Python 3.9.0"));
  CHECK_FALSE(fs::exists(fixture.project.root / "envkit.lock"));
}

TEST_CASE("an sdist whose build imports the framework locks with the framework in its build",
          "[python][sdist][era][integration]") {
  EraProject fixture;
  if (fixture.skip()) return;
  if (fixture.python->version >= "3.12") {
    skip_test(SkipKind::expected, "torch 2.1.2 allows Python 3.8 to 3.11, and python3 here is " +
                                      fixture.python->version);
    return;
  }
  // The framework as a small wheel: what the build imports.
  fixture.index.add({.name = "torch",
                     .version = "2.1.2",
                     .requires_dist = {},
                     .files = {{"torch/__init__.py", "__version__ = '2.1.2'\n"}},
                     .upload_time = "2023-12-14T18:00:00Z"});
  fixture.add_sdist("usestorch", "torch", {}, "2024-04-24");
  fixture.write("requirements.txt", "usestorch==1.0\n");
  const std::string manifest = "framework: torch ==2.1.2\nexternal: {python: \"" +
                               fixture.python->version +
                               "\"}\npython-requirements: requirements.txt\nindexes: [" +
                               fixture.index_url() + "]\nsystem: {driver: 535.104.05}\n";

  SECTION("automatically, when its build fails for want of the framework") {
    fixture.write("envkit.yaml", manifest);
    const auto locked = fixture.lock();
    INFO(locked.err);
    REQUIRE(locked.exit_code == 0);
    CHECK_THAT(locked.err, Contains("usestorch built with the framework in the build environment"));
    const auto closure = fixture.lockfile().platforms[0].python;
    REQUIRE(closure);
    CHECK(closure->built_with_framework == std::vector<std::string>{"usestorch"});
  }
  SECTION("declared in envkit.yaml, from the first run") {
    fixture.write("envkit.yaml", manifest + "resolution: {build-with-framework: [UsesTorch]}\n");
    const auto locked = fixture.lock();
    INFO(locked.err);
    REQUIRE(locked.exit_code == 0);
    CHECK(fixture.lockfile().platforms[0].python->built_with_framework ==
          std::vector<std::string>{"usestorch"});
  }
}

}  // namespace envkit::test::era_build
