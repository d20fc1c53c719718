#include "envkit/project/pin.hpp"

#include <catch2/catch.hpp>

#include "envkit/project/project_files.hpp"

namespace {

namespace project = envkit::project;
using Parser = envkit::Result<project::FileRequirements> (*)(std::string_view, std::string_view);

// A scan of files given as (name, text), each read by the parser its name calls for.
project::ProjectScan scan_of(std::vector<std::pair<std::string, std::string>> files) {
  project::ProjectScan scan;
  for (const auto& [name, text] : files) {
    Parser parse = project::parse_requirements_txt;
    if (name.ends_with(".toml")) parse = project::parse_pyproject_toml;
    if (name.ends_with(".yml")) parse = project::parse_environment_yml;
    if (name.ends_with(".txt") && project::is_conda_export(text)) {
      parse = project::parse_conda_export;
    }
    auto parsed = parse(text, name);
    REQUIRE(parsed.ok());
    scan.files.push_back({name, std::move(parsed->requirements)});
  }
  return scan;
}

project::Pin framework(const project::ProjectScan& scan) {
  auto pin = project::infer_framework(scan);
  if (!pin) FAIL(pin.error().to_string());
  return std::move(pin).value();
}

}  // namespace

TEST_CASE("the framework pin of a requirements file", "[project]") {
  const auto pin = framework(scan_of({{"requirements.txt", "numpy\ntensorflow-gpu==1.6.0\n"}}));
  CHECK(pin.name == "tensorflow-gpu");
  CHECK(pin.spec.to_string() == "==1.6.0");
  CHECK(pin.source.to_string() == "requirements.txt:2:1");
  CHECK(pin.written == "tensorflow-gpu==1.6.0");
}

TEST_CASE("framework aliases and extras", "[project]") {
  CHECK(framework(scan_of({{"environment.yml", "dependencies:\n  - pytorch=2.1\n"}})).name ==
        "torch");
  const auto jax = framework(scan_of({{"requirements.txt", "jax[cuda12]==0.4.23\n"}}));
  CHECK(jax.name == "jax");
  CHECK(jax.spec.to_string() == "==0.4.23");
  const auto tf = framework(scan_of({{"requirements.txt", "tensorflow[and-cuda]==2.15\n"}}));
  CHECK(tf.name == "tensorflow");
}

TEST_CASE("pins that agree once normalized are one pin, from the first file", "[project]") {
  const auto pin = framework(scan_of({
      {"pyproject.toml", "[tool.poetry.dependencies]\ntorch = \"~2.1\"\n"},
      {"requirements.txt", "torch>=2.1, <2.2\n"},
  }));
  CHECK(pin.spec.to_string() == "<2.2,>=2.1");
  CHECK(pin.source.to_string() == "pyproject.toml:2:1");
}

TEST_CASE("an unpinned mention gives way to a pin, alone it means any version", "[project]") {
  const auto pinned = framework(scan_of({
      {"requirements-dev.txt", "torch\n"},
      {"requirements.txt", "torch==2.1.0\n"},
  }));
  CHECK(pinned.spec.to_string() == "==2.1.0");
  CHECK(pinned.source.file == "requirements.txt");

  const auto url =
      framework(scan_of({{"requirements.txt", "torch @ https://example.com/t.whl\n"}}));
  CHECK(url.name == "torch");
  CHECK(url.spec.empty());
}

TEST_CASE("conflicting framework pins are an error listing each", "[project]") {
  const auto pin = project::infer_framework(scan_of({
      {"environment.yml", "dependencies:\n  - pytorch=2.0\n"},
      {"requirements.txt", "torch==2.1.0\n"},
  }));
  REQUIRE_FALSE(pin.ok());
  CHECK(pin.error().exit_code() == 2);
  CHECK(pin.error().message() == "the project pins `torch` differently");
  CHECK(pin.error().causes() == std::vector<std::string>{"`pytorch=2.0` at environment.yml:2",
                                                         "`torch==2.1.0` at requirements.txt:1"});
  CHECK(pin.error().hints() ==
        std::vector<std::string>{
            "name it with `--framework`, e.g. `envkit init --framework \"torch 2.1.*\"`"});
}

TEST_CASE("two frameworks are an error listing each", "[project]") {
  const auto pin = project::infer_framework(scan_of({
      {"requirements.txt", "torch==2.1.0\njax[cuda12]==0.4.23\ntorch==2.1.0\n"},
  }));
  REQUIRE_FALSE(pin.ok());
  CHECK(pin.error().message() == "the project names more than one framework");
  CHECK(pin.error().causes() ==
        std::vector<std::string>{"`torch==2.1.0` at requirements.txt:1",
                                 "`jax[cuda12]==0.4.23` at requirements.txt:2"});
}

TEST_CASE("no framework is an error that says where envkit looked", "[project]") {
  const auto none = project::infer_framework(scan_of({{"requirements.txt", "numpy\n"}}));
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().exit_code() == 2);
  CHECK(none.error().message() ==
        "cannot infer the framework: no `torch`, `tensorflow`, `tensorflow-gpu`, `jax` "
        "requirement in requirements.txt");
  CHECK(none.error().hints().at(0).find("--framework \"torch 2.1.*\"") != std::string::npos);

  const auto empty = project::infer_framework(project::ProjectScan{});
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().message() ==
        "cannot infer the framework: the project has no requirements*.txt, pyproject.toml, "
        "setup.py, setup.cfg or conda environment file");
}

TEST_CASE("an unreadable framework version is an error at its line", "[project]") {
  const auto pin = project::infer_framework(scan_of({{"requirements.txt", "\ntorch==2.1.x\n"}}));
  REQUIRE_FALSE(pin.ok());
  CHECK(pin.error().headline() ==
        "requirements.txt:2:1: cannot read the version constraint `==2.1.x` of `torch`");
}

TEST_CASE("the project's Python constraints are intersected", "[project]") {
  const auto none = project::infer_python(scan_of({{"requirements.txt", "torch\n"}}));
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());

  const auto python = project::infer_python(scan_of({
      {"environment.yml", "dependencies:\n  - python=3.10\n"},
      {"pyproject.toml", "[project]\nname = \"x\"\nrequires-python = \">=3.9\"\n"},
  }));
  REQUIRE(python.ok());
  REQUIRE(python->has_value());
  CHECK((*python)->name == "python");
  CHECK((*python)->spec.to_string() == "==3.10.*,>=3.9");
  CHECK((*python)->source.to_string() == "environment.yml:2:5");

  const auto poetry = project::infer_python(
      scan_of({{"pyproject.toml", "[tool.poetry.dependencies]\npython = \"^3.8\"\n"}}));
  CHECK((*poetry)->spec.to_string() == "<4,>=3.8");
}

TEST_CASE("a framework pin whose marker excludes Linux pins nothing", "[project]") {
  const auto pin = framework(
      scan_of({{"requirements.txt", "torch>=1.8; sys_platform == 'win32'\ntorch==2.1.2\n"}}));
  CHECK(pin.spec.to_string() == "==2.1.2");
  CHECK(pin.source.to_string() == "requirements.txt:2:1");
}

TEST_CASE("Poetry's per-Python constraint lists keep their markers", "[project]") {
  const auto scan = scan_of({{"pyproject.toml", R"([tool.poetry.dependencies]
torch = [
  { version = "^1.8", python = "<3.9" },
  { version = "^2.1", python = ">=3.9", markers = "platform_machine == 'x86_64'" },
]
)"}});
  const auto& requirements = scan.files.front().requirements;
  REQUIRE(requirements.size() == 2);
  CHECK(requirements[0].marker == "python_full_version < \"3.9\"");
  CHECK(requirements[1].marker ==
        "(platform_machine == 'x86_64') and python_full_version >= \"3.9\"");
  // Neither holds everywhere: the pin for the newest Python is the framework's.
  const auto pin = framework(scan);
  CHECK(pin.spec.to_string() == "<3,>=2.1");
  CHECK(pin.source.to_string() == "pyproject.toml:2:1");
}

TEST_CASE("conda's CUDA packages pin cuda", "[project]") {
  const auto cuda_of = [](std::vector<std::pair<std::string, std::string>> files) {
    auto cuda = project::infer_cuda(scan_of(std::move(files)));
    if (!cuda) FAIL(cuda.error().to_string());
    return *std::move(cuda);
  };
  const auto toolkit =
      cuda_of({{"environment.yml",
                "name: tf\nchannels:\n  - defaults\ndependencies:\n"
                "  - python=3.7\n  - tensorflow-gpu=1.15\n  - cudatoolkit=10.1\n"}});
  REQUIRE(toolkit.has_value());
  CHECK(toolkit->name == "cuda");
  CHECK(toolkit->spec.to_string() == "==10.1.*");
  CHECK(toolkit->source.to_string() == "environment.yml:7:5");
  CHECK(toolkit->written == "cudatoolkit=10.1");

  // An exported build names the runtime's version: only its series is kept.
  const auto exported =
      cuda_of({{"requirements.txt", "python=3.7.6=h0371630_2\ncudatoolkit=10.1.243=h6bb024c_0\n"}});
  REQUIRE(exported.has_value());
  CHECK(exported->spec.to_string() == "==10.1.*");
  CHECK(exported->source.to_string() == "requirements.txt:2:1");

  CHECK(
      cuda_of({{"environment.yml", "dependencies:\n  - pytorch-cuda=11.8\n"}})->spec.to_string() ==
      "==11.8.*");
  CHECK(cuda_of({{"environment.yml", "dependencies:\n  - conda-forge::cuda-version=12.1\n"}})
            ->spec.to_string() == "==12.1.*");
  CHECK(cuda_of({{"environment.yml", "dependencies:\n  - nvidia::cuda-toolkit=12.1.0\n"}})
            ->spec.to_string() == "==12.1.*");
  CHECK(cuda_of({{"environment.yml", "dependencies:\n  - cuda-runtime>=11.8,<12\n"}})
            ->spec.to_string() == "<12,>=11.8");
  // Several pins all hold.
  CHECK(cuda_of(
            {{"environment.yml", "dependencies:\n  - cudatoolkit>=11.0\n  - cuda-version=11.8\n"}})
            ->spec.to_string() == "==11.8.*,>=11.0");
  // An unpinned cudatoolkit says nothing of the version.
  CHECK_FALSE(cuda_of({{"environment.yml", "dependencies:\n  - cudatoolkit\n"}}).has_value());

  // Not conda's: a pip requirement of that name; a project that names none.
  CHECK_FALSE(cuda_of({{"requirements.txt", "cuda-toolkit==12.1\n"}}).has_value());
  CHECK_FALSE(cuda_of({{"environment.yml", "dependencies:\n  - python=3.10\n"}}).has_value());
}

TEST_CASE("a conda exact pin of Python is exact, a series a series", "[project]") {
  const auto exact = project::infer_python(
      scan_of({{"env.yml", "name: py38\ndependencies:\n  - python=3.8.5\n  - pip\n"}}));
  REQUIRE(exact.ok());
  CHECK((*exact)->spec.to_string() == "==3.8.5");
  const auto series =
      project::infer_python(scan_of({{"env.yml", "dependencies:\n  - python=3.7\n"}}));
  CHECK((*series)->spec.to_string() == "==3.7.*");
}
