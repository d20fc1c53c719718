#include "envkit/project/project_files.hpp"

#include <catch2/catch.hpp>

#include "envkit/sys/fs.hpp"
#include "support/envkit_runner.hpp"

namespace {

namespace project = envkit::project;

std::string fixture(const std::string& name) {
  return envkit::sys::read_file(envkit::test::test_data_dir() / "project" / name).value();
}

// "name spec @ line:column" for compact, exact comparisons.
std::vector<std::string> summary(const project::FileRequirements& parsed) {
  std::vector<std::string> out;
  for (const auto& r : parsed.requirements) {
    std::string line = r.name;
    if (!r.spec.empty()) line += " " + r.spec;
    if (r.url) line += " @ " + *r.url;
    out.push_back(line + " at " + r.where.to_string());
  }
  return out;
}

}  // namespace

TEST_CASE("requirements.txt: requirements, includes, and lines that are not packages",
          "[project]") {
  const auto parsed =
      project::parse_requirements_txt(fixture("requirements-mixed.txt"), "requirements.txt");
  REQUIRE(parsed.ok());
  CHECK(summary(*parsed) ==
        std::vector<std::string>{
            "torch >=2.1,<2.2 at requirements.txt:6:1",
            "torchvision ==0.16.* at requirements.txt:7:1",
            "pycocotools @ git+https://github.com/cocodataset/cocoapi.git#subdirectory=PythonAPI "
            "at requirements.txt:12:1",
            "opencv-python-headless >=4.8 at requirements.txt:13:1",
        });
  CHECK(parsed->requirements[3].marker == "sys_platform == \"linux\"");
  REQUIRE(parsed->includes.size() == 1);
  CHECK(parsed->includes[0].path == "requirements/base.txt");
  CHECK(parsed->includes[0].where.to_string() == "requirements.txt:4:1");
}

TEST_CASE("requirements.txt: the classic Mask R-CNN pins", "[project]") {
  const auto parsed = project::parse_requirements_txt(
      "numpy\nscipy\nPillow\ncython\nmatplotlib\nscikit-image\ntensorflow-gpu==1.6.0\n"
      "keras==2.1.5\nopencv-python\nh5py\nimgaug\n",
      "requirements.txt");
  REQUIRE(parsed.ok());
  REQUIRE(parsed->requirements.size() == 11);
  CHECK(parsed->requirements[6].name == "tensorflow-gpu");
  CHECK(parsed->requirements[6].spec == "==1.6.0");
  CHECK(parsed->requirements[6].where.to_string() == "requirements.txt:7:1");
}

TEST_CASE("requirements.txt: include spellings and indentation", "[project]") {
  const auto parsed = project::parse_requirements_txt(
      "-rbase.txt\n--requirement=gpu.txt\n  --requirement more.txt\n\r\n   jax[cuda12]==0.4.23\r\n",
      "reqs.txt");
  REQUIRE(parsed.ok());
  REQUIRE(parsed->includes.size() == 3);
  CHECK(parsed->includes[0].path == "base.txt");
  CHECK(parsed->includes[1].path == "gpu.txt");
  CHECK(parsed->includes[2].path == "more.txt");
  CHECK(parsed->includes[2].where.to_string() == "reqs.txt:3:3");
  CHECK(summary(*parsed) == std::vector<std::string>{"jax ==0.4.23 at reqs.txt:5:4"});
}

TEST_CASE("requirements.txt: a line that is no requirement is an error at its column",
          "[project]") {
  const auto parsed = project::parse_requirements_txt("numpy\n  torch 2.1\n", "requirements.txt");
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.error().headline() ==
        "requirements.txt:2:9: expected a version specifier such as `>=2.1` in requirement "
        "`torch 2.1`");
  CHECK(parsed.error().exit_code() == 2);
}

TEST_CASE("pyproject.toml: PEP 621 dependencies and requires-python", "[project]") {
  const auto parsed =
      project::parse_pyproject_toml(fixture("pyproject-pep621.toml"), "pyproject.toml");
  REQUIRE(parsed.ok());
  CHECK(summary(*parsed) == std::vector<std::string>{
                                "python >=3.9,<3.12 at pyproject.toml:8:19",
                                "torch >=2.1,<2.2 at pyproject.toml:10:6",
                                "torchvision ~=0.16.0 at pyproject.toml:11:6",
                                "numpy >=1.24 at pyproject.toml:12:6",
                                "pillow at pyproject.toml:13:6",
                            });
  CHECK(parsed->requirements[0].written == "requires-python = \">=3.9,<3.12\"");
  CHECK(parsed->requirements[1].dialect == project::SpecDialect::pep440);
  CHECK(parsed->includes.empty());
}

TEST_CASE("pyproject.toml: Poetry dependencies in every form", "[project]") {
  const auto parsed =
      project::parse_pyproject_toml(fixture("pyproject-poetry.toml"), "pyproject.toml");
  REQUIRE(parsed.ok());
  CHECK(summary(*parsed) ==
        std::vector<std::string>{
            "python ^3.8 at pyproject.toml:8:1",
            "tensorflow ~2.13 at pyproject.toml:9:1",
            "numpy ^1.24 at pyproject.toml:10:1",
            "librosa * at pyproject.toml:11:1",
            "soundfile 0.12.1 at pyproject.toml:12:1",
            "soundfile 0.11.0 at pyproject.toml:12:1",
            "utils @ https://github.com/example/utils.git at pyproject.toml:16:1",
        });
  const auto& tensorflow = parsed->requirements[1];
  CHECK(tensorflow.dialect == project::SpecDialect::poetry);
  CHECK(tensorflow.extras == std::vector<std::string>{"and-cuda"});
  CHECK(tensorflow.written == "tensorflow = \"~2.13\"");
  CHECK(tensorflow.version_spec()->to_string() == "<2.14,>=2.13");
  CHECK(parsed->requirements[0].version_spec()->to_string() == "<4,>=3.8");
  CHECK(parsed->requirements[4].marker == "sys_platform == 'linux'");
}

TEST_CASE("pyproject.toml: malformed TOML names file:line:column", "[project]") {
  const auto parsed = project::parse_pyproject_toml(
      "[project]\nname = \"x\"\ndependencies = [\"torch>=2.1\",\n", "pyproject.toml");
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.error().headline() ==
        "pyproject.toml:3:31: malformed TOML: Error while parsing array: encountered end-of-file");

  const auto unquoted =
      project::parse_pyproject_toml("[tool.poetry.dependencies]\ntorch = ^2.1\n", "pyproject.toml");
  REQUIRE_FALSE(unquoted.ok());
  CHECK(unquoted.error().headline() ==
        "pyproject.toml:2:9: malformed TOML: Error while parsing value: could not determine "
        "value type");
  CHECK(parsed.error().exit_code() == 2);
}

TEST_CASE("pyproject.toml: a key of the wrong type is an error at the key's value", "[project]") {
  const auto parsed = project::parse_pyproject_toml(
      "[project]\nname = \"x\"\ndependencies = \"torch>=2.1\"\n", "pyproject.toml");
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.error().headline() ==
        "pyproject.toml:3:16: `project.dependencies`: expected an array of PEP 508 strings");

  const auto poetry =
      project::parse_pyproject_toml("[tool.poetry.dependencies]\ntorch = 2.1\n", "pyproject.toml");
  REQUIRE_FALSE(poetry.ok());
  CHECK(poetry.error().headline().starts_with(
      "pyproject.toml:2:9: `tool.poetry.dependencies.torch`: expected a version constraint"));
}

TEST_CASE("environment.yml: conda packages and the pip list", "[project]") {
  const auto parsed =
      project::parse_environment_yml(fixture("environment-export.yml"), "environment.yml");
  REQUIRE(parsed.ok());
  CHECK(summary(*parsed) ==
        std::vector<std::string>{
            "_libgcc_mutex =0.1=conda_forge at environment.yml:8:5",
            "python =3.10.13=hd12c33a_0_cpython at environment.yml:9:5",
            "pytorch =2.1.0=py3.10_cuda12.1_cudnn8.9.2_0 at environment.yml:10:5",
            "pytorch-cuda =12.1=ha16c6d3_5 at environment.yml:11:5",
            "openssl =3.1.4=hd590300_0 at environment.yml:12:5",
            "numpy >=1.24,<2 at environment.yml:13:5",
            "pip =23.3.1 at environment.yml:14:5",
            "albumentations ==1.3.1 at environment.yml:18:9",
            "pycocotools at environment.yml:19:9",
        });
  CHECK(parsed->requirements[1].version_spec()->to_string() == "==3.10.13");
  CHECK(parsed->requirements[2].version_spec()->to_string() == "==2.1.0");
  CHECK(parsed->requirements[0].dialect == project::SpecDialect::conda);
  CHECK(parsed->requirements[7].dialect == project::SpecDialect::pep440);
  REQUIRE(parsed->includes.size() == 1);
  CHECK(parsed->includes[0].path == "requirements-extra.txt");
  CHECK(parsed->includes[0].where.to_string() == "environment.yml:17:9");
}

TEST_CASE("environment.yml: short forms", "[project]") {
  const auto parsed = project::parse_environment_yml(
      "dependencies:\n  - python=3.6\n  - conda-forge::tensorflow-gpu==1.6.0\n", "environment.yml");
  REQUIRE(parsed.ok());
  REQUIRE(parsed->requirements.size() == 2);
  CHECK(parsed->requirements[0].version_spec()->to_string() == "==3.6.*");
  CHECK(parsed->requirements[1].name == "tensorflow-gpu");
  CHECK(parsed->requirements[1].version_spec()->to_string() == "==1.6.0");

  CHECK(project::parse_environment_yml("", "environment.yml")->requirements.empty());
  CHECK(project::parse_environment_yml("name: x\n", "environment.yml")->requirements.empty());
}

TEST_CASE("environment.yml: malformed YAML names file:line:column", "[project]") {
  const auto parsed = project::parse_environment_yml(
      "name: x\ndependencies:\n  - python=3.6\n - pytorch=2.1\n", "environment.yml");
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.error().headline().starts_with("environment.yml:4:2: invalid YAML: "));
  CHECK(parsed.error().exit_code() == 2);

  const auto not_a_list =
      project::parse_environment_yml("dependencies: pytorch=2.1\n", "environment.yml");
  REQUIRE_FALSE(not_a_list.ok());
  CHECK(not_a_list.error().headline() ==
        "environment.yml:1:15: `dependencies`: expected a list of packages");

  const auto bad_item =
      project::parse_environment_yml("dependencies:\n  - {conda: pytorch}\n", "environment.yml");
  REQUIRE_FALSE(bad_item.ok());
  CHECK(bad_item.error().headline().starts_with("environment.yml:2:5: `dependencies`: expected"));
}
