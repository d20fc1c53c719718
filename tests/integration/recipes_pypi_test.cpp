// `envkit recipes import pypi-nvidia` against a real HTTP server (nginx on
// 127.0.0.1) serving a small simple-API index: never the internet.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/envkit_runner.hpp"
#include "support/http_server.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

using envkit::test::run_envkit;
using envkit::test::StaticHttpServer;
using envkit::test::TempDir;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

fs::path fixture(const std::string& area, const std::string& name) {
  return envkit::test::test_data_dir() / "recipes" / area / name;
}

std::string read_pypi_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The wheel artifacts `recipes show` lists for one version.
std::vector<json> wheels(const std::string& db, const std::string& package,
                         const std::string& version) {
  const auto show =
      run_envkit({.args = {"--recipes", db, "recipes", "show", package, version, "--json"}});
  REQUIRE(show.exit_code == 0);
  const json shown = json::parse(show.out);
  std::vector<json> out;
  for (const auto& build : shown.at("versions")) {
    for (const auto& a : build.at("artifacts")) {
      if (a.at("kind") == "wheel") out.push_back(a);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("pypi-nvidia adds NVIDIA's wheels from the index it is given", "[cli][recipes][pypi]") {
  if (envkit::test::nginx_missing()) return;
  TempDir work;
  const auto db = (work.path() / "db").string();
  const auto imported = run_envkit({.args = {"--recipes", db, "recipes", "import", "nvidia-redist",
                                             fixture("nvidia", "redistrib_12.4.1.json").string(),
                                             fixture("nvidia", "redistrib_9.1.0.json").string()}});
  REQUIRE(imported.exit_code == 0);

  // A PEP 691 JSON page and a PEP 503 HTML page; every other project is a 404.
  const fs::path index = work.path() / "www" / "simple";
  fs::create_directories(index / "nvidia-cuda-runtime-cu12");
  fs::create_directories(index / "nvidia-cudnn-cu12");
  fs::copy_file(fixture("pypi", "nvidia-cuda-runtime-cu12.json"),
                index / "nvidia-cuda-runtime-cu12" / "index.json");
  fs::copy_file(fixture("pypi", "nvidia-cudnn-cu12.html"),
                index / "nvidia-cudnn-cu12" / "index.html");
  StaticHttpServer server(work.path() / "www");
  const std::string offline_before = read_pypi_text(work.path() / "db" / "cuda" / "12.4.1.yaml");

  const auto r = run_envkit({.args = {"--recipes", db, "recipes", "import", "pypi-nvidia",
                                      "--index", server.url("/simple/")}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("asking " + server.url("/simple/")));
  CHECK(fs::exists(work.path() / "db" / "pypi" / "cuda" / "12.4.1.yaml"));

  const auto cuda_wheels = wheels(db, "cuda", "12.4.1");
  // Only cudart has a page: its 12.4.127 wheels, one per platform.
  REQUIRE(cuda_wheels.size() == 3);
  for (const auto& w : cuda_wheels) {
    CHECK(w.at("component") == "cuda_cudart");
    CHECK(w.at("wheel_root") == "nvidia/cuda_runtime");
    CHECK(w.at("sha256").get<std::string>().size() == 64);
    CHECK_THAT(w.at("url").get<std::string>(),
               Catch::Contains("nvidia_cuda_runtime_cu12-12.4.127-"));
  }

  const auto cudnn_wheels = wheels(db, "cudnn", "9.1.0.70");
  std::vector<std::string> platforms;
  for (const auto& w : cudnn_wheels)
    platforms.push_back(w.at("platform"));
  // The yanked aarch64 upload is left out; the relative windows link resolves against the server.
  CHECK(platforms == std::vector<std::string>{"linux-x86_64", "windows-x86_64"});
  for (const auto& w : cudnn_wheels) {
    if (w.at("platform") == "windows-x86_64") {
      CHECK(w.at("url") ==
            server.url("/packages/bb/nvidia_cudnn_cu12-9.1.0.70-py3-none-win_amd64.whl"));
      CHECK(w.at("sha256") == std::string(64, 'b'));
    }
  }

  // The wheels live apart: the offline artifact file is byte for byte what it was.
  CHECK(read_pypi_text(work.path() / "db" / "cuda" / "12.4.1.yaml") == offline_before);
}

// Opt-in (ENVKIT_LIVE_TESTS=1): the real PyPI, read as `envkit recipes import pypi-jax` reads
// it (PEP 658 files where served, else HTTP ranges of the wheels); about 500 requests, a
// minute. Its output is recorded in docs/recipes.md.
TEST_CASE("live: pypi-jax finds jax 0.4.26's CUDA 12 build on PyPI", "[cli][recipes][pypi][live]") {
  if (envkit::test::live_tests_off("read jax's metadata from PyPI")) return;
  TempDir dir;
  const auto db = (dir.path() / "recipes").string();
  const auto imported = run_envkit({.args = {"--recipes", db, "recipes", "import", "pypi-jax",
                                             "--index", "https://pypi.org/simple/"},
                                    .env = {{"ENVKIT_INDEX_URL", std::nullopt}}});
  INFO(imported.err);
  REQUIRE(imported.exit_code == 0);
  CHECK_THAT(imported.err, Catch::Contains("jax 0.4.26: cuda12\n"));
  WARN(imported.err.substr(imported.err.rfind("\n", imported.err.size() - 2) + 1));
  const auto show = run_envkit({.args = {"--recipes", db, "recipes", "show", "jax", "0.4.26"}});
  INFO(show.err);
  REQUIRE(show.exit_code == 0);
  CHECK(show.out ==
        "jax 0.4.26 [cuda12]\n  requires cuda <13,>=12.1\n  requires cudnn <9.0,>=8.9.2.26\n"
        "  requires python <3.13,>=3.9\n  platforms linux-x86_64\n");
}
