// Closure packages that exist only as source distributions (html5lib
// 0.9999999, termcolor 1.1.0 under tensorflow-gpu 1.6.0), end to end and
// hermetic: a lock written by the test names a small wheel (`tinybuild`) and a
// real sdist (`tiny`, a pyproject.toml with an in-tree build backend that
// imports tinybuild, so the build works only once the closure's wheels are
// installed) served by nginx on 127.0.0.1. `envkit install --frozen` makes the
// prefix a venv of the machine's python3, installs the wheel, builds the sdist
// into a wheel with the prefix's own Python, caches that wheel and installs it;
// a broken sdist (a setup.py that raises) fails with pip's last lines and the
// log's path, and the prefix keeps its previous generation.
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>

#include "envkit/core/sha256.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/sys/process.hpp"
#include "isolated_project.hpp"
#include "support/closure_lock.hpp"
#include "support/http_server.hpp"
#include "support/python_index.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

// A closure wheel the sdist's build backend imports.
const FakeWheel kTinybuild{
    .name = "tinybuild",
    .version = "1.0",
    .requires_dist = {},
    .files = {{"tinybuild/__init__.py", "GREETING = 'built from source'\n"}}};

// An in-tree PEP 517 backend (no setuptools needed): writes tiny-1.0's wheel,
// whose module returns what tinybuild, from the closure, says. Appends a line
// to $TINY_BUILD_COUNT when it is set, so the test sees each build.
constexpr std::string_view kBackend = R"py(import base64, hashlib, os, zipfile
import tinybuild

DIST = "tiny-1.0.dist-info"

def _hash(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    counter = os.environ.get("TINY_BUILD_COUNT")
    if counter:
        with open(counter, "a") as f:
            f.write("built\n")
    files = {
        "tiny.py": "def hello():\n    return %r\n" % tinybuild.GREETING,
        DIST + "/METADATA": "Metadata-Version: 2.1\nName: tiny\nVersion: 1.0\n",
        DIST + "/WHEEL": "Wheel-Version: 1.0\nGenerator: tiny\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    name = "tiny-1.0-py3-none-any.whl"
    record = "".join("%s,%s,%d\n" % (p, _hash(t.encode()), len(t.encode())) for p, t in files.items())
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
        z.writestr(DIST + "/RECORD", record + DIST + "/RECORD,,\n")
    return name
)py";

struct SdistProject {
  IsolatedProject project;
  fs::path served = project.dir.path() / "index";
  fs::path sources = project.dir.path() / "sources";
  fs::path build_count = project.dir.path() / "builds.txt";
  PythonIndex index{served};
  std::optional<StaticHttpServer> server;

  bool skip() {
    if (nginx_missing() || host_python_missing()) return true;
    index.add(kTinybuild);
    server.emplace(served);
    return false;
  }

  // Writes `files` under sources/NAME-VERSION/ and packs them as
  // files/NAME-VERSION.tar.gz on the server; returns the sdist's path.
  fs::path add_sdist(const std::string& name, const std::string& version,
                     const std::vector<std::pair<std::string, std::string>>& files) const {
    const auto top = name + "-" + version;
    for (const auto& [path, content] : files)
      project.write(sources / top / path, content);
    project.write(sources / top / "PKG-INFO",
                  "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n");
    const auto sdist = served / "files" / (top + ".tar.gz");
    auto packed = sys::run_process({"tar", "-czf", sdist.string(), "-C", sources.string(), top});
    REQUIRE(packed);
    REQUIRE(packed->exit_code == 0);
    return sdist;
  }

  fs::path add_tiny() const {
    return add_sdist("tiny", "1.0",
                     {{"pyproject.toml",
                       "[build-system]\nrequires = []\nbuild-backend = \"backend\"\n"
                       "backend-path = [\".\"]\n"},
                      {"backend.py", std::string(kBackend)}});
  }

  [[nodiscard]] lock::PythonWheel locked(const std::string& name, const std::string& version,
                                         const fs::path& file, lock::Distribution kind) const {
    return locked_distribution(name, version, file,
                               server->url("/files/" + file.filename().string()), kind);
  }

  // envkit.lock: the machine's python3 as a venv, and `packages` as its closure.
  void write_lock(std::vector<lock::PythonWheel> packages) const {
    project.write(project.root / "envkit.lock", venv_closure_lock(std::move(packages)));
  }

  void write_tiny_lock() const {
    write_lock(
        {locked("tinybuild", "1.0", served / "files" / PythonIndex::filename_of(kTinybuild),
                lock::Distribution::wheel),
         locked("tiny", "1.0", served / "files" / "tiny-1.0.tar.gz", lock::Distribution::sdist)});
  }

  [[nodiscard]] sys::ProcessOutput install() const {
    return project.envkit({"install", "--frozen"}, {{"TINY_BUILD_COUNT", build_count.string()}});
  }
  [[nodiscard]] fs::path cache_store() const {
    return project.dir.path() / "xdg-cache" / "envkit" / "store" / "v1";
  }
  [[nodiscard]] std::size_t builds() const {
    const auto text = read_text(build_count);
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  }
  [[nodiscard]] sys::ProcessOutput hello() const {
    return project.envkit({"run", "--", "python", "-c", "import tiny; print(tiny.hello())"});
  }
};

// The files of `folder` whose names contain `part`.
std::vector<fs::path> files_with(const fs::path& folder, const std::string& part) {
  std::vector<fs::path> found;
  std::error_code ignored;
  for (fs::directory_iterator it(folder, ignored), end; it != end; it.increment(ignored)) {
    if (it->path().filename().string().find(part) != std::string::npos) found.push_back(it->path());
  }
  return found;
}

TEST_CASE("envkit install builds a closure's sdist into a wheel with the prefix's Python",
          "[python][sdist][integration][slow]") {
  SdistProject fixture;
  if (fixture.skip()) return;
  fixture.add_tiny();
  fixture.write_tiny_lock();
  const auto installed = fixture.install();
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);

  // Built by the prefix's Python, with the closure's tinybuild importable.
  const auto hello = fixture.hello();
  INFO(hello.err);
  CHECK(hello.out == "built from source\n");
  CHECK(fixture.builds() == 1);
  const auto receipt = read_text(fixture.project.prefix() / ".envkit" / "receipts" / "tiny.json");
  CHECK_THAT(receipt, Contains("site-packages/tiny.py"));
  CHECK_THAT(receipt,
             Contains(PythonIndex::sha256_of(fixture.served / "files" / "tiny-1.0.tar.gz")));
  // The wheel is a cache entry and its build log is kept.
  const auto logs = files_with(fixture.cache_store() / "logs", "-wheel-");
  REQUIRE(logs.size() == 1);
  CHECK_THAT(read_text(logs[0]), Contains("pip wheel"));
  CHECK(files_with(fixture.cache_store() / "entries", "-wheel-").size() == 2);  // folder, record

  SECTION("installing again changes nothing") {
    const auto again = fixture.install();
    CHECK(again.exit_code == 0);
    CHECK_THAT(again.err + again.out, Contains("nothing to do"));
    CHECK(fixture.builds() == 1);
  }

  SECTION("a new prefix takes the built wheel from the cache") {
    fs::remove_all(fixture.project.root / ".envkit");
    const auto again = fixture.install();
    INFO(again.err);
    REQUIRE(again.exit_code == 0);
    CHECK(fixture.hello().out == "built from source\n");
    CHECK(fixture.builds() == 1);
  }

  SECTION("a failing build fails the install with pip's last lines and leaves the prefix") {
    const auto generation = fs::read_symlink(fixture.project.prefix());
    const auto broken = fixture.add_sdist(
        "broken", "1.0", {{"setup.py", "raise RuntimeError('broken 1.0 refuses to build')\n"}});
    fixture.write_lock(
        {fixture.locked("tinybuild", "1.0",
                        fixture.served / "files" / PythonIndex::filename_of(kTinybuild),
                        lock::Distribution::wheel),
         fixture.locked("tiny", "1.0", fixture.served / "files" / "tiny-1.0.tar.gz",
                        lock::Distribution::sdist),
         fixture.locked("broken", "1.0", broken, lock::Distribution::sdist)});
    const auto failed = fixture.install();
    CHECK(failed.exit_code == 1);
    CHECK_THAT(failed.err, Contains("cannot build broken 1.0 from source: `pip wheel` failed"));
    CHECK_THAT(failed.err, Contains("the last lines of its output"));
    // setup.py's own words where the venv has setuptools (Python <= 3.11), else what it lacks.
    const bool says_why = failed.err.find("broken 1.0 refuses to build") != std::string::npos ||
                          failed.err.find("needs `setuptools`") != std::string::npos;
    CHECK(says_why);
    const auto both = files_with(fixture.cache_store() / "logs", "-wheel-");
    REQUIRE(both.size() == 2);
    const auto log = read_text(both[0]).find("broken") != std::string::npos ? both[0] : both[1];
    CHECK_THAT(failed.err, Contains("the whole log: " + log.string()));
    CHECK(fs::read_symlink(fixture.project.prefix()) == generation);
    CHECK(fixture.hello().out == "built from source\n");
  }
}

}  // namespace
}  // namespace envkit::test
