#include "envkit/recipes/import_nvidia_redist.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/envkit_runner.hpp"
#include "support/skip.hpp"

namespace fs = std::filesystem;
using envkit::ErrorCode;
using envkit::recipes::Artifact;
using envkit::recipes::ArtifactKind;
using envkit::recipes::Build;
using envkit::recipes::import_nvidia_redist;
using envkit::recipes::Layout;
using envkit::recipes::Recipe;
using envkit::recipes::RedistOptions;
using envkit::specs::Platform;
namespace nvidia = envkit::recipes::nvidia;

namespace {

fs::path fixture_dir() {
  return envkit::test::test_data_dir() / "recipes" / "nvidia";
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Recipe import_fixture(const std::string& name, const RedistOptions& options = {}) {
  const auto path = fixture_dir() / name;
  auto recipe = import_nvidia_redist(read_text(path), path.string(), options);
  INFO((recipe.ok() ? "" : recipe.error().to_string()));
  REQUIRE(recipe.ok());
  return std::move(recipe).value();
}

const Artifact* find_artifact(const Build& build, Platform platform, std::string_view component) {
  for (const auto& artifact : build.artifacts) {
    if (artifact.platform == platform && artifact.component == component) return &artifact;
  }
  return nullptr;
}

const Build& build_with_id(const Recipe& recipe, std::string_view id) {
  REQUIRE(recipe.versions.size() == 1);
  const auto& builds = recipe.versions.front().builds;
  const auto it =
      std::find_if(builds.begin(), builds.end(), [&](const Build& b) { return b.id == id; });
  REQUIRE(it != builds.end());
  return *it;
}

constexpr std::string_view kCudaBase = "https://developer.download.nvidia.com/compute/cuda/redist/";

}  // namespace

TEST_CASE("a CUDA manifest becomes one version with one build of every kept archive",
          "[nvidia][redist]") {
  const auto recipe = import_fixture("redistrib_12.4.1.json");

  CHECK(recipe.name == "cuda");
  CHECK(recipe.sources == std::vector<std::string>{"nvidia/redistrib_12.4.1.json"});
  CHECK(recipe.default_components ==
        std::vector<std::string>{"cuda_cudart", "cuda_nvcc", "libcublas"});
  REQUIRE(recipe.versions.size() == 1);
  const auto& version = recipe.versions.front();
  CHECK(version.version.original() == "12.4.1");
  CHECK(version.release_date == "2024-04-03");
  CHECK(version.components == std::vector<envkit::recipes::Component>{{"cuda_cudart", "12.4.127"},
                                                                      {"cuda_nvcc", "12.4.131"},
                                                                      {"libcublas", "12.4.5.8"}});

  const auto& build = build_with_id(recipe, "");
  CHECK(build.requires_.empty());
  CHECK(build.platforms == std::vector<Platform>{Platform::linux_x86_64, Platform::linux_aarch64,
                                                 Platform::windows_x86_64});
  // cudart 3 + nvcc 3 + cublas 2; NVIDIA's linux-aarch64 (Jetson) and linux-ppc64le are skipped.
  CHECK(build.artifacts.size() == 8);

  const auto* sbsa = find_artifact(build, Platform::linux_aarch64, "cuda_cudart");
  REQUIRE(sbsa != nullptr);
  CHECK(sbsa->url == std::string(kCudaBase) +
                         "cuda_cudart/linux-sbsa/cuda_cudart-linux-sbsa-12.4.127-archive.tar.xz");
  CHECK(sbsa->kind == ArtifactKind::archive);
  CHECK(sbsa->layout == Layout::nvidia_redist);
  CHECK(sbsa->format == "tar.xz");
  CHECK(sbsa->size == 102222);
  CHECK(sbsa->sha256.size() == 64);

  const auto* windows = find_artifact(build, Platform::windows_x86_64, "cuda_nvcc");
  REQUIRE(windows != nullptr);
  CHECK(windows->format == "zip");

  // The fixture spells this digest in upper case.
  const auto* cublas = find_artifact(build, Platform::linux_aarch64, "libcublas");
  REQUIRE(cublas != nullptr);
  CHECK(nvidia::normalize_sha256(cublas->sha256) == cublas->sha256);
}

TEST_CASE("a base URL replaces NVIDIA's download server", "[nvidia][redist]") {
  const auto with_slashes =
      import_fixture("redistrib_12.4.1.json", {.base_url = "https://mirror.example/nv/cuda//"});
  const auto without_slash =
      import_fixture("redistrib_12.4.1.json", {.base_url = "https://mirror.example/nv/cuda"});
  const std::string expected =
      "https://mirror.example/nv/cuda/"
      "cuda_nvcc/linux-x86_64/cuda_nvcc-linux-x86_64-12.4.131-archive.tar.xz";
  for (const auto* recipe : {&with_slashes, &without_slash}) {
    const auto* nvcc =
        find_artifact(build_with_id(*recipe, ""), Platform::linux_x86_64, "cuda_nvcc");
    REQUIRE(nvcc != nullptr);
    CHECK(nvcc->url == expected);
  }
}

TEST_CASE("an older CUDA manifest takes its label from the file name", "[nvidia][redist]") {
  // CUDA 11.x-12.1.x manifests carry only release_date at the top.
  const auto recipe = import_fixture("redistrib_11.5.0.json");
  CHECK(recipe.name == "cuda");
  REQUIRE(recipe.versions.size() == 1);
  CHECK(recipe.versions.front().version.original() == "11.5.0");
  CHECK(recipe.versions.front().release_date == "2021-10-20");
  CHECK(recipe.default_components == std::vector<std::string>{"cuda_cudart", "cuda_cupti"});
  CHECK(build_with_id(recipe, "").artifacts.size() == 4);
}

TEST_CASE("a cuDNN manifest has one build per CUDA major variant", "[nvidia][redist]") {
  const auto recipe = import_fixture("redistrib_9.1.0.json");

  CHECK(recipe.name == "cudnn");
  CHECK(recipe.default_components == std::vector<std::string>{"cudnn"});
  REQUIRE(recipe.versions.size() == 1);
  CHECK(recipe.versions.front().version.original() == "9.1.0.70");
  CHECK(recipe.versions.front().release_date == "2024-04-12");
  REQUIRE(recipe.versions.front().builds.size() == 2);

  const auto& cuda11 = build_with_id(recipe, "cuda11");
  CHECK(cuda11.requires_.at("cuda").to_string() == "<12,>=11");
  CHECK(cuda11.requires_.at("zlib").empty());
  CHECK(cuda11.platforms ==
        std::vector<Platform>{Platform::linux_x86_64, Platform::windows_x86_64});
  CHECK(cuda11.artifacts.size() == 2);

  const auto& cuda12 = build_with_id(recipe, "cuda12");
  CHECK(cuda12.requires_.at("cuda").to_string() == "<13,>=12");
  // linux-sbsa is envkit's linux-aarch64; NVIDIA's linux-aarch64 (Jetson) build is skipped.
  CHECK(cuda12.platforms == std::vector<Platform>{Platform::linux_x86_64, Platform::linux_aarch64,
                                                  Platform::windows_x86_64});
  const auto* sbsa = find_artifact(cuda12, Platform::linux_aarch64, "cudnn");
  REQUIRE(sbsa != nullptr);
  CHECK(sbsa->url ==
        "https://developer.download.nvidia.com/compute/cudnn/redist/"
        "cudnn/linux-sbsa/cudnn-linux-sbsa-9.1.0.70_cuda12-archive.tar.xz");
  // Source-only samples are not a platform envkit installs.
  CHECK(cuda12.artifacts.size() == 3);
}

TEST_CASE("cuDNN 9 needs zlib on Linux only, cuDNN 8.x on every platform", "[nvidia][redist]") {
  using envkit::recipes::requirements_on;
  const auto cudnn9 = import_fixture("redistrib_9.1.0.json");
  for (const auto& build : cudnn9.versions.front().builds) {
    INFO(build.id);
    CHECK(build.requires_.contains("zlib"));
    CHECK(build.requires_only_on.at("zlib") ==
          std::vector<Platform>{Platform::linux_x86_64, Platform::linux_aarch64});
    CHECK_FALSE(build.requires_only_on.contains("cuda"));
    CHECK(requirements_on(build, Platform::linux_x86_64).contains("zlib"));
    CHECK(requirements_on(build, Platform::linux_aarch64).contains("zlib"));
    CHECK_FALSE(requirements_on(build, Platform::windows_x86_64).contains("zlib"));
    CHECK(requirements_on(build, Platform::windows_x86_64).contains("cuda"));
  }

  // The shape of NVIDIA's cuDNN 8.9.7 manifest, cut to one archive per platform.
  const std::string cudnn89_manifest = R"({
    "release_date": "2024-03-15",
    "release_label": "8.9.7",
    "release_product": "cudnn",
    "cudnn": {
      "name": "NVIDIA CUDA Deep Neural Network library",
      "license": "cudnn",
      "version": "8.9.7.29",
      "cuda_variant": ["11", "12"],
      "linux-x86_64": {
        "cuda12": {
          "relative_path": "cudnn/linux-x86_64/cudnn-linux-x86_64-8.9.7.29_cuda12-archive.tar.xz",
          "sha256": "475333625c7e42a7af3ca0b2f7506a106e30c93b1aa0081cd9c13efb6e21e3bb",
          "size": "866335040"
        }
      },
      "windows-x86_64": {
        "cuda12": {
          "relative_path": "cudnn/windows-x86_64/cudnn-windows-x86_64-8.9.7.29_cuda12-archive.zip",
          "sha256": "94fc17af8e83a26cc5d231ed23981b28c29c3fc2e87b1844ea3f46486f481df5",
          "size": "675634765"
        }
      }
    }
  })";
  auto cudnn89 = import_nvidia_redist(cudnn89_manifest, "redistrib_8.9.7.json");
  REQUIRE(cudnn89);
  const auto& build = build_with_id(*cudnn89, "cuda12");
  CHECK(build.platforms == std::vector<Platform>{Platform::linux_x86_64, Platform::windows_x86_64});
  CHECK(build.requires_.contains("zlib"));
  // Windows cuDNN 8 needs zlibwapi, which envkit does not model: zlib stays on every platform.
  CHECK(build.requires_only_on.empty());
  CHECK(requirements_on(build, Platform::windows_x86_64).contains("zlib"));
}

TEST_CASE("an older-shape cuDNN manifest names the CUDA major in its archive names",
          "[nvidia][redist]") {
  const auto recipe = import_fixture("redistrib_8.4.1.json");
  REQUIRE(recipe.versions.size() == 1);
  CHECK(recipe.versions.front().version.original() == "8.4.1.50");
  REQUIRE(recipe.versions.front().builds.size() == 1);
  const auto& build = build_with_id(recipe, "cuda11");
  CHECK(build.requires_.at("cuda").to_string() == "<12,>=11");
  CHECK(build.requires_.contains("zlib"));
  CHECK(build.platforms == std::vector<Platform>{Platform::linux_x86_64, Platform::linux_aarch64,
                                                 Platform::windows_x86_64});
}

TEST_CASE("malformed JSON is an input error at file:line:column", "[nvidia][redist]") {
  const std::string text = "{\n  \"release_label\": \"12.4.1\"\n  \"cuda_cudart\": {}\n}\n";
  const auto recipe = import_nvidia_redist(text, "mirror/redistrib_12.4.1.json", {});
  REQUIRE_FALSE(recipe.ok());
  const auto& error = recipe.error();
  CHECK(error.code() == ErrorCode::input);
  REQUIRE(error.location().has_value());
  CHECK(error.location()->file == "mirror/redistrib_12.4.1.json");
  CHECK(error.location()->line == 3);
  CHECK(error.location()->column == 15);
  CHECK_THAT(error.message(), Catch::Contains("malformed JSON"));
  CHECK_THAT(error.message(), Catch::Contains("expected '}'"));
}

TEST_CASE("a bad sha256 is an input error naming the file and archive", "[nvidia][redist]") {
  const std::string text = R"({
    "release_label": "12.4.1", "release_product": "cuda",
    "cuda_cudart": {"version": "12.4.127", "linux-x86_64": {
      "relative_path": "cuda_cudart/linux-x86_64/cuda_cudart-linux-x86_64-12.4.127-archive.tar.xz",
      "sha256": "not-a-digest", "size": "10"}}})";
  const auto recipe = import_nvidia_redist(text, "redistrib_12.4.1.json", {});
  REQUIRE_FALSE(recipe.ok());
  CHECK(recipe.error().code() == ErrorCode::input);
  CHECK_THAT(recipe.error().headline(), Catch::StartsWith("redistrib_12.4.1.json: "));
  CHECK_THAT(recipe.error().message(), Catch::Contains("cuda_cudart linux-x86_64"));
  CHECK_THAT(recipe.error().message(), Catch::Contains("not-a-digest"));
}

TEST_CASE("a manifest without product or label is an input error", "[nvidia][redist]") {
  SECTION("no product") {
    const auto recipe = import_nvidia_redist(R"({"release_label": "1.0"})", "x.json", {});
    REQUIRE_FALSE(recipe.ok());
    CHECK(recipe.error().code() == ErrorCode::input);
    CHECK_THAT(recipe.error().headline(), Catch::Contains("x.json: missing `release_product`"));
  }
  SECTION("no label, and a file name that has none") {
    const auto recipe = import_nvidia_redist(R"({"release_product": "cuda"})", "manifest.json", {});
    REQUIRE_FALSE(recipe.ok());
    CHECK_THAT(recipe.error().headline(), Catch::Contains("missing `release_label`"));
  }
  SECTION("an unknown product") {
    const auto recipe = import_nvidia_redist(
        R"({"release_label": "3.0", "release_product": "nvshmem"})", "x.json", {});
    REQUIRE_FALSE(recipe.ok());
    CHECK_THAT(recipe.error().message(), Catch::Contains("`nvshmem`"));
  }
}

TEST_CASE("shared NVIDIA helpers", "[nvidia][redist]") {
  CHECK(nvidia::envkit_platform("linux-sbsa") == Platform::linux_aarch64);
  CHECK(nvidia::envkit_platform("windows-x86_64") == Platform::windows_x86_64);
  CHECK_FALSE(nvidia::envkit_platform("linux-aarch64").has_value());
  CHECK_FALSE(nvidia::envkit_platform("linux-ppc64le").has_value());
  CHECK_FALSE(nvidia::envkit_platform("source").has_value());

  CHECK(nvidia::archive_format("a-archive.tar.xz") == "tar.xz");
  CHECK(nvidia::archive_format("cudnn-10.2-linux-x64-v7.6.5.32.tgz") == "tgz");
  CHECK(nvidia::archive_format("x.zip") == "zip");
  CHECK_FALSE(nvidia::archive_format("cuda_9.2.148_396.37_linux").has_value());

  CHECK(nvidia::normalize_sha256(std::string(64, 'A')) == std::string(64, 'a'));
  CHECK_FALSE(nvidia::normalize_sha256(std::string(63, 'a')).has_value());
  CHECK_FALSE(nvidia::normalize_sha256(std::string(64, 'g')).has_value());

  CHECK(nvidia::provenance("/x/up/nvidia-redist-cuda/redistrib_12.4.1.json") ==
        "nvidia-redist-cuda/redistrib_12.4.1.json");
  CHECK(nvidia::provenance("redistrib_12.4.1.json") == "redistrib_12.4.1.json");

  Build old_cudnn, new_cudnn;
  nvidia::add_cudnn_runtime_requirements(old_cudnn,
                                         envkit::specs::Version::parse("8.2.4.15").value());
  nvidia::add_cudnn_runtime_requirements(new_cudnn,
                                         envkit::specs::Version::parse("8.3.0.98").value());
  CHECK_FALSE(old_cudnn.requires_.contains("zlib"));
  CHECK(new_cudnn.requires_.contains("zlib"));
  CHECK(new_cudnn.requires_only_on.empty());

  Build cudnn_8_9, cudnn_9_0;
  nvidia::add_cudnn_runtime_requirements(cudnn_8_9,
                                         envkit::specs::Version::parse("8.9.7.29").value());
  nvidia::add_cudnn_runtime_requirements(cudnn_9_0,
                                         envkit::specs::Version::parse("9.0.0.312").value());
  CHECK(cudnn_8_9.requires_.contains("zlib"));
  CHECK(cudnn_8_9.requires_only_on.empty());
  CHECK(cudnn_9_0.requires_.contains("zlib"));
  CHECK(cudnn_9_0.requires_only_on.at("zlib") ==
        std::vector<Platform>{Platform::linux_x86_64, Platform::linux_aarch64});
}

namespace {

// What an upstream manifest lists for the platforms envkit keeps: url suffix -> sha256.
std::map<std::string, std::string> kept_archives(const nlohmann::json& manifest) {
  std::map<std::string, std::string> archives;
  const auto add = [&](const nlohmann::json& entry) {
    archives.emplace(entry.at("relative_path").get<std::string>(),
                     entry.at("sha256").get<std::string>());
  };
  for (const auto& [component, body] : manifest.items()) {
    if (!body.is_object()) continue;
    for (const auto& [platform, entry] : body.items()) {
      if (!entry.is_object() || !nvidia::envkit_platform(platform)) continue;
      if (entry.contains("relative_path")) {
        add(entry);
      } else {
        for (const auto& [variant, archive] : entry.items())
          add(archive);
      }
    }
  }
  return archives;
}

struct UpstreamImport {
  Recipe recipe;
  std::size_t manifests = 0;
  std::size_t archives_checked = 0;
};

// Imports every manifest of `folders`, checking each kept archive arrives with its sha256.
UpstreamImport import_upstream_folder(const fs::path& upstream,
                                      std::initializer_list<std::string_view> folders) {
  UpstreamImport result;
  for (auto folder : folders) {
    for (const auto& file : fs::directory_iterator(upstream / folder)) {
      if (file.path().extension() != ".json") continue;
      const auto text = read_text(file.path());
      auto imported = import_nvidia_redist(text, file.path().string(), {});
      INFO(file.path().string() << (imported.ok() ? "" : imported.error().to_string()));
      REQUIRE(imported.ok());
      std::map<std::string, std::string> found;
      for (const auto& build : imported->versions.front().builds) {
        for (const auto& artifact : build.artifacts) {
          const auto redist = artifact.url.find("/redist/");
          found.emplace(artifact.url.substr(redist + 8), artifact.sha256);
        }
      }
      for (const auto& [path, sha256] : kept_archives(nlohmann::json::parse(text))) {
        INFO(path);
        CHECK(found[path] == sha256);
        ++result.archives_checked;
      }
      CHECK(found.size() == kept_archives(nlohmann::json::parse(text)).size());
      envkit::recipes::merge_into(result.recipe, *imported);
      ++result.manifests;
    }
  }
  return result;
}

}  // namespace

TEST_CASE("every upstream CUDA and cuDNN manifest imports completely", "[nvidia][upstream]") {
  const auto upstream = envkit::test::test_data_dir() / ".." / ".." / ".." / "shared" / "upstream";
  if (!fs::exists(upstream / "nvidia-redist-cuda")) {
    envkit::test::skip_test(envkit::test::SkipKind::expected,
                            "no upstream data at " + upstream.string());
    return;
  }

  const auto cuda = import_upstream_folder(upstream, {"nvidia-redist-cuda"});
  CHECK(cuda.manifests == 37);
  CHECK(cuda.recipe.versions.size() == 37);
  CHECK(cuda.archives_checked > 3000);
  const auto* cuda_12_4_1 = cuda.recipe.find(envkit::specs::Version::parse("12.4.1").value());
  REQUIRE(cuda_12_4_1 != nullptr);
  const auto& components = cuda_12_4_1->components;
  CHECK(std::count(components.begin(), components.end(),
                   envkit::recipes::Component{"cuda_cudart", "12.4.127"}) == 1);
  CHECK(std::count(components.begin(), components.end(),
                   envkit::recipes::Component{"cuda_nvcc", "12.4.131"}) == 1);

  const auto cudnn = import_upstream_folder(
      upstream, {"nvidia-redist-cudnn", "nvidia-redist-cudnn-nixpkgs-newer"});
  CHECK(cudnn.manifests == 38);
  CHECK(cudnn.recipe.versions.size() == 38);
  for (const auto& version : cudnn.recipe.versions) {
    for (const auto& build : version.builds) {
      INFO(version.version.original() << " " << build.id);
      CHECK(build.id.starts_with("cuda"));
      CHECK(build.requires_.contains("cuda"));
      CHECK(build.requires_.contains("zlib"));
      CHECK(build.requires_only_on.contains("zlib") == (version.version.major() >= 9));
    }
  }
}
