// Manifests that parse: the values each key of envkit.yaml turns into.

#include "envkit/manifest/manifest.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <variant>
#include <vector>

#include "support/temp_dir.hpp"

namespace envkit::manifest {
namespace {

using specs::ComputeCapability;
using specs::Platform;
using specs::Version;

Manifest parsed(std::string_view text) {
  auto result = parse(text, "envkit.yaml");
  INFO((result ? std::string() : result.error().to_string()));
  REQUIRE(result.ok());
  return std::move(result).value();
}

Version version(std::string_view text) {
  return Version::parse(text).value();
}

std::vector<std::string> arch_strings(const SystemSection& system) {
  std::vector<std::string> out;
  for (const auto& capability : system.cuda_arch)
    out.push_back(capability.to_string());
  return out;
}

constexpr std::string_view kFullExample = R"yaml(
name: mask-rcnn
framework: tensorflow-gpu ==1.6.0
requires:
  cudnn: "7"
external:
  python: "3.6.9"
platforms: [linux-x86_64]
system:
  driver: ">=390.30"
  cuda-arch: ["6.1", "7.0"]
  glibc: ">=2.28"
smoke: { steps: 200 }
python-requirements: requirements.txt
)yaml";

TEST_CASE("the full example parses into its values", "[manifest]") {
  const Manifest manifest = parsed(kFullExample);

  CHECK(manifest.name == "mask-rcnn");
  REQUIRE(manifest.framework.has_value());
  CHECK(manifest.framework->name == "tensorflow-gpu");
  CHECK(manifest.framework->spec.to_string() == "==1.6.0");
  REQUIRE(manifest.requires_.size() == 1);
  CHECK(manifest.requires_.at("cudnn").to_string() == "==7.*");
  REQUIRE(manifest.external.size() == 1);
  const auto& python = manifest.external.at("python");
  REQUIRE(std::holds_alternative<Version>(python));
  CHECK(std::get<Version>(python).original() == "3.6.9");
  CHECK(manifest.platforms == std::vector<Platform>{Platform::linux_x86_64});
  REQUIRE(manifest.system.driver.has_value());
  CHECK(manifest.system.driver->to_string() == ">=390.30");
  CHECK(arch_strings(manifest.system) == std::vector<std::string>{"6.1", "7.0"});
  REQUIRE(manifest.system.glibc.has_value());
  CHECK(manifest.system.glibc->to_string() == ">=2.28");
  CHECK(manifest.smoke.steps == 200);
  CHECK(manifest.python_requirements == std::vector<std::string>{"requirements.txt"});
}

TEST_CASE("the framework string is a name and an optional specifier", "[manifest][framework]") {
  struct Case {
    std::string_view written;
    std::string_view name;
    std::string_view spec;
  };
  const auto [written, name, spec] = GENERATE(values<Case>({
      {"torch 2.1.*", "torch", "==2.1.*"},
      {"torch==2.1.0", "torch", "==2.1.0"},
      {"tensorflow >=2.10,<2.11", "tensorflow", "<2.11,>=2.10"},
      {"tensorflow>=2.10, <2.11", "tensorflow", "<2.11,>=2.10"},
      {"jax ~=0.4.20", "jax", "~=0.4.20"},
      {"tensorflow-gpu 1.6", "tensorflow-gpu", "==1.6.*"},
      {"'torch   2.1.0  '", "torch", "==2.1.0.*"},
  }));
  CAPTURE(written);
  const Manifest manifest = parsed("framework: " + std::string(written) + "\n");
  REQUIRE(manifest.framework.has_value());
  CHECK(manifest.framework->name == name);
  CHECK(manifest.framework->spec.to_string() == spec);
}

TEST_CASE("`pytorch` and other spellings of a framework name `torch`", "[manifest][framework]") {
  const auto written = GENERATE("pytorch 2.1.*", "PyTorch==2.1.*", "Torch 2.1.*");
  CAPTURE(written);
  const Manifest manifest = parsed("framework: " + std::string(written) + "\n");
  REQUIRE(manifest.framework.has_value());
  CHECK(manifest.framework->name == "torch");
  CHECK(manifest.framework->spec.to_string() == "==2.1.*");
}

TEST_CASE("a framework without a specifier accepts any version", "[manifest][framework]") {
  const Manifest manifest = parsed("framework: torch\n");
  REQUIRE(manifest.framework.has_value());
  CHECK(manifest.framework->name == "torch");
  CHECK(manifest.framework->spec.empty());
  CHECK(manifest.framework->spec.contains(version("1.0.0")));
  CHECK(manifest.framework->spec.contains(version("2.5.1")));
}

TEST_CASE("a C++ project lists only `requires:`", "[manifest][requires]") {
  const Manifest manifest = parsed(R"yaml(
requires:
  cuda: ">=12.1,<13"
  cudnn: "8.9"
)yaml");
  CHECK_FALSE(manifest.framework.has_value());
  REQUIRE(manifest.requires_.size() == 2);
  CHECK(manifest.requires_.at("cuda").to_string() == "<13,>=12.1");
  CHECK(manifest.requires_.at("cudnn").to_string() == "==8.9.*");
  CHECK(manifest.name.empty());
}

TEST_CASE("a bare version means that series, whether YAML reads it as a number or a string",
          "[manifest][requires]") {
  const Manifest manifest = parsed(R"yaml(
requires:
  cuda: 12.1
  cudnn: 7
  python: "3.10"
  zlib: '1.2.13'
)yaml");
  const auto& cuda = manifest.requires_.at("cuda");
  CHECK(cuda.to_string() == "==12.1.*");
  CHECK(cuda.contains(version("12.1")));
  CHECK(cuda.contains(version("12.1.105")));
  CHECK_FALSE(cuda.contains(version("12.2")));
  CHECK_FALSE(cuda.contains(version("12.10")));

  const auto& cudnn = manifest.requires_.at("cudnn");
  CHECK(cudnn.to_string() == "==7.*");
  CHECK(cudnn.contains(version("7.6.5.32")));
  CHECK_FALSE(cudnn.contains(version("8.0.5")));

  CHECK(manifest.requires_.at("python").to_string() == "==3.10.*");
  CHECK(manifest.requires_.at("zlib").to_string() == "==1.2.13.*");
}

TEST_CASE("a number is taken as written, not as YAML's float", "[manifest][requires]") {
  // As a float, 12.10 would be 12.1 and 3.10 would be 3.1.
  const Manifest manifest = parsed("requires:\n  cuda: 12.10\n  python: 3.10\n");
  CHECK(manifest.requires_.at("cuda").to_string() == "==12.10.*");
  CHECK(manifest.requires_.at("python").contains(version("3.10.12")));
  CHECK_FALSE(manifest.requires_.at("python").contains(version("3.1.0")));
}

TEST_CASE("`requires:` keys are package names in any spelling", "[manifest][requires]") {
  const Manifest manifest =
      parsed("requires:\n  PyTorch: 2.1\n  CUDNN: 8\n  Tensorflow_GPU: 1.6\n");
  CHECK(manifest.requires_.at("torch").to_string() == "==2.1.*");
  CHECK(manifest.requires_.at("cudnn").to_string() == "==8.*");
  CHECK(manifest.requires_.at("tensorflow-gpu").to_string() == "==1.6.*");
}

TEST_CASE("a package with no specifier under `requires:` accepts any version",
          "[manifest][requires]") {
  const Manifest manifest = parsed("requires:\n  cudnn:\n  cuda: 12\n");
  REQUIRE(manifest.requires_.count("cudnn") == 1);
  CHECK(manifest.requires_.at("cudnn").empty());
  CHECK(manifest.requires_.at("cuda").to_string() == "==12.*");
}

TEST_CASE("a section with every entry commented out is empty", "[manifest]") {
  const Manifest manifest = parsed(R"yaml(
framework: torch
requires:
  # cudnn: 8
external:
system:
smoke:
)yaml");
  CHECK(manifest.requires_.empty());
  CHECK(manifest.external.empty());
  CHECK_FALSE(manifest.system.driver.has_value());
  CHECK(manifest.system.cuda_arch.empty());
  CHECK(manifest.smoke.steps == 200);
}

TEST_CASE("platforms default to the host's", "[manifest][platforms]") {
  const Manifest manifest = parsed("framework: torch\n");
  CHECK(manifest.platforms == std::vector<Platform>{specs::host_platform()});
}

TEST_CASE("platforms: one string, or a list kept in order without repeats",
          "[manifest][platforms]") {
  CHECK(parsed("platforms: linux-aarch64\n").platforms ==
        std::vector<Platform>{Platform::linux_aarch64});
  CHECK(parsed("platforms: [windows-x86_64, linux-x86_64, windows-x86_64]\n").platforms ==
        std::vector<Platform>{Platform::windows_x86_64, Platform::linux_x86_64});
  CHECK(parsed("platforms:\n  - linux-x86_64\n  - linux-aarch64\n").platforms ==
        std::vector<Platform>{Platform::linux_x86_64, Platform::linux_aarch64});
}

TEST_CASE("external: a version, `system`, or a path", "[manifest][external]") {
  const Manifest manifest = parsed(R"yaml(
external:
  python: 3.10
  cuda: system
  zlib: /usr/lib/x86_64-linux-gnu/libz.so.1
  cudnn: ./vendor/cudnn
)yaml");
  const auto& python = manifest.external.at("python");
  REQUIRE(std::holds_alternative<Version>(python));
  CHECK(std::get<Version>(python) == version("3.10"));
  CHECK(std::holds_alternative<ExternalSystem>(manifest.external.at("cuda")));
  const auto& zlib = manifest.external.at("zlib");
  REQUIRE(std::holds_alternative<ExternalPath>(zlib));
  CHECK(std::get<ExternalPath>(zlib).path == "/usr/lib/x86_64-linux-gnu/libz.so.1");
  const auto& cudnn = manifest.external.at("cudnn");
  REQUIRE(std::holds_alternative<ExternalPath>(cudnn));
  CHECK(std::get<ExternalPath>(cudnn).path == "./vendor/cudnn");
}

TEST_CASE("system: a fleet's bare driver version, and capabilities as a set",
          "[manifest][system]") {
  const Manifest manifest = parsed(R"yaml(
system:
  driver: 550.54.15
  cuda-arch: [9.0, sm_86, "8.0", 8.6]
)yaml");
  REQUIRE(manifest.system.driver.has_value());
  CHECK(manifest.system.driver->contains(version("550.54.15")));
  CHECK_FALSE(manifest.system.driver->contains(version("550.54.14")));
  CHECK_FALSE(manifest.system.driver->contains(version("550.90.07")));
  CHECK(arch_strings(manifest.system) == std::vector<std::string>{"8.0", "8.6", "9.0"});
  CHECK_FALSE(manifest.system.glibc.has_value());
}

TEST_CASE("system: one compute capability as a scalar", "[manifest][system]") {
  const Manifest manifest = parsed("system:\n  cuda-arch: 8.0\n");
  CHECK(manifest.system.cuda_arch == std::vector<ComputeCapability>{{8, 0}});
}

TEST_CASE("smoke steps and python requirements", "[manifest]") {
  const Manifest manifest = parsed(R"yaml(
smoke:
  steps: 1000
python-requirements:
  - requirements.txt
  - requirements-dev.txt
  - requirements.txt
)yaml");
  CHECK(manifest.smoke.steps == 1000);
  CHECK(manifest.python_requirements ==
        std::vector<std::string>{"requirements.txt", "requirements-dev.txt"});
  CHECK(parsed("framework: torch\n").smoke.steps == 200);
  CHECK(parsed("framework: torch\n").python_requirements.empty());
}

TEST_CASE("comments, `---` and a final `...` are plain YAML", "[manifest]") {
  const Manifest manifest = parsed(R"yaml(# envkit manifest
---
framework: torch 2.1.*  # the framework
name: "demo"
...
)yaml");
  CHECK(manifest.name == "demo");
  CHECK(manifest.framework->name == "torch");
}

TEST_CASE("load() names the project after its folder unless the manifest does",
          "[manifest][load]") {
  const test::TempDir dir;
  const auto unnamed = dir.write("detectron/envkit.yaml", "framework: torch\n");
  auto manifest = load(unnamed);
  REQUIRE(manifest.ok());
  CHECK(manifest->name == "detectron");

  const auto named = dir.write("other/envkit.yaml", "name: mask-rcnn\nframework: torch\n");
  manifest = load(named);
  REQUIRE(manifest.ok());
  CHECK(manifest->name == "mask-rcnn");
}

TEST_CASE("load() errors name the file as given", "[manifest][load]") {
  const test::TempDir dir;
  const auto path = dir.write("proj/envkit.yaml", "framework: torch\nframwork: torch\n");
  const auto manifest = load(path);
  REQUIRE_FALSE(manifest.ok());
  CHECK(manifest.error().headline() == path.string() + ":2:1: unknown key `framwork`");
  CHECK(manifest.error().exit_code() == 2);
}

TEST_CASE("load() of a missing file says it cannot read it", "[manifest][load]") {
  const test::TempDir dir;
  const auto path = dir.path() / "envkit.yaml";
  const auto manifest = load(path);
  REQUIRE_FALSE(manifest.ok());
  CHECK(manifest.error().headline() == "cannot read " + path.string());
  CHECK(manifest.error().causes() == std::vector<std::string>{"No such file or directory"});
}

TEST_CASE("only-binary: true asks for wheels only, and changes the content hash", "[manifest]") {
  CHECK(parsed("framework: torch\nonly-binary: true\n").only_binary);
  CHECK_FALSE(parsed("framework: torch\nonly-binary: false\n").only_binary);
  CHECK_FALSE(parsed("framework: torch\n").only_binary);
  CHECK(content_hash(parsed("framework: torch\nonly-binary: false\n")) ==
        envkit::manifest::content_hash(parsed("framework: torch\n")));
  CHECK(content_hash(parsed("framework: torch\nonly-binary: true\n")) !=
        envkit::manifest::content_hash(parsed("framework: torch\n")));
}

}  // namespace
}  // namespace envkit::manifest
