#include "envkit/project/scan.hpp"

#include <catch2/catch.hpp>

#include "envkit/project/project_files.hpp"
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
  CHECK(scan.error().headline().starts_with("environment.yml:3:2: invalid YAML: "));
}

TEST_CASE("a project file over the size cap is refused before it is parsed", "[project]") {
  // 60 MiB of requirement lines once took `envkit init` to 2 GiB of memory.
  TempDir dir;
  std::string huge = "torch==2.1.2\n";
  while (huge.size() <= project::kMaxProjectFileBytes)
    huge += "package-number-" + std::to_string(huge.size()) + ">=1.0\n";
  dir.write("requirements.txt", huge);
  const auto scan = project::scan(dir.path());
  REQUIRE_FALSE(scan.ok());
  CHECK_THAT(scan.error().to_string(),
             Catch::Contains("requirements.txt is larger than 2 MiB, the most envkit reads"));
  CHECK(scan.error().exit_code() == 2);
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

TEST_CASE("scan reads setup.py, setup.cfg and every top-level conda environment", "[project]") {
  TempDir dir;
  dir.write("setup.py", "from setuptools import setup\nsetup(install_requires=['torch>=2.5.1'])\n");
  dir.write("setup.cfg", "[options]\npython_requires = >=3.9\n");
  dir.write("env.yml", "name: py38\ndependencies:\n  - python=3.8.5\n");
  dir.write("conda.yaml", "channels: [pytorch]\ndependencies:\n  - pytorch-cuda=11.8\n");
  dir.write("environment-gpu.yml", "dependencies:\n  - cudatoolkit=10.1\n");
  // YAML that is no conda environment, and envkit's own files, are not input.
  dir.write("docker-compose.yml", "services:\n  train:\n    image: pytorch/pytorch\n");
  dir.write("mkdocs.yml", "site_name: docs\nnav:\n  - index.md\n");
  dir.write("broken.yaml", "key: [unclosed\n");
  dir.write("envkit.yaml", "dependencies:\n  - pytorch=1.0\n");
  dir.write("envkit.lock", "dependencies:\n  - pytorch=1.0\n");
  dir.write("sub/environment.yml", "dependencies:\n  - pytorch=1.0\n");

  const auto scan = project::scan(dir.path());
  REQUIRE(scan.ok());
  CHECK(paths(*scan) == std::vector<std::string>{"conda.yaml", "env.yml", "environment-gpu.yml",
                                                 "setup.cfg", "setup.py"});
  CHECK(locations(scan->files[4]) == std::vector<std::string>{"torch at setup.py:2:26"});
  CHECK(scan->warnings.empty());
}

TEST_CASE("a requirements file that conda wrote is read as conda's", "[project]") {
  TempDir dir;
  dir.write("requirements.txt",
            "# This file may be used to create an environment using:\n"
            "# $ conda create --name <env> --file <this file>\n"
            "# platform: linux-64\n"
            "_libgcc_mutex=0.1=main\n"
            "python=3.7.6=h0371630_2\n"
            "tensorflow-gpu=1.15.0=h0d30ee6_0\n");
  const auto scan = project::scan(dir.path());
  REQUIRE(scan.ok());
  REQUIRE(scan->files.size() == 1);
  CHECK(locations(scan->files[0]) ==
        std::vector<std::string>{"_libgcc_mutex at requirements.txt:4:1",
                                 "python at requirements.txt:5:1",
                                 "tensorflow-gpu at requirements.txt:6:1"});
  CHECK(scan->files[0].requirements[2].dialect == project::SpecDialect::conda);
  // conda installs these, not pip: the file is no `python-requirements:`.
  CHECK(scan->python_requirements().empty());
}

TEST_CASE("skip_bad_files turns a malformed file into a warning", "[project]") {
  TempDir dir;
  dir.write("requirements.txt", "numpy\ntorch 2.1\n");
  dir.write("setup.py", "setup(install_requires=load('requirements.txt'))\n");
  dir.write("environment.yml", "dependencies:\n  - python=3.10\n");

  const auto strict = project::scan(dir.path());
  REQUIRE_FALSE(strict.ok());
  CHECK(strict.error().headline() ==
        "requirements.txt:2:7: expected a version specifier such as `>=2.1` in requirement "
        "`torch 2.1`");

  const auto lenient = project::scan(dir.path(), {.skip_bad_files = true});
  REQUIRE(lenient.ok());
  CHECK(paths(*lenient) == std::vector<std::string>{"environment.yml", "setup.py"});
  CHECK(lenient->warnings ==
        std::vector<std::string>{
            "requirements.txt:2:7: expected a version specifier such as `>=2.1` in requirement "
            "`torch 2.1`; requirements.txt is skipped",
            "setup.py:1:24: `install_requires` is not a literal list: envkit reads setup.py "
            "without running it, so the value is not read",
        });
}
