// The Python is chosen with the closure, and index options of requirement files this machine
// cannot reach are left out (docs/python.md, "Which Python", "Indexes in requirement files"):
// the real envkit binary and uv against a package index on disk (support/python_index.hpp:
// tiny real wheels, tagged for some CPythons only) served by nginx on 127.0.0.1, with no
// framework, so that the project's own requirement lines decide; the real internet is out of
// reach (a proxy on a closed port).
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "closure_project.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/sys/fs.hpp"
#include "isolated_project.hpp"
#include "support/http_server.hpp"
#include "support/python_index.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

// A project locked with envkit's uv against `index`, the manifest's driver (so the machine's
// own facts decide nothing), today's index off.
struct ChoiceProject {
  IsolatedProject project;
  fs::path served = project.dir.path() / "index";
  PythonIndex index{served};
  std::optional<StaticHttpServer> server;
  std::optional<fs::path> uv = test_uv();

  // Records the skip and returns true without uv or nginx.
  bool skip() {
    if (uv_missing() || nginx_missing()) return true;
    server.emplace(served);
    return false;
  }
  // A wheel of `name` `version` for each CPython tag of `pythons` ("cp310"), or pure Python.
  void add(const std::string& name, const std::string& version,
           const std::vector<std::string>& pythons, std::vector<std::string> requires_dist = {}) {
    for (const auto& python : pythons) {
      index.add({.name = name,
                 .version = version,
                 .requires_dist = requires_dist,
                 .files = {},
                 .tag = python + "-" + python + "-manylinux_2_17_x86_64",
                 .requires_python = {},
                 .provides_extra = {},
                 .sdist = false});
    }
    if (pythons.empty()) {
      index.add({.name = name, .version = version, .requires_dist = std::move(requires_dist)});
    }
  }
  // `envkit ARGS` with envkit.yaml naming the index and requirements.txt holding `requirements`.
  [[nodiscard]] sys::ProcessOutput envkit(std::vector<std::string> args,
                                          bool ask_hosts = false) const {
    args.insert(args.begin(), {"--recipes", (source_dir() / "recipes").string()});
    auto env = closure_on(std::nullopt, *uv);
    env["ENVKIT_NO_LIVE_INDEX"] = "1";
    // The hosts of requirement files are asked only where a test is about them.
    env["ENVKIT_ASSUME_REACHABLE"] = ask_hosts ? std::nullopt : std::optional<std::string>("1");
    return project.envkit(std::move(args), env);
  }
  void write_project(const std::string& requirements) const {
    project.write(project.root / "envkit.yaml", "indexes: [" + server->url("/simple/") +
                                                    "]\npython-requirements: requirements.txt\n"
                                                    "system: {driver: \"580.65.06\"}\n");
    project.write(project.root / "requirements.txt", requirements);
  }
  [[nodiscard]] std::string lock_text() const {
    auto text = sys::read_file(project.root / "envkit.lock");
    return text ? *text : std::string();
  }
  [[nodiscard]] std::string locked_python() const {
    auto lockfile = lock::load(project.root / "envkit.lock");
    REQUIRE(lockfile);
    for (const auto& package : lockfile->platforms.front().packages) {
      if (package.name == "python") return package.version.original();
    }
    return "";
  }
};

}  // namespace

TEST_CASE("envkit lock takes the newest Python the closure resolves for, and why python says why",
          "[lock][python][closure][python-choice]") {
  ChoiceProject fixture;
  if (fixture.skip()) return;
  // Wheels up to CPython 3.12, as torchdata 0.9.0 has; no sdist.
  fixture.add("oldwheels", "1.0", {"cp310", "cp311", "cp312"});
  fixture.add("helper", "2.0", {});
  fixture.write_project("helper\n# wheels end at cp312\noldwheels==1.0\n");
  const auto locked = fixture.envkit({"lock"});
  INFO(locked.err);
  REQUIRE(locked.exit_code == 0);
  CHECK_THAT(fixture.locked_python(), StartsWith("3.12."));
  CHECK_THAT(locked.err, Contains("note: python 3.14, 3.13 ruled out on linux-x86_64: "
                                  "requirements.txt:3 `oldwheels==1.0` has no wheel for CPython "
                                  "3.14 / 3.13; the lock takes python 3.12."));
  CHECK_THAT(locked.err, Contains("locked linux-x86_64: python 3.12."));

  const auto why = fixture.envkit({"why", "python"});
  INFO(why.err);
  CHECK(why.exit_code == 0);
  CHECK_THAT(why.err, StartsWith("python 3.12."));
  CHECK_THAT(why.err, Contains("  python 3.14, 3.13 ruled out: requirements.txt:3 "
                               "`oldwheels==1.0` has no wheel for CPython 3.14 / 3.13\n"));
  CHECK_THAT(why.err, Contains("`oldwheels==1.0` in requirements.txt:3 requires python <3.13"));

  // Locking again gives the same bytes, and the lock is current.
  const auto before = fixture.lock_text();
  CHECK(fixture.envkit({"lock"}).exit_code == 0);
  CHECK(fixture.lock_text() == before);
  CHECK(fixture.envkit({"lock", "--check"}).exit_code == 0);
}

TEST_CASE("a pin conflict only newer Pythons' markers cause rules them out (jax and numpy)",
          "[lock][python][closure][python-choice]") {
  ChoiceProject fixture;
  if (fixture.skip()) return;
  // jax 0.4.26 requires numpy>=1.26.0 on Python 3.12 and newer.
  fixture.add("jaxish", "0.4.26", {},
              {"numpyish>=1.26.0; python_version >= \"3.12\"", "numpyish>=1.22"});
  fixture.add("numpyish", "1.24.3", {});
  fixture.add("numpyish", "1.26.0", {});
  fixture.write_project("jaxish==0.4.26\nnumpyish==1.24.3\n");
  const auto locked = fixture.envkit({"lock"});
  INFO(locked.err);
  REQUIRE(locked.exit_code == 0);
  CHECK_THAT(fixture.locked_python(), StartsWith("3.11."));
  CHECK_THAT(locked.err,
             Contains("note: python 3.14, 3.13, 3.12 ruled out on linux-x86_64: "
                      "requirements.txt:1 `jaxish==0.4.26` and requirements.txt:2 "
                      "`numpyish==1.24.3` do not resolve together for CPython 3.14 / 3.13 / 3.12 "
                      "(uv: Because ") &&
                 Contains("depend on numpyish>=1.26.0") &&
                 Contains("you require numpyish==1.24.3"));
}

TEST_CASE("a requirement no Python has a wheel for fails naming it and the Pythons tried",
          "[lock][python][closure][python-choice]") {
  ChoiceProject fixture;
  if (fixture.skip()) return;
  fixture.add("py2only", "1.0", {"cp27"});
  fixture.add("helper", "2.0", {});
  fixture.write_project("helper==2.0\n");
  REQUIRE(fixture.envkit({"lock"}).exit_code == 0);
  const auto before = fixture.lock_text();
  fixture.write_project("helper==2.0\npy2only==1.0\n");
  const auto failed = fixture.envkit({"lock"});
  INFO(failed.err);
  CHECK(failed.exit_code == 1);
  CHECK_THAT(failed.err,
             Contains("error: the Python requirements resolve for none of the Pythons envkit "
                      "tried on linux-x86_64: CPython 3.14.") &&
                 Contains(", 3.9."));
  CHECK_THAT(failed.err, Contains("uv finds no solution for requirements.txt:2 `py2only==1.0`"));
  CHECK_THAT(failed.err, Contains("envkit tries at most 6 Pythons"));
  // A failed lock leaves envkit.lock byte-identical.
  CHECK(fixture.lock_text() == before);
}

TEST_CASE("an unreachable --find-links is a warning naming it when the closure resolves without it",
          "[lock][python][closure][requirement-indexes]") {
  ChoiceProject fixture;
  if (fixture.skip()) return;
  fixture.add("helper", "2.0", {});
  const int closed = free_port();  // nothing listens there
  const auto links = "http://127.0.0.1:" + std::to_string(closed) + "/libtpu_releases.html";
  fixture.write_project("--find-links " + links + "\nhelper==2.0\n");
  const auto locked = fixture.envkit({"lock"}, /*ask_hosts=*/true);
  INFO(locked.err);
  REQUIRE(locked.exit_code == 0);
  CHECK_THAT(locked.err, Contains("warning: requirements.txt:1 `--find-links " + links +
                                  "` is not reachable from this machine (") &&
                             Contains("left out; the Python requirements resolve without it"));
  CHECK_THAT(fixture.lock_text(), Contains("helper-2.0-py3-none-any.whl"));
  // The project's file is as it was; the lock does not depend on the network.
  CHECK(sys::read_file(fixture.project.root / "requirements.txt").value() ==
        "--find-links " + links + "\nhelper==2.0\n");
  CHECK(fixture.envkit({"lock", "--check"}, /*ask_hosts=*/true).exit_code == 0);
  CHECK(fixture.envkit({"lock", "--check"}, /*ask_hosts=*/false).exit_code == 0);
}

TEST_CASE("an unreachable index a requirement needs is an error naming the URL and the requirement",
          "[lock][python][closure][requirement-indexes]") {
  ChoiceProject fixture;
  if (fixture.skip()) return;
  fixture.add("helper", "2.0", {});
  fixture.write_project("helper==2.0\n");
  REQUIRE(fixture.envkit({"lock"}).exit_code == 0);
  const auto before = fixture.lock_text();
  fixture.write_project(
      "helper==2.0\n--extra-index-url https://tpu-wheels.invalid/simple\nonlythere==1.0\n");
  const auto failed = fixture.envkit({"lock"}, /*ask_hosts=*/true);
  INFO(failed.err);
  CHECK(failed.exit_code == 1);
  CHECK_THAT(failed.err, Contains("error: the Python requirements do not resolve without "
                                  "https://tpu-wheels.invalid/simple, which this machine cannot "
                                  "reach"));
  CHECK_THAT(failed.err, Contains("requirements.txt:2 `--extra-index-url "
                                  "https://tpu-wheels.invalid/simple`: "));
  CHECK_THAT(failed.err,
             Contains("without it, uv finds no solution for requirements.txt:3 `onlythere==1.0`"));
  CHECK_THAT(failed.err, Contains("hint: requirements.txt:3 `onlythere==1.0` needs "
                                  "tpu-wheels.invalid"));
  CHECK(fixture.lock_text() == before);
}

}  // namespace envkit::test
