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
#include "python_archives.hpp"
#include "support/http_server.hpp"
#include "support/temp_dir.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using nlohmann::json;

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
