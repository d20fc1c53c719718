// `envkit init` as a user runs it: the real binary on copies of the example projects.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "envkit/manifest/manifest.hpp"
#include "envkit/specs/platform.hpp"
#include "envkit/sys/fs.hpp"
#include "support/envkit_runner.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using envkit::test::EnvkitRun;
using envkit::test::run_envkit;
using envkit::test::TempDir;

// A machine without an NVIDIA driver, whatever machine runs the tests.
const std::map<std::string, std::optional<std::string>> kNoDriver = {
    {"ENVKIT_OVERRIDE_DRIVER", "none"}};

// A machine with no driver facts but those a test adds: no driver files, no libcuda,
// no nvidia-smi, whatever machine runs the tests (paths in `dir` that do not exist).
std::map<std::string, std::optional<std::string>> bare_machine(const TempDir& dir) {
  return {{"ENVKIT_SYS_DRIVER_VERSION", (dir.path() / "no-sys-file").string()},
          {"ENVKIT_PROC_DRIVER_VERSION", (dir.path() / "no-such-file").string()},
          {"ENVKIT_LIBCUDA", (dir.path() / "no-libcuda.so.1").string()},
          {"ENVKIT_NVIDIA_SMI", (dir.path() / "no-nvidia-smi").string()}};
}

std::string read_init_text(const fs::path& path) {
  return envkit::sys::read_file(path).value();
}

// A copy of examples/<name> without its committed envkit.yaml, as a user's project would be.
fs::path copy_example(const TempDir& dir, const std::string& name) {
  const fs::path copy = dir.path() / name;
  fs::copy(envkit::test::source_dir() / "examples" / name, copy, fs::copy_options::recursive);
  fs::remove(copy / "envkit.yaml");
  return copy;
}

// The committed envkit.yaml; its `platforms:` names the machine that wrote it.
std::string golden(const std::string& name) {
  std::string text = read_init_text(envkit::test::source_dir() / "examples" / name / "envkit.yaml");
  const std::string written_on = "  - linux-x86_64\n";
  const auto at = text.find(written_on);
  REQUIRE(at != std::string::npos);
  return text.replace(
      at, written_on.size(),
      fmt::format("  - {}\n", envkit::specs::to_string(envkit::specs::host_platform())));
}

envkit::sys::ProcessOutput init(const fs::path& project, std::vector<std::string> flags = {},
                                std::map<std::string, std::optional<std::string>> env = kNoDriver) {
  std::vector<std::string> args{"init"};
  args.insert(args.end(), flags.begin(), flags.end());
  return run_envkit({.args = args, .cwd = project, .env = std::move(env), .stdin_data = {}});
}

}  // namespace

TEST_CASE("init writes each example's committed envkit.yaml, byte for byte", "[init]") {
  const auto [name, message] = GENERATE(table<std::string, std::string>({
      {"mask-rcnn-tf1",
       "wrote envkit.yaml: framework `tensorflow-gpu ==1.6.0`, inferred from requirements.txt:7 "
       "(`tensorflow-gpu==1.6.0`)\n"},
      {"tf2-mnist",
       "wrote envkit.yaml: framework `tensorflow ==2.10.0`, inferred from requirements.txt:1 "
       "(`tensorflow==2.10.0`)\n"},
      {"torch-cifar",
       "wrote envkit.yaml: framework `torch <2.2,>=2.1`, inferred from pyproject.toml:8 "
       "(`torch>=2.1,<2.2`)\n"},
  }));
  CAPTURE(name);
  TempDir dir;
  const auto project = copy_example(dir, name);
  const auto r = init(project);
  CHECK(r.exit_code == 0);
  CHECK(r.err == message);
  CHECK(r.out.empty());
  CHECK(read_init_text(project / "envkit.yaml") == golden(name));
}

TEST_CASE("what init writes is a manifest envkit reads", "[init]") {
  TempDir dir;
  const auto project = copy_example(dir, "torch-cifar");
  REQUIRE(init(project).exit_code == 0);
  const auto manifest = envkit::manifest::load(project / "envkit.yaml");
  REQUIRE(manifest.ok());
  CHECK(manifest->name == "torch-cifar");
  REQUIRE(manifest->framework.has_value());
  CHECK(manifest->framework->name == "torch");
  CHECK(manifest->framework->spec.to_string() == "<2.2,>=2.1");
  REQUIRE(manifest->requires_.count("python") == 1);
  CHECK(manifest->requires_.at("python").to_string() == "<3.12,>=3.8");
  CHECK(manifest->platforms == std::vector{envkit::specs::host_platform()});
  // numpy, beside torch in pyproject.toml: the file is the project's other requirements.
  CHECK(manifest->python_requirements == std::vector<std::string>{"pyproject.toml"});

  const auto tf1 = copy_example(dir, "mask-rcnn-tf1");
  REQUIRE(init(tf1, {"--python", "3.6", "--cuda", "9.0"}).exit_code == 0);
  const auto old = envkit::manifest::load(tf1 / "envkit.yaml");
  REQUIRE(old.ok());
  CHECK(old->framework->name == "tensorflow-gpu");
  CHECK(old->framework->spec.to_string() == "==1.6.0");
  CHECK(old->requires_.at("python").to_string() == "==3.6.*");
  CHECK(old->requires_.at("cuda").to_string() == "==9.0.*");
  CHECK(old->python_requirements == std::vector<std::string>{"requirements.txt"});
}

TEST_CASE("init -C DIR writes into DIR", "[init]") {
  TempDir dir;
  const auto project = copy_example(dir, "tf2-mnist");
  const auto r = run_envkit({.args = {"-C", project.string(), "init"},
                             .cwd = dir.path(),
                             .env = kNoDriver,
                             .stdin_data = {}});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::StartsWith("wrote " + (project / "envkit.yaml").string() + ": "));
  CHECK(read_init_text(project / "envkit.yaml") == golden("tf2-mnist"));
}

TEST_CASE("init does not overwrite envkit.yaml without --force", "[init]") {
  TempDir dir;
  const auto project = copy_example(dir, "tf2-mnist");
  dir.write("tf2-mnist/envkit.yaml", "framework: torch\n");

  const auto refused = init(project);
  CHECK(refused.exit_code == 1);
  CHECK(refused.err == "error: envkit.yaml already exists\nhint: pass `--force` to overwrite it\n");
  CHECK(read_init_text(project / "envkit.yaml") == "framework: torch\n");

  const auto forced = init(project, {"--force"});
  CHECK(forced.exit_code == 0);
  CHECK(read_init_text(project / "envkit.yaml") == golden("tf2-mnist"));
}

TEST_CASE("init flags --framework, --python and --cuda win over the project", "[init]") {
  TempDir dir;
  // Pins that disagree: without --framework this is an error.
  dir.write("p/requirements.txt", "torch==2.1.0\nnumpy\n");
  dir.write("p/environment.yml", "dependencies:\n  - pytorch=2.0\n  - python=3.9\n");
  const auto r = init(dir.path() / "p", {"--framework", "PyTorch 2.1.*", "--python", "3.10",
                                         "--cuda", ">=12.1, <12.5"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.err == "wrote envkit.yaml: framework `torch ==2.1.*`, given with --framework\n");
  const std::string text = read_init_text(dir.path() / "p" / "envkit.yaml");
  CHECK_THAT(text, Catch::StartsWith("# envkit.yaml for p, written by `envkit init`. The keys: "
                                     "docs/manifest.md.\n"
                                     "# framework: given with --framework\n"
                                     "# requires.cuda: given with --cuda\n"
                                     "# requires.python: given with --python\n"));
  CHECK_THAT(text, Catch::Contains("\nframework: torch ==2.1.*\n"
                                   "requires:\n"
                                   "  cuda: \"<12.5,>=12.1\"\n"
                                   "  python: \"==3.10.*\"\n"));
  CHECK_THAT(text, Catch::Contains("\npython-requirements:\n  - requirements.txt\n"));
}

TEST_CASE("a bad --framework or --cuda value is a usage error", "[init]") {
  TempDir dir;
  const auto typo = init(dir.path(), {"--framework", "torh 2.1"});
  CHECK(typo.exit_code == 2);
  CHECK_THAT(typo.err, Catch::StartsWith("error: invalid `--framework` value `torh 2.1`\n"
                                         "  caused by: unknown framework `torh`\n"
                                         "hint: did you mean `torch`?\n"));

  const auto cuda = init(dir.path(), {"--framework", "jax", "--cuda", ">=twelve"});
  CHECK(cuda.exit_code == 2);
  CHECK_THAT(cuda.err,
             Catch::StartsWith("error: invalid `--cuda` value `>=twelve`\n  caused by: "));
  CHECK_FALSE(fs::exists(dir.path() / "envkit.yaml"));
}

TEST_CASE("driver and GPU overrides appear as comments", "[init]") {
  TempDir dir;
  const auto project = copy_example(dir, "torch-cifar");
  const auto r =
      init(project, {},
           {{"ENVKIT_OVERRIDE_DRIVER", "550.54.15"}, {"ENVKIT_OVERRIDE_CUDA_ARCH", "8.0,9.0"}});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(read_init_text(project / "envkit.yaml"),
             Catch::Contains("# This machine when `envkit init` ran (`envkit lock` looks again, "
                             "or reads `system:`):\n"
                             "#   NVIDIA driver 550.54.15 (ENVKIT_OVERRIDE_DRIVER)\n"
                             "#   GPU 0: compute capability 8.0 (ENVKIT_OVERRIDE_CUDA_ARCH)\n"
                             "#   GPU 1: compute capability 9.0 (ENVKIT_OVERRIDE_CUDA_ARCH)\n\n"));
}

TEST_CASE("a malformed override is an input error", "[init]") {
  TempDir dir;
  const auto project = copy_example(dir, "torch-cifar");
  const auto r = init(project, {}, {{"ENVKIT_OVERRIDE_DRIVER", "latest"}});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::StartsWith(
                        "error: `ENVKIT_OVERRIDE_DRIVER` is not a driver version: `latest`\n"));
  CHECK_FALSE(fs::exists(project / "envkit.yaml"));
}

TEST_CASE("the driver comes from the kernel module's version file", "[init]") {
  TempDir dir;
  const auto project = copy_example(dir, "tf2-mnist");
  const auto version = dir.write(
      "proc-version",
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.129.03  Release Build  "
      "(dvs-builder@U16-T02-35-3)  Thu Oct 19 18:42:12 UTC 2023\n"
      "GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)\n");
  auto env = bare_machine(dir);
  env["ENVKIT_PROC_DRIVER_VERSION"] = version.string();
  const auto r = init(project, {}, env);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(read_init_text(project / "envkit.yaml"),
             Catch::Contains(fmt::format("#   NVIDIA driver 535.129.03 ({})\n", version.string())));
}

TEST_CASE("the GPUs come from nvidia-smi", "[init]") {
  TempDir dir;
  const auto project = copy_example(dir, "tf2-mnist");
  // A stand-in nvidia-smi on PATH that answers the query as a two-GPU machine does.
  const auto smi = dir.write("bin/nvidia-smi",
                             "#!/bin/sh\n"
                             "printf '535.129.03, 8.0, NVIDIA A100-SXM4-40GB\\n"
                             "535.129.03, 8.6, NVIDIA RTX A6000\\n'\n");
  fs::permissions(smi, fs::perms::owner_all);
  auto env = bare_machine(dir);
  env["ENVKIT_NVIDIA_SMI"] = std::nullopt;  // nvidia-smi from PATH, as on a user's machine
  env["PATH"] = (dir.path() / "bin").string() + ":/usr/bin:/bin";
  const auto r = init(project, {}, env);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(
      read_init_text(project / "envkit.yaml"),
      Catch::Contains("#   NVIDIA driver 535.129.03 (nvidia-smi)\n"
                      "#   GPU 0: NVIDIA A100-SXM4-40GB, compute capability 8.0 (nvidia-smi)\n"
                      "#   GPU 1: NVIDIA RTX A6000, compute capability 8.6 (nvidia-smi)\n"));
}

TEST_CASE("without driver file or nvidia-smi, init says where it looked", "[init]") {
  TempDir dir;
  const auto project = copy_example(dir, "tf2-mnist");
  const fs::path missing_sys = dir.path() / "no-sys-file";
  const fs::path missing = dir.path() / "no-such-file";
  auto env = bare_machine(dir);
  env["ENVKIT_NVIDIA_SMI"] = std::nullopt;  // looked for on PATH, which has none
  env["PATH"] = (dir.path() / "empty").string();
  const auto r = init(project, {}, env);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(
      read_init_text(project / "envkit.yaml"),
      Catch::Contains(fmt::format("#   no NVIDIA driver found (checked {}, {}, nvidia-smi)\n\n",
                                  missing_sys.string(), missing.string())));
}

TEST_CASE("init --json describes what it wrote", "[init]") {
  TempDir dir;
  const auto project = copy_example(dir, "mask-rcnn-tf1");
  const auto r =
      init(project, {"--json", "--cuda", "9.0"},
           {{"ENVKIT_OVERRIDE_DRIVER", "450.80.02"}, {"ENVKIT_OVERRIDE_CUDA_ARCH", "7.0"}});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::StartsWith("wrote envkit.yaml: "));
  const auto written = nlohmann::json::parse(r.out);
  CHECK(written == nlohmann::json::parse(R"({
    "path": "envkit.yaml",
    "framework": {"name": "tensorflow-gpu", "spec": "==1.6.0", "source": "requirements.txt:7"},
    "requires": {"cuda": "==9.0.*"},
    "python_requirements": ["requirements.txt"],
    "host": {
      "driver": "450.80.02",
      "driver_source": "ENVKIT_OVERRIDE_DRIVER",
      "gpus": [{"name": null, "compute_capability": "7.0"}],
      "gpus_source": "ENVKIT_OVERRIDE_CUDA_ARCH"
    }
  })"));

  SECTION("and -q leaves stderr empty") {
    const auto quiet = init(project, {"--json", "-q", "--force"});
    CHECK(quiet.exit_code == 0);
    CHECK(quiet.err.empty());
    CHECK(nlohmann::json::parse(quiet.out)["host"]["driver"].is_null());
  }
}

TEST_CASE("nothing to infer is an input error with a hint", "[init]") {
  TempDir dir;
  dir.write("README.md", "# nothing pinned here\n");
  const auto r = init(dir.path());
  CHECK(r.exit_code == 2);
  CHECK(r.err ==
        "error: cannot infer the framework: the project has no requirements*.txt, "
        "pyproject.toml, setup.py, setup.cfg or conda environment file\n"
        "hint: name it with `--framework`, e.g. `envkit init --framework \"torch 2.1.*\"`\n");
  CHECK_FALSE(fs::exists(dir.path() / "envkit.yaml"));

  dir.write("requirements.txt", "numpy\nscipy\n");
  const auto no_framework = init(dir.path(), {"--json"});
  CHECK(no_framework.exit_code == 2);
  CHECK(nlohmann::json::parse(no_framework.out)["error"] ==
        "cannot infer the framework: no `torch`, `tensorflow`, `tensorflow-gpu`, `jax` "
        "requirement in requirements.txt");
}

TEST_CASE("conflicting pins are an input error naming each place", "[init]") {
  TempDir dir;
  dir.write("requirements.txt", "torch==2.1.0\n");
  dir.write("pyproject.toml", "[project]\nname = \"x\"\ndependencies = [\"jax==0.4.23\"]\n");
  const auto r = init(dir.path());
  CHECK(r.exit_code == 2);
  CHECK(r.err ==
        "error: the project names more than one framework\n"
        "  caused by: `jax==0.4.23` at pyproject.toml:3\n"
        "  caused by: `torch==2.1.0` at requirements.txt:1\n"
        "hint: name it with `--framework`, e.g. `envkit init --framework \"torch 2.1.*\"`\n");
}

TEST_CASE("a malformed project file is an input error at file:line:column", "[init]") {
  TempDir dir;
  dir.write("pyproject.toml", "[tool.poetry.dependencies]\ntorch = ^2.1\n");
  const auto r = init(dir.path());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::StartsWith("error: pyproject.toml:2:9: malformed TOML: "));

  // Given the framework, init needs no pin from the file: it is passed over.
  const auto given = init(dir.path(), {"--framework", "torch"});
  CHECK(given.exit_code == 0);
  CHECK_THAT(given.err, Catch::StartsWith("warning: pyproject.toml:2:9: malformed TOML: "));
  CHECK_THAT(given.err, Catch::Contains("; pyproject.toml is skipped\n"));
}

TEST_CASE("init takes the framework from setup.py without running it", "[init]") {
  TempDir dir;
  dir.write("p/setup.py",
            "import sys\n"
            "from setuptools import find_packages, setup\n"
            "\n"
            "sys.exit('envkit must not run setup.py')\n"
            "setup(\n"
            "    name='p',\n"
            "    packages=find_packages(),\n"
            "    python_requires='>=3.9',\n"
            "    install_requires=[\n"
            "        'torch>=2.5.1',\n"
            "        'numpy',\n"
            "    ],\n"
            ")\n");
  const auto r = init(dir.path() / "p");
  REQUIRE(r.exit_code == 0);
  CHECK(r.err ==
        "wrote envkit.yaml: framework `torch >=2.5.1`, inferred from setup.py:10 "
        "(`torch>=2.5.1`)\n");
  const auto manifest = envkit::manifest::load(dir.path() / "p" / "envkit.yaml");
  REQUIRE(manifest.ok());
  CHECK(manifest->framework->spec.to_string() == ">=2.5.1");
  CHECK(manifest->requires_.at("python").to_string() == ">=3.9");
  CHECK(manifest->python_requirements == std::vector<std::string>{"setup.py"});
}

TEST_CASE("init reads a conda export committed as requirements.txt", "[init]") {
  TempDir dir;
  dir.write("requirements.txt",
            "# This file may be used to create an environment using:\n"
            "# $ conda create --name <env> --file <this file>\n"
            "# platform: linux-64\n"
            "_libgcc_mutex=0.1=main\n"
            "cudatoolkit=10.1.243=h6bb024c_0\n"
            "python=3.7.6=h0371630_2\n"
            "tensorflow-gpu=1.15.0=h0d30ee6_0\n");
  const auto r = init(dir.path());
  REQUIRE(r.exit_code == 0);
  CHECK(r.err ==
        "cuda ==10.1.* from requirements.txt:5 (`cudatoolkit=10.1.243=h6bb024c_0`)\n"
        "wrote envkit.yaml: framework `tensorflow-gpu ==1.15.0`, inferred from "
        "requirements.txt:7 (`tensorflow-gpu=1.15.0=h0d30ee6_0`)\n");
  const std::string text = read_init_text(dir.path() / "envkit.yaml");
  CHECK_THAT(text, Catch::Contains("# requires.cuda: inferred from requirements.txt:5 "
                                   "(`cudatoolkit=10.1.243=h6bb024c_0`)\n"));
  CHECK_THAT(text, Catch::Contains("\nframework: tensorflow-gpu ==1.15.0\n"
                                   "requires:\n"
                                   "  cuda: \"==10.1.*\"\n"
                                   "  python: \"==3.7.6\"\n"));
  // conda installs every package of the file: nothing for pip.
  CHECK_THAT(text, !Catch::Contains("python-requirements:"));
}

TEST_CASE("init reads any top-level conda environment, e.g. env.yml", "[init]") {
  TempDir dir;
  dir.write("env.yml",
            "name: detectron\n"
            "channels:\n"
            "  - pytorch\n"
            "  - defaults\n"
            "dependencies:\n"
            "  - python=3.8.5\n"
            "  - cudatoolkit=10.1\n"
            "  - pytorch=1.7.1\n"
            "  - pip\n"
            "  - pip:\n"
            "    - opencv-python\n");
  dir.write("docker-compose.yml", "services:\n  train:\n    build: .\n");
  dir.write("mkdocs.yml", "site_name: detectron\n");
  const auto r = init(dir.path());
  REQUIRE(r.exit_code == 0);
  CHECK(r.err ==
        "cuda ==10.1.* from env.yml:7 (`cudatoolkit=10.1`)\n"
        "wrote envkit.yaml: framework `torch ==1.7.1`, inferred from env.yml:8 "
        "(`pytorch=1.7.1`)\n");
  const auto manifest = envkit::manifest::load(dir.path() / "envkit.yaml");
  REQUIRE(manifest.ok());
  CHECK(manifest->requires_.at("python").to_string() == "==3.8.5");
  CHECK(manifest->requires_.at("cuda").to_string() == "==10.1.*");
  CHECK(manifest->python_requirements == std::vector<std::string>{"env.yml"});

  SECTION("--cuda wins over the project's cudatoolkit, and says nothing") {
    const auto given = init(dir.path(), {"--force", "--cuda", "11.0"});
    REQUIRE(given.exit_code == 0);
    CHECK_THAT(given.err, Catch::StartsWith("wrote envkit.yaml: "));
    CHECK_THAT(read_init_text(dir.path() / "envkit.yaml"),
               Catch::Contains("  cuda: \"==11.0.*\"\n"));
  }
}

TEST_CASE("with --framework, a malformed project file is skipped with a warning", "[init]") {
  TempDir dir;
  dir.write("requirements.txt", "numpy\ntorch 2.1\n");
  dir.write("environment.yml", "dependencies:\n  - python=3.10\n");

  const auto strict = init(dir.path());
  CHECK(strict.exit_code == 2);
  CHECK(strict.err ==
        "error: requirements.txt:2:7: expected a version specifier such as `>=2.1` in "
        "requirement `torch 2.1`\n");
  CHECK_FALSE(fs::exists(dir.path() / "envkit.yaml"));

  const auto given = init(dir.path(), {"--framework", "torch 2.1"});
  REQUIRE(given.exit_code == 0);
  CHECK(given.err ==
        "warning: requirements.txt:2:7: expected a version specifier such as `>=2.1` in "
        "requirement `torch 2.1`; requirements.txt is skipped\n"
        "wrote envkit.yaml: framework `torch ==2.1.*`, given with --framework\n");
  const auto manifest = envkit::manifest::load(dir.path() / "envkit.yaml");
  REQUIRE(manifest.ok());
  // The other files are still read.
  CHECK(manifest->requires_.at("python").to_string() == "==3.10.*");
  CHECK(manifest->python_requirements.empty());
}

TEST_CASE("a setup.py install_requires that is not a literal list is a warning", "[init]") {
  TempDir dir;
  dir.write("setup.py",
            "from setuptools import setup\n"
            "\n"
            "def requirements():\n"
            "    with open('requirements.txt') as f:\n"
            "        return f.read().splitlines()\n"
            "\n"
            "setup(name='p', install_requires=requirements())\n");
  dir.write("requirements.txt", "jax[cuda12]==0.4.23\n");
  const auto r = init(dir.path());
  REQUIRE(r.exit_code == 0);
  CHECK(r.err ==
        "warning: setup.py:7:34: `install_requires` is not a literal list: envkit reads "
        "setup.py without running it, so the value is not read\n"
        "wrote envkit.yaml: framework `jax ==0.4.23`, inferred from requirements.txt:1 "
        "(`jax[cuda12]==0.4.23`)\n");
}
