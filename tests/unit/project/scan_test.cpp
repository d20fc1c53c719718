#include "envkit/project/scan.hpp"

#include <catch2/catch.hpp>

#include "support/temp_dir.hpp"

namespace {

namespace project = envkit::project;
using envkit::test::TempDir;

std::vector<std::string> paths(const project::ProjectScan& scan) {
  std::vector<std::string> out;
  for (const auto& file : scan.files)
    out.push_back(file.path);
  return out;
}

std::vector<std::string> locations(const project::ProjectFile& file) {
  std::vector<std::string> out;
  for (const auto& r : file.requirements)
    out.push_back(r.name + " at " + r.where.to_string());
  return out;
}

}  // namespace

TEST_CASE("scan reads the project's requirement files in name order", "[project]") {
  TempDir dir;
  dir.write("requirements.txt", "-r requirements/base.txt\ntorch==2.1.0\n");
  dir.write("requirements/base.txt", "numpy>=1.24\n-r ../shared.txt\n");
  dir.write("shared.txt", "tqdm\n");
  dir.write("requirements-dev.txt", "pytest\n");
  dir.write("pyproject.toml", "[project]\nname = \"x\"\nrequires-python = \">=3.9\"\n");
  dir.write("environment.yml", "dependencies:\n  - python=3.10\n");
  dir.write("README.md", "torch==1.0\n");
  dir.write("requirements.in", "torch==1.0\n");
  dir.write("setup.txt", "torch==1.0\n");

  const auto scan = project::scan(dir.path());
  REQUIRE(scan.ok());
  CHECK(paths(*scan) == std::vector<std::string>{"environment.yml", "pyproject.toml",
                                                 "requirements-dev.txt", "requirements.txt"});
  // A file's own requirements come first, then those of the files it includes.
  CHECK(locations(scan->files[3]) == std::vector<std::string>{
                                         "torch at requirements.txt:2:1",
                                         "numpy at requirements/base.txt:1:1",
                                         "tqdm at shared.txt:1:1",
                                     });
  // A conda package or a Python constraint is no pip requirement; the files listing
  // only those stay out.
  CHECK(scan->python_requirements() ==
        std::vector<std::string>{"requirements-dev.txt", "requirements.txt"});
}

TEST_CASE("a project whose only requirement is the framework has no other requirements",
          "[project]") {
  TempDir dir;
  dir.write("requirements.txt", "tensorflow==2.10.0\n");
  dir.write("environment.yml", "dependencies:\n  - pip:\n      - jax==0.4.23\n      - optax\n");
  const auto scan = project::scan(dir.path());
  REQUIRE(scan.ok());
  CHECK(scan->python_requirements() == std::vector<std::string>{"environment.yml"});
}

TEST_CASE("includes are read once, even in a cycle", "[project]") {
  TempDir dir;
  dir.write("requirements.txt", "-r more.txt\ntorch\n");
  dir.write("more.txt", "-r requirements.txt\n-r ./more.txt\nnumpy\n");
  const auto scan = project::scan(dir.path());
  REQUIRE(scan.ok());
  REQUIRE(scan->files.size() == 1);
  CHECK(locations(scan->files[0]) ==
        std::vector<std::string>{"torch at requirements.txt:2:1", "numpy at more.txt:3:1"});
}

TEST_CASE("a missing include is an error at the line that names it", "[project]") {
  TempDir dir;
  dir.write("requirements.txt", "numpy\n-r gpu.txt\n");
  const auto scan = project::scan(dir.path());
  REQUIRE_FALSE(scan.ok());
  CHECK(scan.error().headline() == "requirements.txt:2:1: included file `gpu.txt` not found");
  CHECK(scan.error().exit_code() == 2);
}

TEST_CASE("a malformed file stops the scan with its location", "[project]") {
  TempDir dir;
  dir.write("environment.yml", "dependencies:\n  - python=3.6\n - pip\n");
  const auto scan = project::scan(dir.path());
  REQUIRE_FALSE(scan.ok());
  CHECK(scan.error().headline().starts_with("environment.yml:3:2: malformed YAML: "));
}

TEST_CASE("an empty project scans to nothing, a missing directory is an error", "[project]") {
  TempDir dir;
  const auto empty = project::scan(dir.path());
  REQUIRE(empty.ok());
  CHECK(empty->files.empty());
  CHECK(empty->python_requirements().empty());

  const auto missing = project::scan(dir.path() / "nope");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message().starts_with("cannot read the project directory "));
}
