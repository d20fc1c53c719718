#include "envkit/recipes/import_cuda_facts.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "envkit/recipes/cuda_runfile.hpp"
#include "envkit/recipes/import_nvidia_redist.hpp"
#include "recipes_test_support.hpp"
#include "support/envkit_runner.hpp"

namespace fs = std::filesystem;
using envkit::ErrorCode;
using envkit::recipes::ArtifactKind;
using envkit::recipes::Build;
using envkit::recipes::CsvSource;
using envkit::recipes::Layout;
using envkit::recipes::Recipe;
using envkit::recipes::RecipeVersion;
using envkit::specs::ComputeCapability;
using envkit::specs::Platform;
using envkit::specs::Version;

namespace {

using envkit::test::build_of;
using envkit::test::versions_of;

// A fixture file kept alive for the CsvSource views that point into it.
struct NvidiaFixture {
  std::string path;
  std::string text;
  [[nodiscard]] CsvSource source() const { return {text, path}; }
};

NvidiaFixture nvidia_fixture(const std::string& name) {
  const auto path = envkit::test::test_data_dir() / "recipes" / "nvidia" / name;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return {path.string(), text.str()};
}

Recipe imported_manifest(const std::string& name) {
  const auto file = nvidia_fixture(name);
  auto recipe = envkit::recipes::import_nvidia_redist(file.text, file.path, {});
  REQUIRE(recipe.ok());
  return std::move(recipe).value();
}

// A cuda recipe holding just these versions, one empty build each.
Recipe cuda_with(std::initializer_list<std::string_view> versions) {
  Recipe recipe{.name = "cuda"};
  for (auto text : versions) {
    recipe.versions.push_back(
        RecipeVersion{.version = Version::parse(text).value(), .builds = {{}}});
  }
  return recipe;
}

const RecipeVersion& version_of(const Recipe& recipe, std::string_view text) {
  const auto* version = recipe.find(Version::parse(text).value());
  INFO(text);
  REQUIRE(version != nullptr);
  return *version;
}

std::string driver(const std::map<Platform, Version>& minimums, Platform platform) {
  const auto it = minimums.find(platform);
  return it == minimums.end() ? "absent" : it->second.original();
}

std::vector<ComputeCapability> capabilities(std::initializer_list<std::string_view> texts) {
  std::vector<ComputeCapability> result;
  for (auto text : texts)
    result.push_back(ComputeCapability::parse(text).value());
  return result;
}

}  // namespace

TEST_CASE("driver minimums join by exact version, else by major.minor", "[nvidia][facts]") {
  auto cuda = cuda_with({"9.0.176", "10.1.243", "12.3.2", "12.4.1", "13.0.0", "12.6.0"});
  const auto table = nvidia_fixture("cuda_toolkit_driver_versions.csv");
  REQUIRE(add_min_drivers(cuda, table.source()).ok());

  SECTION("exact") {
    const auto& minimums = build_of(cuda, "12.4.1", "").min_driver;
    CHECK(driver(minimums, Platform::linux_x86_64) == "550.54.15");
    CHECK(driver(minimums, Platform::linux_aarch64) == "550.54.15");
    CHECK(driver(minimums, Platform::windows_x86_64) == "551.78");
  }
  SECTION("by major.minor: the newest row not newer than the version") {
    CHECK(driver(build_of(cuda, "12.3.2", "").min_driver, Platform::linux_x86_64) == "545.23.08");
    CHECK(driver(build_of(cuda, "9.0.176", "").min_driver, Platform::linux_x86_64) == "384.81");
    CHECK(driver(build_of(cuda, "10.1.243", "").min_driver, Platform::windows_x86_64) == "418.96");
  }
  SECTION("N/A is absent") {
    const auto& minimums = build_of(cuda, "13.0.0", "").min_driver;
    CHECK(driver(minimums, Platform::linux_x86_64) == "580.65.06");
    CHECK(driver(minimums, Platform::windows_x86_64) == "absent");
  }
  SECTION("no row of the series: nothing") {
    CHECK(build_of(cuda, "12.6.0", "").min_driver.empty());
  }
  CHECK(std::count(cuda.sources.begin(), cuda.sources.end(),
                   "nvidia/cuda_toolkit_driver_versions.csv") == 1);
}

TEST_CASE("minor-version compatibility minimums per CUDA family", "[nvidia][facts]") {
  auto cuda = cuda_with({"10.2.89", "11.0.3", "11.8.0", "12.4.1", "13.0.0"});
  const auto table = nvidia_fixture("minor_version_compat.csv");
  REQUIRE(add_minor_version_compat(cuda, table.source()).ok());

  const auto compat = [&](std::string_view version, Platform platform) {
    return driver(build_of(cuda, version, "").min_driver_compat, platform);
  };
  CHECK(compat("11.0.3", Platform::linux_x86_64) == "450.80.02");  // spelled as upstream
  CHECK(compat("11.8.0", Platform::linux_aarch64) == "450.80.02");
  CHECK(compat("11.8.0", Platform::windows_x86_64) == "452.39");
  CHECK(compat("12.4.1", Platform::linux_x86_64) == "525.60.13");
  CHECK(compat("12.4.1", Platform::windows_x86_64) == "528.33");
  CHECK(compat("13.0.0", Platform::linux_x86_64) == "580.65.06");
  CHECK(compat("13.0.0", Platform::windows_x86_64) == "absent");
  CHECK(build_of(cuda, "10.2.89", "").min_driver_compat.empty());
}

TEST_CASE("supported compute capabilities per CUDA version", "[nvidia][facts]") {
  auto cuda = cuda_with({"9.2.148", "11.8.0", "12.0.0", "12.8.0", "13.0.0"});
  const auto table = nvidia_fixture("cuda_capabilities.csv");
  REQUIRE(add_compute_capabilities(cuda, table.source()).ok());

  // 3.5's max 11.8 is inclusive; Jetson 7.2 and the 9.0a/10.0f variants are skipped.
  CHECK(build_of(cuda, "11.8.0", "").cuda_arch == capabilities({"3.5", "7.0", "7.5", "9.0"}));
  CHECK(build_of(cuda, "12.0.0", "").cuda_arch == capabilities({"7.0", "7.5", "9.0"}));
  CHECK(build_of(cuda, "12.8.0", "").cuda_arch ==
        capabilities({"7.0", "7.5", "9.0", "10.0", "12.0"}));
  CHECK(build_of(cuda, "13.0.0", "").cuda_arch == capabilities({"7.5", "9.0", "10.0", "12.0"}));
  // The table starts at CUDA 10.0: unknown, not "none".
  CHECK(build_of(cuda, "9.2.148", "").cuda_arch.empty());
}

TEST_CASE("Ampere from the CUDA NVIDIA says first built for it, not from 11.2", "[nvidia][facts]") {
  // nixpkgs' table starts sm_80/sm_86 at 11.2, the first CUDA it packaged; torch's cu110
  // and cu111 builds then looked unable to run on an A100 or an RTX 3090.
  auto cuda = cuda_with({"10.2.89", "11.0.3", "11.1.1", "11.2.2"});
  const std::string table =
      "cuda_capability,is_jetson,is_architecture_specific,is_family_specific,"
      "min_cuda_major_minor,max_cuda_major_minor\n"
      "7.5,false,false,false,10.0,\n8.0,false,false,false,11.2,\n8.6,false,false,false,11.2,\n"
      "8.9,false,false,false,11.8,\n";
  REQUIRE(add_compute_capabilities(cuda, {table, "caps.csv"}).ok());

  CHECK(build_of(cuda, "10.2.89", "").cuda_arch == capabilities({"7.5"}));
  CHECK(build_of(cuda, "11.0.3", "").cuda_arch == capabilities({"7.5", "8.0"}));
  CHECK(build_of(cuda, "11.1.1", "").cuda_arch == capabilities({"7.5", "8.0", "8.6"}));
  CHECK(build_of(cuda, "11.2.2", "").cuda_arch == capabilities({"7.5", "8.0", "8.6"}));
  // The correction is said where the database says where its facts came from.
  CHECK(std::count_if(cuda.sources.begin(), cuda.sources.end(), [](const std::string& s) {
          return s.starts_with("sm_80 from CUDA 11.0") || s.starts_with("sm_86 from CUDA 11.1");
        }) == 2);
}

TEST_CASE("CUDA 9.0 to 11.4.1 from the driver table and the runfiles", "[nvidia][facts]") {
  const auto table = nvidia_fixture("cuda_toolkit_driver_versions.csv");
  const auto runfiles = nvidia_fixture("cuda_runfiles.csv");
  const auto legacy = nvidia_fixture("cuda_runfiles_legacy.csv");
  auto imported = import_cuda_runfiles(table.source(), runfiles.source(), legacy.source());
  INFO((imported.ok() ? "" : imported.error().to_string()));
  REQUIRE(imported.ok());
  const auto& cuda = *imported;

  // 9.0.76 is the 9.0.176 runfile, 10.1.105 the 10.1.243 one; 9.2.88 stays without a runfile;
  // 8.0 is older than envkit's CUDA, 11.4.2 has redist archives, and 10.0.130 comes from
  // cuda_runfiles.csv only (the old nixpkgs table is read for 9.x).
  CHECK(versions_of(cuda) ==
        std::vector<std::string>{"9.0.176", "9.2.88", "9.2.148", "10.1.243", "10.2.89", "11.4.1"});
  CHECK(cuda.sources.size() == 4);
  CHECK(cuda.sources.at(0).starts_with("cuda 9.0.176 patches 2-4: nixpkgs "));
  CHECK(std::vector<std::string>(cuda.sources.begin() + 1, cuda.sources.end()) ==
        std::vector<std::string>{"nvidia/cuda_runfiles.csv", "nvidia/cuda_runfiles_legacy.csv",
                                 "nvidia/cuda_toolkit_driver_versions.csv"});

  const auto& cuda_9_0 = build_of(cuda, "9.0.176", "");
  REQUIRE(cuda_9_0.artifacts.size() == 1);  // a patch runfile is the runfile's, not an artifact
  const auto& runfile = cuda_9_0.artifacts.front();
  CHECK(runfile.kind == ArtifactKind::runfile);
  CHECK(runfile.layout == Layout::cuda_runfile_nested);
  CHECK(runfile.components == std::vector<std::string>{"cuda_cudart", "cuda_cupti", "cuda_nvcc",
                                                       "cuda_nvrtc", "libcublas", "libcufft",
                                                       "libcurand", "libcusolver", "libcusparse"});
  CHECK(runfile.format == "run");
  CHECK(runfile.component == "cuda");
  CHECK(runfile.platform == Platform::linux_x86_64);
  CHECK(runfile.url ==
        "https://developer.nvidia.com/compute/cuda/9.0/Prod/local_installers/"
        "cuda_9.0.176_384.81_linux-run");
  CHECK(cuda_9_0.platforms == std::vector<Platform>{Platform::linux_x86_64});

  CHECK(build_of(cuda, "10.2.89", "").artifacts.size() == 1);
  const auto& without_runfile = build_of(cuda, "9.2.88", "");
  CHECK(without_runfile.artifacts.empty());
  CHECK(without_runfile.platforms.empty());
  CHECK(build_of(cuda, "11.4.1", "").artifacts.empty());
}

TEST_CASE("runfile eras: nested before 10.1, builds/ from 10.1, cccl apart from 11.0",
          "[nvidia][facts][runfile]") {
  using envkit::recipes::cuda_runfile_era;
  const auto era = [](std::string_view version) {
    return cuda_runfile_era(Version::parse(version).value());
  };
  CHECK_FALSE(era("8.0.61").has_value());
  REQUIRE(era("9.0.176").has_value());
  CHECK(era("9.0.176")->layout == Layout::cuda_runfile_nested);
  CHECK(era("10.0.130")->layout == Layout::cuda_runfile_nested);
  CHECK(era("10.1.243")->layout == Layout::cuda_runfile_builds);
  CHECK(era("11.3.1")->layout == Layout::cuda_runfile_builds);
  CHECK_FALSE(era("12.0.0").has_value());
  const auto has_cccl = [&](std::string_view version) {
    const auto c = era(version).value().components;
    return std::find(c.begin(), c.end(), "cuda_cccl") != c.end();
  };
  CHECK_FALSE(has_cccl("10.2.89"));
  CHECK(has_cccl("11.0.3"));
  CHECK(era("10.2.89")->components.size() == 9);
  CHECK(era("11.2.1")->components.size() == 10);
  // Only what envkit places: never the driver, samples or docs.
  const auto cuda_11_2 = era("11.2.1").value();
  for (const auto& name : cuda_11_2.components) {
    CHECK((name.starts_with("cuda_") || name.starts_with("lib")));
  }
}

TEST_CASE("runfile patches from the nixpkgs table in order, 9.0's 2-4 from cited nixpkgs",
          "[nvidia][facts][runfile]") {
  const auto table = nvidia_fixture("cuda_toolkit_driver_versions.csv");
  const auto runfiles = nvidia_fixture("cuda_runfiles.csv");
  const auto legacy = nvidia_fixture("cuda_runfiles_legacy.csv");
  auto imported = import_cuda_runfiles(table.source(), runfiles.source(), legacy.source());
  REQUIRE(imported.ok());

  const auto& patches = build_of(*imported, "9.0.176", "").artifacts.at(0).patches;
  REQUIRE(patches.size() == 4);
  // Patch 1 from the table's `runfile-patch` row; 2-4 from nixpkgs' runPatches, Nix base32
  // turned into hex.
  CHECK(patches[0].url ==
        "https://developer.nvidia.com/compute/cuda/9.0/Prod/patches/1/cuda_9.0.176.1_linux-run");
  CHECK(patches[0].sha256 == "1108feb94c9e1f066a803d580309d30c94477bf58f586f468b8bf224c68bafe9");
  CHECK(patches[1].url ==
        "https://developer.nvidia.com/compute/cuda/9.0/Prod/patches/2/cuda_9.0.176.2_linux-run");
  CHECK(patches[1].sha256 == "ec345f6d17d52c0ab6ea296ec389efdabca2ca56bddde8723bcea7be646ce5eb");
  CHECK(patches[2].sha256 == "429e2c30da8021ec10f047ce475bc628832a5f93110f5cf487f2327dfb1aa8ca");
  CHECK(patches[3].url ==
        "https://developer.nvidia.com/compute/cuda/9.0/Prod/patches/4/cuda_9.0.176.4_linux-run");
  CHECK(patches[3].sha256 == "9353d0c9a7fa0f8483ae0ef12f372da14efaaf1e5f5ae011b142e9eaeb78d55f");
  for (const auto& patch : patches)
    CHECK_FALSE(patch.size.has_value());  // no size upstream

  // 9.2.148 has no patch row in the fixture; 10.x runfiles have no patches in the data.
  CHECK(build_of(*imported, "9.2.148", "").artifacts.at(0).patches.empty());
  const auto& cuda_10_2 = build_of(*imported, "10.2.89", "").artifacts.at(0);
  CHECK(cuda_10_2.patches.empty());
  CHECK(cuda_10_2.layout == Layout::cuda_runfile_builds);
}

TEST_CASE("a whole cuda recipe: redist, runfiles and facts merged", "[nvidia][facts]") {
  auto cuda = imported_manifest("redistrib_12.4.1.json");
  envkit::recipes::merge_into(cuda, imported_manifest("redistrib_11.5.0.json"));
  const auto table = nvidia_fixture("cuda_toolkit_driver_versions.csv");
  const auto runfiles = nvidia_fixture("cuda_runfiles.csv");
  const auto legacy = nvidia_fixture("cuda_runfiles_legacy.csv");
  envkit::recipes::merge_into(
      cuda, import_cuda_runfiles(table.source(), runfiles.source(), legacy.source()).value());
  REQUIRE(add_min_drivers(cuda, table.source()).ok());

  CHECK(versions_of(cuda).front() == "9.0.176");
  CHECK(versions_of(cuda).back() == "12.4.1");
  CHECK(driver(build_of(cuda, "11.5.0", "").min_driver, Platform::windows_x86_64) == "496.04");
  CHECK(driver(build_of(cuda, "9.0.176", "").min_driver, Platform::linux_x86_64) == "384.81");
  // The redist build keeps its archives.
  CHECK(build_of(cuda, "12.4.1", "").artifacts.size() == 8);
}

TEST_CASE("legacy cuDNN tarballs: one build per CUDA range", "[nvidia][facts]") {
  const auto releases = nvidia_fixture("cudnn_releases.csv");
  const auto old = nvidia_fixture("cudnn_tarballs_legacy.csv");
  const auto redist = imported_manifest("redistrib_9.1.0.json");
  auto imported = import_legacy_cudnn(releases.source(), old.source(), redist);
  INFO((imported.ok() ? "" : imported.error().to_string()));
  REQUIRE(imported.ok());
  const auto& cudnn = *imported;

  // cuDNN 6 and builds for CUDA 8.0 are left out; 7.3.0 is spelled as its file name spells it.
  CHECK(versions_of(cudnn) == std::vector<std::string>{"7.0.5", "7.3.0.29", "7.6.5.32", "8.1.1.33",
                                                       "8.4.1.50", "9.1.0.70"});
  CHECK(cudnn.sources ==
        std::vector<std::string>{"nvidia/cudnn_releases.csv", "nvidia/cudnn_tarballs_legacy.csv"});

  SECTION("one CUDA minor: cuda<MIN>") {
    const auto& build = build_of(cudnn, "7.0.5", "cuda9.0");
    CHECK(build.requires_.at("cuda").to_string() == "<9.1,>=9.0");
    CHECK_FALSE(build.requires_.contains("zlib"));
    REQUIRE(build.artifacts.size() == 1);
    CHECK(build.artifacts.front().layout == Layout::cudnn_legacy);
    CHECK(build.artifacts.front().format == "tgz");
    CHECK(build.artifacts.front().component == "cudnn");
  }
  SECTION("the same tarball from both tables is recorded once") {
    REQUIRE(version_of(cudnn, "7.6.5.32").builds.size() == 2);
    CHECK(build_of(cudnn, "7.6.5.32", "cuda10.1").artifacts.size() == 1);
    CHECK(build_of(cudnn, "7.6.5.32", "cuda10.2").artifacts.size() == 1);
  }
  SECTION("a range of minors: cuda<MIN>-<MAX>, up to the minor after MAX") {
    const auto& build = build_of(cudnn, "8.1.1.33", "cuda11.0-11.2");
    CHECK(build.requires_.at("cuda").to_string() == "<11.3,>=11.0");
  }
  SECTION("redist-style archives; linux-sbsa joins the same build; Jetson is skipped") {
    const auto& build = build_of(cudnn, "8.4.1.50", "cuda11.0-11.7");
    CHECK(build.requires_.at("cuda").to_string() == "<11.8,>=11.0");
    CHECK(build.requires_.contains("zlib"));
    CHECK(build.platforms ==
          std::vector<Platform>{Platform::linux_x86_64, Platform::linux_aarch64});
    CHECK(build.artifacts.front().layout == Layout::nvidia_redist);
    CHECK(build.artifacts.front().format == "tar.xz");
    CHECK(cudnn.find(Version::parse("8.9.5.30").value()) == nullptr);
  }
  SECTION("a version NVIDIA's manifests hold only has its cuda floor raised") {
    REQUIRE(version_of(cudnn, "9.1.0.70").builds.size() == 1);
    const auto& refinement = build_of(cudnn, "9.1.0.70", "cuda11");
    CHECK(refinement.artifacts.empty());
    CHECK(refinement.requires_.at("cuda").to_string() == "<12,>=11.8");

    auto merged = redist;
    envkit::recipes::merge_into(merged, cudnn);
    const auto& cuda11 = build_of(merged, "9.1.0.70", "cuda11");
    CHECK(cuda11.requires_.at("cuda").to_string() == "<12,>=11.8");
    CHECK(cuda11.requires_.contains("zlib"));
    // Raising the cuda floor leaves zlib's Linux-only restriction as the manifest gave it.
    CHECK(cuda11.requires_only_on.at("zlib") ==
          std::vector<Platform>{Platform::linux_x86_64, Platform::linux_aarch64});
    CHECK(cuda11.artifacts.size() == 2);
    CHECK(build_of(merged, "9.1.0.70", "cuda12").requires_.at("cuda").to_string() == "<13,>=12");
  }
}

TEST_CASE("broken fact tables are input errors naming the file", "[nvidia][facts]") {
  auto cuda = cuda_with({"12.4.1"});
  SECTION("a missing column") {
    const auto result =
        add_min_drivers(cuda, {"cuda_version,min_driver_linux\n12.4.1,550\n", "t.csv"});
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().code() == ErrorCode::input);
    CHECK(result.error().headline() == "t.csv:1: missing column `min_driver_windows`");
  }
  SECTION("a bad digest, with its line") {
    const auto result = envkit::recipes::import_cuda_runfiles(
        {"cuda_version,min_driver_linux,min_driver_windows\n", "drivers.csv"},
        {"cuda_version,url,sha256_hex\n10.2.89,https://x/cuda_10.2.89_440.33.01_linux.run,abc\n",
         "runfiles.csv"},
        {"nixpkgs_version,kind,url,sha256_hex_derived\n", "legacy.csv"});
    REQUIRE_FALSE(result.ok());
    CHECK_THAT(result.error().headline(), Catch::StartsWith("runfiles.csv:2: sha256_hex"));
  }
  SECTION("a capability that is not one") {
    const auto result = add_compute_capabilities(
        cuda, {"cuda_capability,is_jetson,is_architecture_specific,is_family_specific,"
               "min_cuda_major_minor,max_cuda_major_minor\nsm8x,false,false,false,11.0,\n",
               "caps.csv"});
    REQUIRE_FALSE(result.ok());
    CHECK_THAT(result.error().headline(), Catch::StartsWith("caps.csv:2: "));
  }
}
