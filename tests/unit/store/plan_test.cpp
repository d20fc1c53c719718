#include "envkit/store/plan.hpp"

#include <catch2/catch.hpp>

namespace envkit::store {
namespace {

specs::Artifact artifact(const std::string& component, specs::ArtifactKind kind,
                         const std::string& sha) {
  specs::Artifact a;
  a.component = component;
  a.kind = kind;
  a.url = "https://example.invalid/" + component + "/" + sha;
  a.sha256 = std::string(63, '0') + sha;
  a.format = kind == specs::ArtifactKind::wheel ? "whl" : "tar.xz";
  a.layout = kind == specs::ArtifactKind::wheel ? specs::Layout::nvidia_wheel
                                                : specs::Layout::nvidia_redist;
  return a;
}

lock::LockedPackage package(const std::string& name, const std::string& version,
                            std::vector<specs::Artifact> artifacts) {
  return {.name = name,
          .version = specs::Version::parse(version).value(),
          .build = "",
          .external = std::nullopt,
          .requires_ = {},
          .artifacts = std::move(artifacts)};
}

using Kind = specs::ArtifactKind;

const lock::PlatformLock kCudaBothPackagings{
    .platform = specs::Platform::linux_x86_64,
    .packages = {package(
        "cuda", "12.4.1",
        {artifact("cuda_cudart", Kind::archive, "1"), artifact("cuda_cudart", Kind::wheel, "2"),
         artifact("cuda_nvcc", Kind::archive, "3"), artifact("cuda_nvcc", Kind::wheel, "4")})}};

TEST_CASE("one packaging for all of a package's components, the other as fallback",
          "[store][plan]") {
  auto plan = plan_install(kCudaBothPackagings, std::nullopt, Packaging::archive);
  REQUIRE(plan);
  REQUIRE(plan->packages.size() == 1);
  const auto& cuda = plan->packages[0];
  CHECK(cuda.packaging == Packaging::archive);
  REQUIRE(cuda.artifacts.size() == 2);
  CHECK(cuda.artifacts[0].kind == Kind::archive);
  CHECK(cuda.artifacts[1].kind == Kind::archive);
  REQUIRE(cuda.fallback);
  CHECK(cuda.fallback->size() == 2);
  CHECK_FALSE(cuda.unchanged);

  auto wheels = plan_install(kCudaBothPackagings, std::nullopt, Packaging::wheel);
  REQUIRE(wheels);
  CHECK(wheels->packages[0].packaging == Packaging::wheel);
}

TEST_CASE("a packaging that lacks a component is no fallback", "[store][plan]") {
  const lock::PlatformLock locked{
      .platform = specs::Platform::linux_x86_64,
      .packages = {package(
          "cuda", "12.4.1",
          {artifact("cuda_cudart", Kind::archive, "1"), artifact("cuda_cudart", Kind::wheel, "2"),
           artifact("cuda_nvcc", Kind::archive, "3")})}};
  auto plan = plan_install(locked, std::nullopt, Packaging::wheel);
  REQUIRE(plan);
  // The wheels cannot make the whole package, the archives can.
  CHECK(plan->packages[0].packaging == Packaging::archive);
  CHECK_FALSE(plan->packages[0].fallback);
}

TEST_CASE("what is installed from the same artifacts is unchanged, the rest is planned",
          "[store][plan]") {
  PrefixState installed{.generation = 3};
  installed.packages.push_back({.name = "cuda",
                                .version = "12.4.1",
                                .packaging = "wheel",
                                .artifacts = {{.sha256 = std::string(63, '0') + "2"},
                                              {.sha256 = std::string(63, '0') + "4"}}});
  installed.packages.push_back({.name = "cudnn", .version = "8.9.7.29", .packaging = "archive"});
  auto plan = plan_install(kCudaBothPackagings, installed, Packaging::archive);
  REQUIRE(plan);
  // The prefix keeps the wheels it has rather than switching to archives.
  CHECK(plan->packages[0].packaging == Packaging::wheel);
  CHECK(plan->packages[0].unchanged);
  CHECK(plan->removed == std::vector<std::string>{"cudnn"});
  CHECK_FALSE(plan->nothing_to_do());

  installed.packages.pop_back();
  auto same = plan_install(kCudaBothPackagings, installed, Packaging::archive);
  REQUIRE(same);
  CHECK(same->nothing_to_do());
}

TEST_CASE("a new artifact for the same version is a change", "[store][plan]") {
  PrefixState installed{.generation = 1};
  installed.packages.push_back({.name = "cuda",
                                .version = "12.4.1",
                                .packaging = "archive",
                                .artifacts = {{.sha256 = std::string(63, '0') + "1"},
                                              {.sha256 = std::string(63, '0') + "9"}}});
  auto plan = plan_install(kCudaBothPackagings, installed, Packaging::archive);
  REQUIRE(plan);
  CHECK_FALSE(plan->packages[0].unchanged);
}

TEST_CASE("a machine's Python becomes a venv and Python packages are left out", "[store][plan]") {
  auto external = package("python", "3.11.2", {});
  external.external = "system";
  const lock::PlatformLock locked{.platform = specs::Platform::linux_x86_64,
                                  .packages = {external, package("torch", "2.4.1", {})}};
  auto plan = plan_install(locked, std::nullopt, Packaging::archive);
  REQUIRE(plan);
  // `external: {python: system}`: the prefix is made a venv of the machine's Python.
  REQUIRE(plan->packages.size() == 1);
  CHECK(plan->packages[0].name == "python");
  CHECK(plan->packages[0].packaging == Packaging::venv);
  REQUIRE(plan->skipped.size() == 1);
  CHECK_THAT(plan->skipped[0], Catch::Contains("torch 2.4.1 is a Python package"));
}

TEST_CASE("a runfile is planned as the runfile packaging with its patches", "[store][plan]") {
  specs::Artifact runfile = artifact("cuda", Kind::runfile, "6");
  runfile.format = "run";
  runfile.layout = specs::Layout::cuda_runfile_nested;
  runfile.components = {"cuda_cudart", "libcublas"};
  runfile.patches = {
      {.url = "https://example.invalid/patch/1", .sha256 = std::string(63, '0') + "7"}};
  const lock::PlatformLock locked{.platform = specs::Platform::linux_x86_64,
                                  .packages = {package("cuda", "9.0.176", {runfile})}};
  auto plan = plan_install(locked, std::nullopt, Packaging::wheel);
  REQUIRE(plan);
  REQUIRE(plan->packages.size() == 1);
  CHECK(plan->packages[0].packaging == Packaging::runfile);
  CHECK(to_string(plan->packages[0].packaging) == "runfile");
  CHECK(plan->packages[0].artifacts == std::vector<specs::Artifact>{runfile});

  // Installed from the runfile alone: a lock that adds a patch changes the package.
  const PrefixState installed{.packages = {{.name = "cuda",
                                            .version = "9.0.176",
                                            .packaging = "runfile",
                                            .artifacts = {{.sha256 = runfile.sha256}}}}};
  auto again = plan_install(locked, installed, Packaging::archive);
  REQUIRE(again);
  CHECK_FALSE(again->packages[0].unchanged);
  auto with_patch = installed;
  with_patch.packages[0].artifacts[0].patches = {{.sha256 = runfile.patches[0].sha256}};
  again = plan_install(locked, with_patch, Packaging::archive);
  REQUIRE(again);
  CHECK(again->packages[0].unchanged);
}

TEST_CASE("a runfile locked without its layout asks for a new lock", "[store][plan]") {
  specs::Artifact runfile = artifact("cuda", Kind::runfile, "6");
  runfile.layout = specs::Layout::none;
  const lock::PlatformLock old{.platform = specs::Platform::linux_x86_64,
                               .packages = {package("cuda", "11.2.2", {runfile})}};
  auto refused = plan_install(old, std::nullopt, Packaging::archive);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code() == ErrorCode::failed);
  CHECK_THAT(refused.error().to_string(), Catch::Contains("cuda 11.2.2"));
  CHECK_THAT(refused.error().to_string(), Catch::Contains("envkit lock"));
}

TEST_CASE("a package of sources only is planned to be built from them", "[store][plan]") {
  specs::Artifact source = artifact("zlib", Kind::source, "5");
  source.format = "tar.gz";
  source.layout = specs::Layout::source_tree;
  source.build_system = specs::BuildSystem::configure;
  const lock::PlatformLock locked{.platform = specs::Platform::linux_x86_64,
                                  .packages = {package("zlib", "1.3.1", {source})}};
  for (const auto preferred : {Packaging::archive, Packaging::wheel}) {
    auto plan = plan_install(locked, std::nullopt, preferred);
    REQUIRE(plan);
    CHECK(plan->skipped.empty());
    REQUIRE(plan->packages.size() == 1);
    const auto& zlib = plan->packages[0];
    CHECK(zlib.packaging == Packaging::source);
    CHECK(to_string(zlib.packaging) == "source");
    CHECK(zlib.artifacts == std::vector<specs::Artifact>{source});
    CHECK_FALSE(zlib.fallback);
    CHECK_FALSE(zlib.unchanged);
  }
  CHECK_FALSE(packaging_for(locked.packages[0], Packaging::archive));  // not an NVIDIA packaging

  // Built once, the same sources are unchanged.
  const PrefixState installed{
      .generation = 1,
      .platform = "linux-x86_64",
      .packages = {{.name = "zlib",
                    .version = "1.3.1",
                    .packaging = "source",
                    .artifacts = {{.component = "zlib", .sha256 = source.sha256}}}}};
  auto again = plan_install(locked, installed, Packaging::archive);
  REQUIRE(again);
  CHECK(again->nothing_to_do());
}

}  // namespace
}  // namespace envkit::store
