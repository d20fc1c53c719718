// `envkit recipes ...` as recipe authors and users run it.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "support/envkit_runner.hpp"
#include "support/temp_dir.hpp"

using envkit::test::run_envkit;
using envkit::test::TempDir;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {
std::string fixture(const char* name) {
  return (envkit::test::test_data_dir() / "recipes" / "nvidia" / name).string();
}
std::string committed_recipes() {
  return (envkit::test::source_dir() / "recipes").string();
}
}  // namespace

TEST_CASE("recipes list and show answer in JSON as CLI.md says", "[cli][recipes]") {
  const auto list =
      run_envkit({.args = {"--recipes", committed_recipes(), "recipes", "list", "--json"}});
  REQUIRE(list.exit_code == 0);
  const auto packages = json::parse(list.out).at("packages");
  std::vector<std::string> names;
  for (const auto& p : packages)
    names.push_back(p.at("name"));
  CHECK(names == std::vector<std::string>{"cuda", "cudnn", "jax", "python", "tensorflow",
                                          "tensorflow-gpu", "torch", "zlib"});

  const auto show = run_envkit(
      {.args = {"--recipes", committed_recipes(), "recipes", "show", "cuda", "12.4.1", "--json"}});
  REQUIRE(show.exit_code == 0);
  const auto shown = json::parse(show.out);
  CHECK(shown.at("name") == "cuda");
  const auto& version = shown.at("versions").at(0);
  CHECK(version.at("version") == "12.4.1");
  CHECK(version.at("components").at("cuda_cudart") == "12.4.127");
  CHECK(version.at("system").at("min_driver").contains("linux-x86_64"));
  bool cudart_archive = false;
  for (const auto& a : version.at("artifacts")) {
    CHECK(a.at("sha256").get<std::string>().size() == 64);
    if (a.at("component") == "cuda_cudart" && a.at("kind") == "archive" &&
        a.at("platform") == "linux-x86_64") {
      cudart_archive = true;
      CHECK(a.at("url").get<std::string>().starts_with("https://developer.download.nvidia.com/"));
    }
  }
  CHECK(cudart_archive);

  // A requirement that applies on some platforms only says which.
  const auto cudnn = run_envkit({.args = {"--recipes", committed_recipes(), "recipes", "show",
                                          "cudnn", "9.1.0.70", "--json"}});
  REQUIRE(cudnn.exit_code == 0);
  for (const auto& build : json::parse(cudnn.out).at("versions")) {
    CHECK(build.at("requires").contains("zlib"));
    CHECK(build.at("requires_only_on").at("zlib") == json{"linux-x86_64", "linux-aarch64"});
  }

  const auto alias =
      run_envkit({.args = {"--recipes", committed_recipes(), "recipes", "show", "PyTorch", "2.1"}});
  CHECK(alias.exit_code == 0);
  CHECK_THAT(alias.out, Catch::Contains("torch 2.1.0 [cu121]"));
}

TEST_CASE("recipes show gives a runfile's era, components and patches", "[cli][recipes]") {
  const auto text = run_envkit(
      {.args = {"--recipes", committed_recipes(), "recipes", "show", "cuda", "9.0.176"}});
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out,
             Catch::Contains("    layout cuda-runfile-nested\n") &&
                 Catch::Contains("    components cuda_cudart, cuda_cupti, cuda_nvcc") &&
                 Catch::Contains("    patch 1 https://developer.nvidia.com/compute/cuda/9.0/Prod/"
                                 "patches/1/cuda_9.0.176.1_linux-run sha256 a4bf63e0") &&
                 Catch::Contains("    patch 4 https://developer.nvidia.com/compute/cuda/9.0/Prod/"
                                 "patches/4/cuda_9.0.176.4_linux-run sha256 9353d0c9"));

  const auto shown = run_envkit(
      {.args = {"--recipes", committed_recipes(), "recipes", "show", "cuda", "11.2.1", "--json"}});
  REQUIRE(shown.exit_code == 0);
  const auto parsed = json::parse(shown.out);
  const auto& runfile = parsed.at("versions").at(0).at("artifacts").at(0);
  CHECK(runfile.at("kind") == "runfile");
  CHECK(runfile.at("layout") == "cuda-runfile-builds");
  const auto components = runfile.at("components").get<std::vector<std::string>>();
  CHECK(components.front() == "cuda_cccl");  // its own folder from CUDA 11.0 on
  CHECK(components.size() == 10);
  CHECK_FALSE(runfile.contains("patches"));
}

TEST_CASE("recipes show names what is missing", "[cli][recipes]") {
  const auto r =
      run_envkit({.args = {"--recipes", committed_recipes(), "recipes", "show", "cudaa"}});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err,
             Catch::Contains("no recipe for `cudaa`") && Catch::Contains("did you mean `cuda`?"));
  const auto v =
      run_envkit({.args = {"--recipes", committed_recipes(), "recipes", "show", "cuda", "99.0"}});
  CHECK(v.exit_code == 2);
  CHECK_THAT(v.err, Catch::Contains("cuda has no version `99.0`"));
}

TEST_CASE("recipes check passes on the committed database", "[cli][recipes]") {
  const auto r = run_envkit({.args = {"--recipes", committed_recipes(), "recipes", "check"}});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("8 packages, consistent"));
  // Upstream names only http URLs for zlib's tarballs: pinned, so a warning each.
  CHECK_THAT(r.err, Catch::Contains("warning: zlib 1.3.1 ") &&
                        Catch::Contains("`http://zlib.net/fossils/zlib-1.3.1.tar.gz` is plain "
                                        "http: only its pinned sha256 guards it"));
  const auto as_json =
      run_envkit({.args = {"--recipes", committed_recipes(), "--json", "recipes", "check"}});
  CHECK(as_json.exit_code == 0);
  const json out = json::parse(as_json.out);
  CHECK(out.at("problems").empty());
  CHECK_FALSE(out.at("warnings").empty());
}

TEST_CASE("recipes check --json names each problem in one object, and exits 1", "[cli][recipes]") {
  TempDir dir;
  const auto db = (dir.path() / "db").string();
  // cuDNN 9.1 without the CUDA 11 it also builds for, and without zlib.
  REQUIRE(run_envkit({.args = {"--recipes", db, "recipes", "import", "nvidia-redist",
                               fixture("redistrib_12.4.1.json"), fixture("redistrib_9.1.0.json")}})
              .exit_code == 0);
  const auto r = run_envkit({.args = {"--recipes", db, "--json", "recipes", "check"}});
  CHECK(r.exit_code == 1);
  const json out = json::parse(r.out);  // one object: parse() refuses a second
  CHECK(out.at("exit_code") == 1);
  CHECK_THAT(out.at("error").get<std::string>(), Catch::Contains("has 3 problem(s)"));
  REQUIRE(out.at("problems").size() == 3);
  CHECK(out.at("problems").at(0).at("where") == "cudnn 9.1.0.70 cuda11");
  CHECK(out.at("problems").at(1).at("message") ==
        "requires zlib (any version), which no version of the database meets");
  CHECK_THAT(r.err, Catch::Contains("error: the recipe database"));
}

TEST_CASE("recipes import nvidia-redist writes a database with a mirror base URL",
          "[cli][recipes]") {
  TempDir dir;
  const auto db = (dir.path() / "db").string();
  const auto r =
      run_envkit({.args = {"--recipes", db, "recipes", "import", "nvidia-redist",
                           fixture("redistrib_12.4.1.json"), fixture("redistrib_9.1.0.json"),
                           "--base-url", "https://mirror.example/nvidia"}});
  REQUIRE(r.exit_code == 0);
  CHECK(fs::exists(dir.path() / "db" / "cuda.yaml"));
  CHECK(fs::exists(dir.path() / "db" / "cudnn.yaml"));
  const auto show = run_envkit({.args = {"--recipes", db, "recipes", "show", "cuda", "--json"}});
  REQUIRE(show.exit_code == 0);
  const json shown = json::parse(show.out);
  const auto& artifacts = shown.at("versions").at(0).at("artifacts");
  REQUIRE(artifacts.size() >= 3);
  for (const auto& a : artifacts) {
    CHECK_THAT(a.at("url").get<std::string>(), Catch::StartsWith("https://mirror.example/nvidia/"));
  }
  // A second import adds to the database instead of replacing it.
  const auto again = run_envkit({.args = {"--recipes", db, "recipes", "import", "nvidia-redist",
                                          fixture("redistrib_11.5.0.json")}});
  REQUIRE(again.exit_code == 0);
  const auto list = run_envkit({.args = {"--recipes", db, "recipes", "list", "cuda", "--json"}});
  CHECK(json::parse(list.out).at("packages").at(0).at("versions") ==
        json::array({"11.5.0", "12.4.1"}));
}

TEST_CASE("a malformed manifest is an input error naming the file", "[cli][recipes]") {
  TempDir dir;
  const auto bad = dir.write("redistrib_1.0.json", "{\"release_label\": \"1.0\",\n  oops}\n");
  const auto r = run_envkit({.args = {"--recipes", (dir.path() / "db").string(), "recipes",
                                      "import", "nvidia-redist", bad.string()}});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains(bad.string() + ":2:"));
}
