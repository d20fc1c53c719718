// The database committed in recipes/ is what a user gets: it loads, it is
// consistent, and it says what NVIDIA's manifests say.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "envkit/recipes/check.hpp"
#include "envkit/recipes/database.hpp"
#include "envkit/recipes/import_nvidia_redist.hpp"
#include "support/envkit_runner.hpp"
#include "support/skip.hpp"

using namespace envkit;
using namespace envkit::recipes;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

Database committed() {
  auto db = Database::open(test::source_dir() / "recipes");
  if (!db) FAIL(db.error().to_string());
  return *std::move(db);
}

fs::path upstream_dir() {
  return test::source_dir().parent_path() / "shared" / "upstream";
}

json read_json(const fs::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// Every sha256 of the kept platforms' archives in one NVIDIA manifest entry.
std::set<std::string> upstream_hashes(const json& component) {
  std::set<std::string> hashes;
  for (const auto& [platform, value] : component.items()) {
    if (!value.is_object() || !nvidia::envkit_platform(platform)) continue;
    if (value.contains("sha256")) {
      hashes.insert(value["sha256"].get<std::string>());
      continue;
    }
    for (const auto& [variant, archive] : value.items()) {
      if (archive.is_object() && archive.contains("sha256")) {
        hashes.insert(archive["sha256"].get<std::string>());
      }
    }
  }
  return hashes;
}

std::set<std::string> database_hashes(const RecipeVersion& version, const std::string& component) {
  std::set<std::string> hashes;
  for (const auto& build : version.builds) {
    for (const auto& a : build.artifacts) {
      if (a.component == component && a.kind == ArtifactKind::archive) hashes.insert(a.sha256);
    }
  }
  return hashes;
}

std::vector<fs::path> manifests(const std::string& folder) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(upstream_dir() / folder)) {
    if (e.path().extension() == ".json" && e.path().filename().string().starts_with("redistrib_")) {
      out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("the committed database loads and is consistent", "[recipes][database]") {
  const Database db = committed();
  // jax has no facts file of its own: recipes/pypi/jax.yaml is its only one.
  CHECK(db.names() == std::vector<std::string>{"cuda", "cudnn", "jax", "python", "tensorflow",
                                               "tensorflow-gpu", "torch", "zlib"});
  auto problems = check_database(db);
  REQUIRE(problems);
  for (const auto& p : *problems)
    UNSCOPED_INFO(p.where << ": " << p.message);
  CHECK(problems->empty());
}

TEST_CASE("the committed database has every CPython 3.5 ... 3.14 release, prebuilt first",
          "[recipes][database]") {
  const Database db = committed();
  const auto artifact_of = [&](std::string_view version) {
    auto recipe = db.load_version("python", specs::Version::parse(version).value());
    INFO(version << (recipe ? "" : recipe.error().to_string()));
    REQUIRE(recipe);
    for (const auto& a : recipe->versions.at(0).builds.at(0).artifacts) {
      if (a.platform == specs::Platform::linux_x86_64) return a;
    }
    FAIL("no linux-x86_64 artifact for python " << version);
    return Artifact{};
  };
  // Only pyenv's python.org tarball: 3.5 ... 3.7, and 3.8.0 (no standalone build).
  const auto py379 = artifact_of("3.7.9");
  CHECK(py379.kind == ArtifactKind::source);
  CHECK(py379.build_system == BuildSystem::cpython);
  CHECK(py379.url == "https://www.python.org/ftp/python/3.7.9/Python-3.7.9.tar.xz");
  CHECK(py379.sha256 == "91923007b05005b5f9bd46f3b9172248aea5abc1543e8a636d59e629c3331b01");
  CHECK(artifact_of("3.5.0").kind == ArtifactKind::source);
  CHECK(artifact_of("3.8.0").kind == ArtifactKind::source);
  // A full python-build-standalone archive wins over the tarball pyenv also has.
  const auto py385 = artifact_of("3.8.5");
  CHECK(py385.kind == ArtifactKind::archive);
  CHECK(py385.layout == Layout::python_standalone_full);
  CHECK(artifact_of("3.12.2").layout == Layout::python_standalone);
}

TEST_CASE("the committed database says what the framework tables say", "[recipes][database]") {
  const Database db = committed();
  auto tf = db.facts("tensorflow-gpu");
  REQUIRE(tf);
  const auto* tf16 = (*tf)->find(specs::Version::parse("1.6.0").value());
  REQUIRE(tf16 != nullptr);
  const auto& build = tf16->builds.at(0);
  CHECK(build.requires_.at("cuda").to_string() == "==9.0.*");
  CHECK(build.requires_.at("cudnn").to_string() == "<8,>=7");
  auto cuda = db.load_version("cuda", specs::Version::parse("12.4.1").value());
  REQUIRE(cuda);
  const auto* cuda124 = cuda->find(specs::Version::parse("12.4.1").value());
  REQUIRE(cuda124 != nullptr);
  const auto component = [&](std::string_view name) {
    for (const auto& c : cuda124->components) {
      if (c.name == name) return c.version;
    }
    return std::string();
  };
  CHECK(component("cuda_cudart") == "12.4.127");
  CHECK(component("cuda_nvcc") == "12.4.131");
}

TEST_CASE("the committed database has jax 0.4.26 with the CUDA 12 build its METADATA states",
          "[recipes][database]") {
  const Database db = committed();
  auto jax = db.facts("jax");
  REQUIRE(jax);
  const auto* release = (*jax)->find(specs::Version::parse("0.4.26").value());
  REQUIRE(release != nullptr);
  REQUIRE(release->builds.size() == 1);
  const auto& build = release->builds[0];
  CHECK(build.id == "cuda12");
  // jax 0.4.26's METADATA, extra cuda12: nvidia-cuda-runtime-cu12 >=12.1.105,
  // nvidia-cudnn-cu12 <9.0,>=8.9.2.26; Requires-Python >=3.9; plugin wheels cp39..cp312.
  CHECK(build.requires_.at("cuda").to_string() == "<13,>=12.1");
  CHECK(build.requires_.at("cudnn").to_string() == "<9.0,>=8.9.2.26");
  CHECK(build.requires_.at("python").to_string() == "<3.13,>=3.9");
  CHECK(build.platforms == std::vector{specs::Platform::linux_x86_64});
  CHECK(build.wheel_index == kPypiIndex);
}

TEST_CASE("the committed database agrees with every NVIDIA manifest",
          "[recipes][database][upstream]") {
  if (!fs::is_directory(upstream_dir())) {
    test::skip_test(test::SkipKind::expected, "no upstream data at " + upstream_dir().string());
    return;
  }
  const Database db = committed();
  auto cuda = db.load_full("cuda");
  REQUIRE(cuda);
  const auto cuda_manifests = manifests("nvidia-redist-cuda");
  CHECK(cuda_manifests.size() == 37);
  for (const auto& path : cuda_manifests) {
    const json manifest = read_json(path);
    const std::string label = path.stem().string().substr(std::string("redistrib_").size());
    INFO(path.filename().string());
    const auto* version = cuda->find(specs::Version::parse(label).value());
    REQUIRE(version != nullptr);
    std::set<std::string> upstream_components, database_components;
    for (const auto& [key, value] : manifest.items()) {
      if (!value.is_object()) continue;
      upstream_components.insert(key);
      CHECK(database_hashes(*version, key) == upstream_hashes(value));
    }
    for (const auto& c : version->components)
      database_components.insert(c.name);
    CHECK(database_components == upstream_components);
  }

  auto cudnn = db.load_full("cudnn");
  REQUIRE(cudnn);
  for (const std::string folder : {"nvidia-redist-cudnn", "nvidia-redist-cudnn-nixpkgs-newer"}) {
    for (const auto& path : manifests(folder)) {
      const json manifest = read_json(path);
      INFO(path.filename().string());
      const auto& entry = manifest.at("cudnn");
      const auto* version =
          cudnn->find(specs::Version::parse(entry.at("version").get<std::string>()).value());
      REQUIRE(version != nullptr);
      CHECK(database_hashes(*version, "cudnn") == upstream_hashes(entry));
    }
  }
}
