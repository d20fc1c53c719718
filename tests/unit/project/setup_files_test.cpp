#include <catch2/catch.hpp>

#include "envkit/project/project_files.hpp"

namespace {

namespace project = envkit::project;

// "name spec at file:line:column" for each requirement.
std::vector<std::string> setup_summary(const project::FileRequirements& parsed) {
  std::vector<std::string> out;
  for (const auto& r : parsed.requirements) {
    std::string line = r.name;
    if (!r.spec.empty()) line += " " + r.spec;
    if (!r.marker.empty()) line += " ; " + r.marker;
    out.push_back(line + " at " + r.where.to_string());
  }
  return out;
}

std::vector<std::string> warning_headlines(const project::FileRequirements& parsed) {
  std::vector<std::string> out;
  for (const auto& warning : parsed.warnings)
    out.push_back(warning.headline());
  return out;
}

}  // namespace

TEST_CASE("setup.py: the install_requires list and python_requires, never run", "[project]") {
  const auto parsed = project::parse_setup_py(R"(#!/usr/bin/env python
import os
from setuptools import find_packages, setup

# install_requires=["not-this==1.0"] is a comment
setup(
    name="detectron-lite",
    version=os.environ.get("VERSION", "0.1"),
    python_requires='>=3.8',
    install_requires=[
        "torch>=2.5.1",  # the framework
        'torchvision>=0.20',
        """numpy<2""",
        "opencv-python; sys_platform == 'linux'",
        "pycocotools" ">=2.0",
    ],
    extras_require={"dev": ["pytest"]},
)
)",
                                              "setup.py");
  REQUIRE(parsed.ok());
  CHECK(setup_summary(*parsed) == std::vector<std::string>{
                                      "python >=3.8 at setup.py:9:22",
                                      "torch >=2.5.1 at setup.py:11:10",
                                      "torchvision >=0.20 at setup.py:12:10",
                                      "numpy <2 at setup.py:13:12",
                                      "opencv-python ; sys_platform == 'linux' at setup.py:14:10",
                                      "pycocotools >=2.0 at setup.py:15:10",
                                  });
  CHECK(parsed->requirements[0].written == "python_requires=\">=3.8\"");
  CHECK(parsed->warnings.empty());
}

TEST_CASE("setup.py: a list assigned to a name, or given as a tuple, is literal too", "[project]") {
  // The shape of the widespread setup.py template: `REQUIRED = [...]` at the top.
  const auto parsed = project::parse_setup_py(
      "REQUIRED = [\n    'tensorflow-gpu==1.15.0', 'keras==2.3.1',\n]\n"
      "setup(name='x', install_requires=REQUIRED)\n",
      "setup.py");
  REQUIRE(parsed.ok());
  CHECK(setup_summary(*parsed) == std::vector<std::string>{
                                      "tensorflow-gpu ==1.15.0 at setup.py:2:6",
                                      "keras ==2.3.1 at setup.py:2:32",
                                  });

  // `install_requires = [...]` then `install_requires=install_requires`: read once.
  const auto same = project::parse_setup_py(
      "install_requires = ('jax==0.4.23',)\nsetup(install_requires=install_requires)\n",
      "setup.py");
  REQUIRE(same.ok());
  CHECK(setup_summary(*same) == std::vector<std::string>{"jax ==0.4.23 at setup.py:1:22"});
  CHECK(same->warnings.empty());
}

TEST_CASE("setup.py: install_requires that is not a literal list is a warning", "[project]") {
  const auto parsed = project::parse_setup_py(
      "def read_requirements(path):\n"
      "    return [line.strip() for line in open(path)]\n\n"
      "setup(\n"
      "    python_requires=PYTHON,\n"
      "    install_requires=read_requirements('requirements.txt'),\n"
      ")\n",
      "setup.py");
  REQUIRE(parsed.ok());
  CHECK(parsed->requirements.empty());
  CHECK(warning_headlines(*parsed) ==
        std::vector<std::string>{
            "setup.py:5:21: `python_requires` is not a literal string: envkit reads setup.py "
            "without running it, so the value is not read",
            "setup.py:6:22: `install_requires` is not a literal list: envkit reads setup.py "
            "without running it, so the value is not read",
        });

  const auto extended = project::parse_setup_py(
      "setup(install_requires=['torch>=2.1'] + EXTRA, name=f'{NAME}')\n", "setup.py");
  REQUIRE(extended.ok());
  CHECK(extended->requirements.empty());
  CHECK(warning_headlines(*extended).size() == 1);

  const auto formatted =
      project::parse_setup_py("setup(install_requires=[f'torch=={VERSION}'])\n", "setup.py");
  CHECK(warning_headlines(*formatted) ==
        std::vector<std::string>{"setup.py:1:24: `install_requires` is not a literal list: "
                                 "envkit reads setup.py without running it, so the value is not "
                                 "read"});
}

TEST_CASE("setup.py: a malformed requirement or string is an error at its place", "[project]") {
  const auto bad =
      project::parse_setup_py("setup(\n  install_requires=['torch 2.1'],\n)\n", "setup.py");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().headline() ==
        "setup.py:2:28: expected a version specifier such as `>=2.1` in requirement `torch 2.1`");

  const auto open = project::parse_setup_py("setup(install_requires=['torch>=2.1)\n", "setup.py");
  REQUIRE_FALSE(open.ok());
  CHECK(open.error().headline() == "setup.py:1:25: a string literal that does not end");
}

TEST_CASE("setup.cfg: [options] install_requires and python_requires", "[project]") {
  const auto parsed = project::parse_setup_cfg(R"([metadata]
name = mmlite
install_requires = not-in-options

[options]
packages = find:
python_requires = >=3.7
install_requires =
    # the framework
    torch>=1.8,<2.0
    torchvision
    ; a configparser comment

    numpy>=1.20  # inline
    timm; python_version >= "3.8"
include_package_data = True

[options.extras_require]
dev = pytest
)",
                                               "setup.cfg");
  REQUIRE(parsed.ok());
  CHECK(setup_summary(*parsed) == std::vector<std::string>{
                                      "python >=3.7 at setup.cfg:7:19",
                                      "torch >=1.8,<2.0 at setup.cfg:10:5",
                                      "torchvision at setup.cfg:11:5",
                                      "numpy >=1.20 at setup.cfg:14:5",
                                      "timm ; python_version >= \"3.8\" at setup.cfg:15:5",
                                  });
  CHECK(parsed->requirements[0].written == "python_requires = >=3.7");
}

TEST_CASE("setup.cfg: a value on the key's line, a file: include, a bad line", "[project]") {
  const auto one_line =
      project::parse_setup_cfg("[options]\nInstall-Requires = jax[cuda12]==0.4.23\n", "setup.cfg");
  REQUIRE(one_line.ok());
  CHECK(setup_summary(*one_line) == std::vector<std::string>{"jax ==0.4.23 at setup.cfg:2:20"});

  const auto file = project::parse_setup_cfg(
      "[options]\ninstall_requires = file: requirements.txt, requirements-gpu.txt\n", "setup.cfg");
  REQUIRE(file.ok());
  REQUIRE(file->includes.size() == 2);
  CHECK(file->includes[1].path == "requirements-gpu.txt");
  CHECK(file->includes[1].where.to_string() == "setup.cfg:2:20");

  const auto bad =
      project::parse_setup_cfg("[options]\ninstall_requires =\n  torch 2.1\n", "setup.cfg");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().headline() ==
        "setup.cfg:3:9: expected a version specifier such as `>=2.1` in requirement `torch 2.1`");
}

TEST_CASE("conda list --export output is read with conda's specs", "[project]") {
  const std::string exported = R"(# This file may be used to create an environment using:
# $ conda create --name <env> --file <this file>
# platform: linux-64
_libgcc_mutex=0.1=main
cudatoolkit=10.1.243=h6bb024c_0
python=3.7.6=h0371630_2
tensorflow-gpu=1.15.0=h0d30ee6_0
)";
  CHECK(project::is_conda_export(exported));
  const auto parsed = project::parse_conda_export(exported, "requirements.txt");
  REQUIRE(parsed.ok());
  CHECK(setup_summary(*parsed) == std::vector<std::string>{
                                      "_libgcc_mutex =0.1=main at requirements.txt:4:1",
                                      "cudatoolkit =10.1.243=h6bb024c_0 at requirements.txt:5:1",
                                      "python =3.7.6=h0371630_2 at requirements.txt:6:1",
                                      "tensorflow-gpu =1.15.0=h0d30ee6_0 at requirements.txt:7:1",
                                  });
  CHECK(parsed->requirements[2].dialect == project::SpecDialect::conda);
  CHECK(parsed->requirements[2].version_spec()->to_string() == "==3.7.6");
  CHECK(parsed->requirements[3].version_spec()->to_string() == "==1.15.0");
}

TEST_CASE("a conda export is told from pip's format by its content", "[project]") {
  // Without the header: every line `name=version=build`.
  CHECK(project::is_conda_export("numpy=1.18.1=py37h4f9e942_0\nscipy=1.4.1=py37h0b6359f_0\n"));
  CHECK(project::is_conda_export("# comment\n\npytorch=1.4.0=py3.7_cuda10.1.243_cudnn7.6.3_0\n"));
  CHECK_FALSE(project::is_conda_export("torch==2.1.0\nnumpy=1.18.1=py37h4f9e942_0\n"));
  CHECK_FALSE(project::is_conda_export("numpy\n"));
  CHECK_FALSE(project::is_conda_export("# only a comment\n"));
  CHECK_FALSE(project::is_conda_export(""));
}

TEST_CASE("conda list --explicit output is read from the package file names", "[project]") {
  const std::string explicit_list =
      "# platform: linux-64\n@EXPLICIT\n"
      "https://repo.anaconda.com/pkgs/main/linux-64/_libgcc_mutex-0.1-main.conda\n"
      "https://repo.anaconda.com/pkgs/main/linux-64/cudatoolkit-10.1.243-h6bb024c_0.tar.bz2\n";
  CHECK(project::is_conda_export(explicit_list));
  const auto parsed = project::parse_conda_export(explicit_list, "requirements.txt");
  REQUIRE(parsed.ok());
  CHECK(setup_summary(*parsed) == std::vector<std::string>{
                                      "_libgcc_mutex =0.1=main at requirements.txt:3:1",
                                      "cudatoolkit =10.1.243=h6bb024c_0 at requirements.txt:4:1",
                                  });
}

TEST_CASE("a YAML file is a conda environment when it has a dependencies list", "[project]") {
  CHECK(
      project::is_conda_environment("name: gpu\nchannels: [pytorch]\ndependencies:\n"
                                    "  - pytorch=2.1\n"));
  CHECK(project::is_conda_environment("dependencies: []\n"));
  CHECK_FALSE(project::is_conda_environment(
      "version: \"3.8\"\nservices:\n  app:\n    image: python:3.10\n"));  // docker-compose.yml
  CHECK_FALSE(project::is_conda_environment("site_name: docs\nnav:\n  - index.md\n"));
  CHECK_FALSE(project::is_conda_environment("name: x\nframework: torch 2.1\n"));  // envkit.yaml
  CHECK_FALSE(project::is_conda_environment("dependencies: numpy\n"));
  CHECK_FALSE(project::is_conda_environment("- python=3.8\n- pip\n"));
  CHECK_FALSE(project::is_conda_environment("dependencies:\n  - python=3.6\n - pip\n"));
}
