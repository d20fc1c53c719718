// The build environments of source builds: the build-constraint file of the
// project's era, the framework's requirement for packages that import it, and
// what uv's refusals say about a failed build.
#include "envkit/python/build_env.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "envkit/python/uv.hpp"
#include "support/temp_dir.hpp"

namespace envkit::python {
namespace {

using Strings = std::vector<std::string>;

specs::Version version_of(std::string_view text) {
  return specs::Version::parse(text).value();
}

// setuptools, wheel and Cython as PyPI dates their releases (the first file's upload).
BuildEra era_of(std::string as_of) {
  return BuildEra{.as_of = std::move(as_of),
                  .because = "a test",
                  .tools = {{"setuptools",
                             {{"41.6.0", "2019-10-21"},
                              {"42.0.2", "2019-12-03"},
                              {"44.1.1", "2020-05-29"},  // 44.x after 45.0: a backport
                              {"45.0.0", "2020-01-01"},
                              {"46.0.0b1", "2020-02-01"},
                              {"59.6.0", "2021-12-12"},
                              {"65.5.0", "2022-10-13"},
                              {"68.2.2", "2023-09-13"},
                              {"80.9.0", "2025-05-27"}}},
                            {"wheel", {{"0.33.6", "2019-08-18"}, {"0.34.1", "2020-01-27"}}},
                            {"cython", {{"0.29.14", "2019-11-01"}, {"3.0.0", "2023-07-17"}}}}};
}

TEST_CASE("build constraints cap each build tool at its newest release of the era",
          "[python][build-env]") {
  const auto era = era_of("2019-12-15");
  // Python 3.8 (2019-10-14) is older than the horizon: the horizon decides.
  CHECK(build_constraints(era, version_of("3.8.5")) ==
        Strings{"cython<=0.29.14", "setuptools<=42.0.2", "wheel<=0.33.6"});
  // A later day brings the backport 44.1.1 (newest by version), never a pre-release.
  CHECK(build_constraints(era_of("2020-06-30"), version_of("3.8")) ==
        Strings{"cython<=0.29.14", "setuptools<=45.0.0", "wheel<=0.34.1"});
}

TEST_CASE("build constraints are never older than the Python that builds", "[python][build-env]") {
  const auto era = era_of("2019-12-15");
  // setuptools 42 cannot build on Python 3.12 (no distutils): its release day, 2023-10-02.
  CHECK(build_day(era, version_of("3.12.1")) == "2023-10-02");
  CHECK(build_constraints(era, version_of("3.12.1")) ==
        Strings{"cython<=3.0.0", "setuptools<=68.2.2", "wheel<=0.34.1"});
  CHECK(build_day(era, version_of("3.6.9")) == "2019-12-15");
  // A Python envkit does not know the release of: today's tools.
  CHECK_FALSE(build_day(era, version_of("3.15.0")));
  CHECK(build_constraints(era, version_of("3.15.0")).empty());
  CHECK(python_release_day(version_of("3.8.18")) == "2019-10-14");
  CHECK(python_release_day(version_of("3.14.0")) == "2025-10-07");
  CHECK_FALSE(python_release_day(version_of("2.7.18")));
}

TEST_CASE("a tool with no release by the horizon is left out", "[python][build-env]") {
  const BuildEra era{.as_of = "2015-06-01",
                     .because = "a test",
                     .tools = {{"cython", {{"3.0.0", "2023-07-17"}}},
                               {"setuptools", {{"17.1", "2015-05-31"}}},
                               {"wheel", {}}}};
  CHECK(build_constraints(era, version_of("3.4.3")).empty());  // no release day known
  CHECK(build_constraints(era, version_of("3.5.0")) == Strings{"setuptools<=17.1"});
}

TEST_CASE("the framework's requirement goes into the build of the packages that import it",
          "[python][build-env]") {
  CHECK(build_config_toml("torch==2.1.2", {"detectron2", "mmcv"}) ==
        "# Written by envkit: these packages import the framework in their build.\n"
        "[extra-build-dependencies]\n"
        "\"detectron2\" = [\"torch==2.1.2\"]\n"
        "\"mmcv\" = [\"torch==2.1.2\"]\n");
  CHECK(framework_module("torch") == "torch");
  CHECK(framework_module("tensorflow_gpu") == "tensorflow");
  CHECK(framework_module("jax") == "jax");
  CHECK(framework_module("numpy").empty());
}

TEST_CASE("uv's refusal names the package whose build failed and what it lacked",
          "[python][build-env]") {
  constexpr std::string_view albumentations =
      "error: Failed to build `albumentations==0.4.3`\n"
      "  cause: The build backend returned an error\n"
      "  cause: Call to `setuptools.build_meta:__legacy__.get_requires_for_build_wheel` failed\n"
      "         ModuleNotFoundError: No module named 'pkg_resources'\n";
  const auto failed = failed_build(albumentations);
  REQUIRE(failed);
  CHECK(failed->name == "albumentations");
  CHECK(failed->version == "0.4.3");
  CHECK_FALSE(lacks_module(albumentations, "torch"));
  CHECK(lacks_module(albumentations, "pkg_resources"));

  constexpr std::string_view mmcv =
      "error: Failed to download and build `MMCV==2.2.0`\n"
      "         ModuleNotFoundError: No module named 'torch'\n";
  REQUIRE(failed_build(mmcv));
  CHECK(failed_build(mmcv)->name == "mmcv");
  CHECK(failed_build(mmcv)->version == "2.2.0");
  CHECK(lacks_module(mmcv, "torch"));
  CHECK(lacks_module("ImportError: No module named 'torch.utils'", "torch"));
  CHECK_FALSE(lacks_module("No module named 'torchvision'", "torch"));
  CHECK_FALSE(failed_build("error: No solution found when resolving dependencies"));
}

TEST_CASE("a build that hangs is stopped, naming the package and its last lines",
          "[python][build-env]") {
  test::TempDir dir;
  // A uv whose build of slowpkg waits for ever (`uv python find` finds nothing).
  const auto script = dir.write("bin/uv",
                                "#!/bin/sh\n"
                                "[ \"$1\" = python ] && exit 2\n"
                                "echo 'DEBUG Preparing metadata for: six==1.16.0' >&2\n"
                                "echo 'DEBUG Prepared metadata for: six==1.16.0' >&2\n"
                                "echo 'DEBUG Preparing metadata for: slowpkg==1.0' >&2\n"
                                "echo 'DEBUG running build_ext' >&2\n"
                                "echo 'DEBUG waiting for the licence server' >&2\n"
                                "exec sleep 30\n");
  std::filesystem::permissions(script, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::replace);
  ResolveRequest request;
  request.requirements = {"slowpkg==1.0"};
  request.timeout = std::chrono::seconds(1);
  const auto closure = resolve_with_uv({.path = script, .version = "0.13.9"}, request,
                                       {.python = version_of("3.11.7")});
  REQUIRE_FALSE(closure);
  CHECK_THAT(closure.error().message(),
             Catch::StartsWith("uv did not resolve the requirements envkit passed within 1 s"));
  REQUIRE_FALSE(closure.error().causes().empty());
  const auto& building = closure.error().causes().front();
  CHECK_THAT(building, Catch::StartsWith("it was building slowpkg 1.0 from its source "
                                         "distribution, whose last lines were:\n"));
  CHECK_THAT(building, Catch::EndsWith("running build_ext\nwaiting for the licence server"));
  REQUIRE(closure.error().hints().size() == 1);
  CHECK_THAT(closure.error().hints()[0],
             Catch::Contains("pin a version of slowpkg that has a wheel"));
}

}  // namespace
}  // namespace envkit::python
