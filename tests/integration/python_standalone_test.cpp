// `envkit install` of a python-build-standalone Python, end to end and
// hermetic: the archives are made from this machine's Debian interpreter
// (/usr/bin/python3.11 with its stdlib, which finds lib/python3.11 beside its
// bin/ and so runs from wherever it is unpacked), packed as upstream packs
// them (`python/bin/python3`, `python/lib/python3.11/...`), served by nginx on
// 127.0.0.1 and named by a hand-written lock. What is checked is what a user
// sees: the interpreter runs from the prefix with the modules envkit checks,
// a missing module is a warning, and one that does not start fails the install
// and leaves the previous generation as it was.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "envkit/core/sha256.hpp"
#include "envkit/sys/process.hpp"
#include "install_support.hpp"
#include "isolated_project.hpp"
#include "support/http_server.hpp"
#include "support/temp_dir.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using nlohmann::json;

const fs::path kInterpreter = "/usr/bin/python3.11";
const fs::path kStdlib = "/usr/lib/python3.11";

// Parts of the stdlib no check imports: left out to keep the archives small.
bool left_out(const fs::path& relative) {
  const auto first = relative.begin()->string();
  for (const auto* skipped : {"test", "idlelib", "tkinter", "turtledemo", "lib2to3",
                              "config-3.11-x86_64-linux-gnu", "site-packages", "dist-packages"}) {
    if (first == skipped) return true;
  }
  for (const auto& part : relative) {
    if (part == "__pycache__") return true;
  }
  return false;
}

void run_or_throw(const std::vector<std::string>& argv) {
  auto result = sys::run_process(argv, {.timeout = std::chrono::minutes(2)});
  if (!result) throw std::runtime_error(result.error().to_string());
  if (result->exit_code != 0)
    throw std::runtime_error(argv.front() + " failed: " + result->err + result->out);
}

// `dir`/python/lib/python3.11: the stdlib's files, and its links that stay
// inside it (Debian's sitecustomize.py points into /etc: left out).
void copy_stdlib(const fs::path& to) {
  fs::create_directories(to);
  for (auto it = fs::recursive_directory_iterator(kStdlib);
       it != fs::recursive_directory_iterator(); ++it) {
    const auto relative = it->path().lexically_relative(kStdlib);
    if (left_out(relative)) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    const auto target = to / relative;
    const auto status = it->symlink_status();
    if (fs::is_symlink(status)) {
      const auto link = fs::read_symlink(it->path());
      if (link.is_absolute() || link.string().starts_with("..")) continue;
      fs::create_symlink(link, target);
    } else if (fs::is_directory(status)) {
      fs::create_directories(target);
    } else if (fs::is_regular_file(status)) {
      fs::copy_file(it->path(), target);
    }
  }
}

// One archive the tests serve: its file name under the served folder, and its lock entry.
struct PythonArchive {
  std::string file;
  std::string sha256;
  std::uint64_t size = 0;

  [[nodiscard]] specs::Artifact artifact(const StaticHttpServer& server) const {
    return {.platform = specs::Platform::linux_x86_64,
            .component = "python",
            .kind = specs::ArtifactKind::archive,
            .url = server.url("/" + file),
            .sha256 = sha256,
            .size = size,
            .format = "tar.gz",
            .layout = specs::Layout::python_standalone,
            .wheel_root = "",
            .build_system = std::nullopt};
  }
};

// The archives, made once per test run (packing the stdlib takes a second or two).
struct PythonArchives {
  TempDir dir;
  fs::path served = dir.path() / "www";
  std::string version;      // 3.11.2: what the interpreter says it is
  PythonArchive good;       // the whole interpreter
  PythonArchive no_sqlite;  // without lib-dynload's _sqlite3 module
  PythonArchive broken;     // bin/python3 is a script that fails

  PythonArchives() {
    fs::create_directories(served);
    auto said = sys::run_process({kInterpreter.string(), "--version"});
    if (!said || said->exit_code != 0) throw std::runtime_error("python3.11 --version failed");
    version = said->out.substr(said->out.find(' ') + 1);
    while (!version.empty() && (version.back() == '\n' || version.back() == '\r'))
      version.pop_back();

    const auto stage = dir.path() / "good";
    fs::create_directories(stage / "python" / "bin");
    fs::copy_file(kInterpreter, stage / "python" / "bin" / "python3.11");
    fs::create_symlink("python3.11", stage / "python" / "bin" / "python3");
    copy_stdlib(stage / "python" / "lib" / "python3.11");
    good = pack(stage, "cpython-good-install_only.tar.gz");

    for (const auto& entry :
         fs::directory_iterator(stage / "python" / "lib" / "python3.11" / "lib-dynload")) {
      if (entry.path().filename().string().starts_with("_sqlite3")) fs::remove(entry.path());
    }
    no_sqlite = pack(stage, "cpython-no-sqlite-install_only.tar.gz");

    const auto bad = dir.path() / "broken";
    fs::create_directories(bad / "python" / "bin");
    fs::create_directories(bad / "python" / "lib" / "python3.11");
    std::ofstream(bad / "python" / "bin" / "python3")
        << "#!/bin/sh\necho \"fatal: broken build\" >&2\nexit 1\n";
    fs::permissions(bad / "python" / "bin" / "python3", fs::perms(0755));
    std::ofstream(bad / "python" / "lib" / "python3.11" / "os.py") << "# not really os\n";
    broken = pack(bad, "cpython-broken-install_only.tar.gz");
  }

  PythonArchive pack(const fs::path& stage, const std::string& name) const {
    const auto file = served / name;
    // gzip -1: quick to make, and still the real format.
    run_or_throw({"tar", "-C", stage.string(), "--use-compress-program=gzip -1", "-cf",
                  file.string(), "python"});
    auto digest = core::sha256_file(file);
    if (!digest) throw std::runtime_error("cannot hash " + file.string());
    return {.file = name, .sha256 = *digest, .size = fs::file_size(file)};
  }
};

// The archives, or nullptr (the skip recorded, saying why) where this machine
// lacks what they are made of (Debian 12's python3, which scripts/setup
// installs), or nginx to serve them.
const PythonArchives* python_archives(
    std::source_location where = std::source_location::current()) {
  if (!fs::exists(kInterpreter) || !fs::exists(kStdlib / "os.py")) {
    skip_test(SkipKind::setup_should_provide,
              "no Debian python3.11 (" + kInterpreter.string() + " with " +
                  (kStdlib / "os.py").string() +
                  ") to make a relocatable Python archive from (scripts/setup installs python3)",
              where);
    return nullptr;
  }
  if (nginx_missing(where)) return nullptr;
  static const PythonArchives archives;
  return &archives;
}

// A project with its own home and cache, and nginx serving the archives.
struct StandalonePythonProject {
  const PythonArchives& archives;
  IsolatedProject project;
  StaticHttpServer server{archives.served};

  explicit StandalonePythonProject(const PythonArchives& made) : archives(made) {}

  [[nodiscard]] fs::path prefix() const { return project.prefix(); }
  [[nodiscard]] fs::path receipt() const {
    return prefix() / ".envkit" / "receipts" / "python.json";
  }
  void lock(const PythonArchive& python, const std::string& version) const {
    project.write(project.root / "envkit.lock",
                  lock_text({{"python", version, {python.artifact(server)}}}));
  }
  [[nodiscard]] sys::ProcessOutput install() const {
    return project.envkit({"install", "--frozen"});
  }
  // `envkit run -- python -c CODE`, as a user runs the prefix's Python.
  [[nodiscard]] sys::ProcessOutput python(const std::string& code) const {
    return project.envkit({"run", "--", "python", "-c", code});
  }
};

std::vector<std::string> receipt_paths(const fs::path& receipt) {
  std::vector<std::string> paths;
  const auto parsed = json::parse(read_text(receipt), nullptr, false);
  if (parsed.is_discarded() || !parsed.contains("files")) return paths;
  for (const auto& file : parsed.at("files"))
    paths.push_back(file.at("path").get<std::string>());
  return paths;
}

bool lists(const std::vector<std::string>& paths, const std::string& path) {
  return std::find(paths.begin(), paths.end(), path) != paths.end();
}

TEST_CASE("install puts a python-build-standalone Python in the prefix, and it runs from there",
          "[python][install][integration]") {
  const auto* archives = python_archives();
  if (!archives) return;
  const StandalonePythonProject fixture(*archives);
  fixture.lock(archives->good, archives->version);

  const auto installed = fixture.install();
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);
  // Every module envkit checks imports: no warning.
  CHECK_THAT(installed.err, !Contains("cannot import"));

  const auto prefix = fixture.prefix();
  CHECK(fs::is_regular_file(prefix / "bin" / "python3"));  // through python3 -> python3.11
  CHECK(fs::is_symlink(fs::symlink_status(prefix / "bin" / "python3")));
  CHECK(fs::is_symlink(fs::symlink_status(prefix / "bin" / "python")));  // envkit's
  CHECK(fs::read_symlink(prefix / "bin" / "python") == "python3");
  CHECK(fs::is_regular_file(prefix / "lib" / "python3.11" / "os.py"));
  CHECK(fs::exists(prefix / "lib" / "python3.11" / "lib-dynload"));

  // The prefix's python is the one that runs, with its own stdlib: not /usr's.
  const auto ran = fixture.python(
      "import ssl, zlib, sqlite3, venv, sys, os; print(os.path.realpath(sys.prefix)); "
      "print(sys.version.split()[0]); print(os.path.realpath(os.__file__))");
  INFO(ran.err);
  REQUIRE(ran.exit_code == 0);
  const auto generation = fs::canonical(prefix);
  CHECK(ran.out == generation.string() + "\n" + archives->version + "\n" +
                       (generation / "lib" / "python3.11" / "os.py").string() + "\n");
  CHECK_THAT(ran.out, !Contains("/usr/lib"));
  // And called by the prefix's path, as a script's #! line would.
  const auto direct = sys::run_process(
      {(prefix / "bin" / "python3").string(), "-c", "import sys; print(sys.prefix)"});
  REQUIRE(direct);
  CHECK(direct->exit_code == 0);
  CHECK(fs::canonical(direct->out.substr(0, direct->out.find('\n'))) == generation);

  // The receipt lists the interpreter and the links envkit added.
  const auto paths = receipt_paths(fixture.receipt());
  CHECK(lists(paths, "bin/python3"));
  CHECK(lists(paths, "bin/python3.11"));
  CHECK(lists(paths, "bin/python"));
  CHECK(lists(paths, "lib/python3.11/os.py"));
  const auto listed = fixture.project.envkit({"list", "--json"});
  REQUIRE(listed.exit_code == 0);
  const auto packages = json::parse(listed.out).at("packages");
  REQUIRE(packages.size() == 1);
  CHECK(packages.at(0).at("name") == "python");
  CHECK(packages.at(0).at("version") == archives->version);
}

TEST_CASE("a standalone Python that cannot import sqlite3 installs with a warning naming it",
          "[python][install][integration]") {
  const auto* archives = python_archives();
  if (!archives) return;
  const StandalonePythonProject fixture(*archives);
  fixture.lock(archives->no_sqlite, archives->version);

  const auto installed = fixture.install();
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);
  CHECK_THAT(installed.err,
             Contains("the prefix's Python " + archives->version + " cannot import sqlite3"));
  CHECK_THAT(installed.err, Contains("_sqlite3"));  // Python's own reason
  // Only sqlite3 is named: the other modules import.
  for (const auto* fine : {"ssl (", "zlib (", "venv ("})
    CHECK_THAT(installed.err, !Contains(fine));

  // The rest of the interpreter works; sqlite3 fails as the warning said.
  CHECK(fixture.python("import ssl, zlib, venv").exit_code == 0);
  const auto sqlite = fixture.python("import sqlite3");
  CHECK(sqlite.exit_code != 0);
  CHECK_THAT(sqlite.err, Contains("_sqlite3"));
  CHECK(lists(receipt_paths(fixture.receipt()), "bin/python3"));
}

TEST_CASE("a standalone Python that does not start fails the install and keeps the prefix",
          "[python][install][integration]") {
  const auto* archives = python_archives();
  if (!archives) return;
  const StandalonePythonProject fixture(*archives);
  fixture.lock(archives->good, archives->version);
  {
    const auto first = fixture.install();
    INFO(first.err);
    REQUIRE(first.exit_code == 0);
  }
  const auto prefix = fixture.prefix();
  const auto generation = fs::read_symlink(prefix);
  const auto receipt = read_text(fixture.receipt());
  const auto generations = prefix.parent_path() / ".env.generations";
  const auto generation_count = [&] {
    return std::distance(fs::directory_iterator(generations), fs::directory_iterator());
  };
  const auto generations_before = generation_count();

  fixture.lock(archives->broken, "3.11.99");
  const auto failed = fixture.install();
  INFO(failed.err);
  CHECK(failed.exit_code == 1);
  CHECK_THAT(failed.err, Contains("does not start"));
  CHECK_THAT(failed.err, Contains("bin/python3"));
  CHECK_THAT(failed.err, Contains("fatal: broken build"));  // the interpreter's own words

  // The prefix is the previous generation, with its files and receipt, and
  // the half-made one is gone.
  CHECK(fs::read_symlink(prefix) == generation);
  CHECK(read_text(fixture.receipt()) == receipt);
  CHECK(generation_count() == generations_before);
  CHECK(read_text(prefix / "lib" / "python3.11" / "os.py") == read_text(kStdlib / "os.py"));
  const auto still = fixture.python("import sys; print(sys.version.split()[0])");
  INFO(still.err);
  CHECK(still.exit_code == 0);
  CHECK(still.out == archives->version + "\n");
}

}  // namespace
}  // namespace envkit::test
