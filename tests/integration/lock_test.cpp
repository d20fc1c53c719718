// `envkit lock` as a user runs it: the real binary on temporary projects,
// solved against the source tree's recipe database, with the machines' facts
// stated (envkit.yaml `system:` or ENVKIT_OVERRIDE_*), never probed.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <regex>

#include "envkit/lock/lockfile.hpp"
#include "envkit/sys/fs.hpp"
#include "support/envkit_runner.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using envkit::test::run_envkit;
using envkit::test::TempDir;
using nlohmann::json;
using Env = std::map<std::string, std::optional<std::string>>;

// A machine without an NVIDIA driver (so without GPUs), whatever machine runs
// the tests; a manifest with a `system:` section does not read it.
const Env kNoDriver = {{"ENVKIT_OVERRIDE_DRIVER", "none"}};

std::string recipes_dir() {
  return (envkit::test::source_dir() / "recipes").string();
}

std::string read(const fs::path& path) {
  return envkit::sys::read_file(path).value();
}

// Runs `envkit --recipes <source tree>/recipes ARGS...` in `project`.
envkit::sys::ProcessOutput envkit_in(const fs::path& project, std::vector<std::string> args,
                                     Env env = kNoDriver) {
  std::vector<std::string> argv{"--recipes", recipes_dir()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_envkit({.args = argv, .cwd = project, .env = std::move(env), .stdin_data = {}});
}

// A project folder holding `manifest` as its envkit.yaml.
fs::path project(const TempDir& dir, std::string_view manifest, std::string name = "p") {
  dir.write(fs::path(name) / "envkit.yaml", manifest);
  return dir.path() / name;
}

json parsed_json(const std::string& out) {
  INFO(out);
  REQUIRE(json::accept(out));
  return json::parse(out);
}

// name -> "version (build)" (or "version" / "version (external)") of one
// platform of a `lock --json` answer.
std::map<std::string, std::string> chosen(const json& lock, const std::string& platform) {
  std::map<std::string, std::string> out;
  for (const auto& package : lock.at("packages")) {
    if (package.at("platform") != platform) continue;
    std::string text = package.at("version");
    if (!package.at("build").get<std::string>().empty()) {
      text += " (" + package.at("build").get<std::string>() + ")";
    }
    if (package.contains("external")) text += " (external)";
    out[package.at("name")] = text;
  }
  return out;
}

const json& package(const json& lock, const std::string& name, const std::string& platform) {
  for (const auto& p : lock.at("packages")) {
    if (p.at("name") == name && p.at("platform") == platform) return p;
  }
  FAIL("no " << name << " on " << platform << " in " << lock.dump());
  throw std::logic_error("unreachable");
}

const char* const kTorch24 = "framework: torch 2.4.*\nsystem: {driver: 535.104.05}\n";
const char* const kTf16OldDriver =
    "framework: tensorflow-gpu ==1.6.0\nexternal: {python: \"3.6.9\"}\n"
    "system: {driver: 375.26}\n";

}  // namespace

TEST_CASE("lock writes envkit.lock, and writes the same bytes again", "[cli][lock]") {
  TempDir dir;
  const auto p = project(dir, kTorch24);
  const auto first = envkit_in(p, {"lock"});
  CHECK(first.exit_code == 0);
  CHECK(first.out.empty());
  CHECK_THAT(first.err, Catch::StartsWith("locked linux-x86_64: cuda 12.1.1, cudnn 9.1.0.70 "
                                          "(cuda12), python 3.12.") &&
                            Catch::EndsWith(", torch 2.4.1 (cu121), zlib 1.3.1\n"));
  REQUIRE(fs::exists(p / "envkit.lock"));
  const auto text = read(p / "envkit.lock");
  CHECK_THAT(text, Catch::StartsWith("# envkit.lock: written by `envkit lock` from envkit.yaml."));
  CHECK_THAT(text, Catch::Contains("\nsystem:\n  source: manifest\n  driver: \"535.104.05\"\n"
                                   "platforms:\n  - platform: linux-x86_64\n"));

  const auto second = envkit_in(p, {"lock"});
  CHECK(second.exit_code == 0);
  CHECK(second.err == first.err);
  CHECK(read(p / "envkit.lock") == text);

  // What was written is a lock envkit reads back, with what was chosen.
  const auto lock = envkit::lock::load(p / "envkit.lock");
  INFO((lock ? std::string() : lock.error().to_string()));
  REQUIRE(lock.ok());
  CHECK(envkit::lock::write(*lock) == text);
  REQUIRE(lock->platforms.size() == 1);
  std::map<std::string, std::string> versions;
  for (const auto& locked : lock->platforms[0].packages) {
    versions[locked.name] = locked.version.original() + "/" + locked.build;
    CAPTURE(locked.name);
    // What envkit installs has artifacts; the framework itself comes from pip.
    CHECK(locked.artifacts.empty() == (locked.name == "torch"));
    CHECK_FALSE(locked.external.has_value());
  }
  CHECK(versions.at("torch") == "2.4.1/cu121");
  CHECK(versions.at("cuda") == "12.1.1/");
  CHECK(versions.at("cudnn") == "9.1.0.70/cuda12");
  CHECK(lock->recipes.count("cuda") == 1);
  CHECK(lock->recipes.count("torch") == 1);
}

TEST_CASE("lock -C DIR locks the project in DIR", "[cli][lock]") {
  TempDir dir;
  const auto p = project(dir, kTorch24);
  const auto r = run_envkit({.args = {"--recipes", recipes_dir(), "-C", p.string(), "lock"},
                             .cwd = dir.path(),
                             .env = kNoDriver,
                             .stdin_data = {}});
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(p / "envkit.lock"));
  CHECK_FALSE(fs::exists(dir.path() / "envkit.lock"));
}

TEST_CASE("lock chooses the stack a GPU user expects", "[cli][lock]") {
  using Expected = std::map<std::string, std::string>;
  const auto [manifest, expected] = GENERATE(table<std::string, Expected>({
      // The build the driver runs natively, with the CUDA and cuDNN it was tested with.
      {"framework: torch 2.4.*\nsystem: {driver: 535.104.05}\n",
       {{"torch", "2.4.1 (cu121)"}, {"cuda", "12.1.1"}, {"cudnn", "9.1.0.70 (cuda12)"}}},
      // A driver too old for CUDA 12 with PyTorch's cu118 index listed: the cu118 build and
      // CUDA 11.8. With PyPI alone (its torch 2.1 is the cu121 build) a user gets an error
      // whose hints hold: lock_closure_test.cpp, "torch 2.1 on a driver too old for CUDA 12".
      {"framework: torch 2.1.*\nindexes: [https://pypi.org/simple, "
       "https://download.pytorch.org/whl/cu118]\nsystem: {driver: 520.61.05}\n",
       {{"torch", "2.1.2 (cu118)"}, {"cuda", "11.8.0"}}},
      // Pascal GPUs: the newest torch whose PyPI build still has code for sm_61 (2.7.1 cu126;
      // PyPI's 2.8 … 2.10 are cu128 builds from sm_70 up, read from their libtorch_cuda.so,
      // and 2.11 and later CUDA 13 builds, which dropped it).
      {"framework: torch\nsystem: {driver: \">=580.65.06\", cuda-arch: [\"6.1\"]}\n",
       {{"torch", "2.7.1 (cu126)"}, {"cuda", "12.6.3"}}},
      // tensorflow-gpu 1.6 on the machine's Python 3.6.9: CUDA 9.0, Python not installed.
      {"framework: tensorflow-gpu ==1.6.0\nexternal: {python: \"3.6.9\"}\n"
       "system: {driver: 390.48}\n",
       {{"tensorflow-gpu", "1.6.0 (cuda9.0)"},
        {"cuda", "9.0.176"},
        {"python", "3.6.9 (external)"}}},
  }));
  CAPTURE(manifest);
  TempDir dir;
  const auto p = project(dir, manifest);
  const auto r = envkit_in(p, {"lock", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto lock = parsed_json(r.out);
  const auto got = chosen(lock, "linux-x86_64");
  for (const auto& [name, version] : expected) {
    CAPTURE(name);
    REQUIRE(got.count(name) == 1);
    CHECK(got.at(name) == version);
  }
  // The lock on disk says the same.
  const auto text = read(p / "envkit.lock");
  for (const auto& [name, version] : expected) {
    CHECK_THAT(text, Catch::Contains("      - name: " + name + "\n        version: \"" +
                                     version.substr(0, version.find(' ')) + "\"\n"));
  }
}

TEST_CASE("lock: Pascal GPUs get a torch build with code for them", "[cli][lock]") {
  TempDir dir;
  const auto p =
      project(dir, "framework: torch\nsystem: {driver: \">=580.65.06\", cuda-arch: [\"6.1\"]}\n");
  const auto r = envkit_in(p, {"lock", "--json"});
  REQUIRE(r.exit_code == 0);
  const auto lock = parsed_json(r.out);
  const auto& torch = package(lock, "torch", "linux-x86_64");
  // PyPI's torch 2.8 … 2.10 (cu128) have SASS from sm_70 up and no PTX, 2.11 and later are
  // CUDA 13 builds, without sm_61: 2.7.1 is the newest (upstream/pytorch-build-scripts).
  CHECK(torch.at("version") == "2.7.1");
  CHECK(torch.at("build") == "cu126");
  CHECK_THAT(read(p / "envkit.lock"),
             Catch::Contains("  driver: \">=580.65.06\"\n  cuda-arch: [\"6.1\"]\n"));
}

TEST_CASE("an external package is locked without artifacts", "[cli][lock]") {
  TempDir dir;
  const auto p = project(dir,
                         "framework: tensorflow-gpu ==1.6.0\nexternal: {python: \"3.6.9\"}\n"
                         "system: {driver: 390.48}\n");
  const auto r = envkit_in(p, {"lock", "--json"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("python 3.6.9 (provided by the machine)"));
  const auto lock = parsed_json(r.out);
  CHECK(package(lock, "python", "linux-x86_64").at("artifacts").empty());
  CHECK_FALSE(package(lock, "cuda", "linux-x86_64").at("artifacts").empty());
  CHECK_THAT(read(p / "envkit.lock"),
             Catch::Contains("      - name: python\n        version: \"3.6.9\"\n"
                             "        external: \"3.6.9\"\n      - name: tensorflow-gpu\n"));
}

TEST_CASE("lock --json has the shape CLI.md gives", "[cli][lock]") {
  TempDir dir;
  const auto p = project(dir, kTorch24);
  const auto r = envkit_in(p, {"lock", "--json"});
  REQUIRE(r.exit_code == 0);
  const auto lock = parsed_json(r.out);
  CHECK(lock.at("platforms") == json{"linux-x86_64"});
  REQUIRE(lock.at("packages").is_array());
  CHECK(lock.at("packages").size() == 5);
  const std::regex hex64("^[0-9a-f]{64}$");
  std::size_t artifacts = 0;
  for (const auto& pkg : lock.at("packages")) {
    CAPTURE(pkg.dump());
    CHECK(pkg.at("name").is_string());
    CHECK(pkg.at("version").is_string());
    CHECK(pkg.at("platform") == "linux-x86_64");
    REQUIRE(pkg.at("artifacts").is_array());
    for (const auto& a : pkg.at("artifacts")) {
      ++artifacts;
      const std::string url = a.at("url");
      CHECK((url.starts_with("https://") || url.starts_with("http://")));
      CHECK(std::regex_match(a.at("sha256").get<std::string>(), hex64));
      CHECK((a.at("size").is_number_unsigned() || a.at("size").is_null()));
    }
  }
  CHECK(artifacts > 10);
  // The same artifacts as the lock file.
  const auto text = read(p / "envkit.lock");
  for (const auto& pkg : lock.at("packages")) {
    for (const auto& a : pkg.at("artifacts")) {
      CHECK_THAT(text, Catch::Contains("url: " + a.at("url").get<std::string>() + "\n") &&
                           Catch::Contains("sha256: \"" + a.at("sha256").get<std::string>()));
    }
  }
}

TEST_CASE("an unsatisfiable manifest: exit 1, an explanation, a true hint, no lock",
          "[cli][lock]") {
  TempDir dir;
  const auto p = project(dir, kTf16OldDriver);
  const auto r = envkit_in(p, {"lock"});
  CHECK(r.exit_code == 1);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::StartsWith("error: no environment satisfies envkit.yaml on "
                                      "linux-x86_64\n"));
  CHECK_THAT(r.err, Catch::Contains("requires an NVIDIA driver >=384.81") &&
                        Catch::Contains("375.26") &&
                        Catch::Contains("\nhint: upgrade the NVIDIA driver to >= 384.81"));
  CHECK_FALSE(fs::exists(p / "envkit.lock"));

  const auto as_json = envkit_in(p, {"lock", "--json"});
  CHECK(as_json.exit_code == 1);
  const auto answer = parsed_json(as_json.out);
  CHECK(answer.at("error") == "unsatisfiable");
  const auto& explanation = answer.at("explanation");
  REQUIRE(explanation.is_array());
  REQUIRE_FALSE(explanation.empty());
  std::string all;
  for (const auto& line : explanation)
    all += line.get<std::string>() + "\n";
  CHECK_THAT(all,
             Catch::Contains("requires an NVIDIA driver >=384.81") && Catch::Contains("375.26"));
  CHECK_FALSE(fs::exists(p / "envkit.lock"));

  // The hint holds: with that driver the same project locks.
  dir.write("p/envkit.yaml",
            "framework: tensorflow-gpu ==1.6.0\nexternal: {python: \"3.6.9\"}\n"
            "system: {driver: 384.81}\n");
  const auto fixed = envkit_in(p, {"lock"});
  CHECK(fixed.exit_code == 0);
  CHECK_THAT(fixed.err, Catch::Contains("cuda 9.0.176"));
}

TEST_CASE("a failed lock leaves the existing envkit.lock as it was", "[cli][lock]") {
  TempDir dir;
  const auto p = project(dir, kTorch24);
  REQUIRE(envkit_in(p, {"lock"}).exit_code == 0);
  const auto before = read(p / "envkit.lock");
  dir.write("p/envkit.yaml", kTf16OldDriver);
  CHECK(envkit_in(p, {"lock"}).exit_code == 1);
  CHECK(read(p / "envkit.lock") == before);
}

TEST_CASE("requiring CUDA 13 on Pascal GPUs says CUDA 13 dropped them", "[cli][lock]") {
  TempDir dir;
  const auto p =
      project(dir, "framework: torch\nrequires: {cuda: \"13\"}\nsystem: {cuda-arch: [\"6.1\"]}\n");
  const auto r = envkit_in(p, {"lock"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("cuda ==13.* dropped sm_61"));
  CHECK_THAT(r.err, Catch::Contains("hint: GPUs with compute capability 6.1 are supported up to "
                                    "cuda 12."));
  CHECK_FALSE(fs::exists(p / "envkit.lock"));
}

TEST_CASE("tensorflow-gpu 1.15 gets Python 3.7, built from python.org's tarball", "[cli][lock]") {
  TempDir dir;
  const auto p = project(dir, "framework: tensorflow-gpu ==1.15.*\nsystem: {driver: 410.48}\n");
  const auto r = envkit_in(p, {"lock", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto lock = parsed_json(r.out);
  const auto got = chosen(lock, "linux-x86_64");
  CHECK(got.at("tensorflow-gpu") == "1.15.5 (cuda10.0)");  // PyPI's last 1.15 release
  // tensorflow-gpu 1.15 requires python <3.8: the newest 3.7, which only pyenv's
  // definitions have (python-build-standalone has no hashed 3.7).
  CHECK(got.at("python") == "3.7.17");
  const auto& python = package(lock, "python", "linux-x86_64");
  REQUIRE(python.at("artifacts").size() == 1);
  const auto& artifact = python.at("artifacts").at(0);
  CHECK(artifact.at("kind") == "source");
  CHECK(artifact.at("url") == "https://www.python.org/ftp/python/3.7.17/Python-3.7.17.tar.xz");
  CHECK(artifact.at("sha256") ==
        "7911051ed0422fd54b8f59ffc030f7cf2ae30e0f61bda191800bb040dce4f9d2");
  // The lock on disk says how install builds it.
  CHECK_THAT(read(p / "envkit.lock"),
             Catch::Contains("            layout: source-tree\n            build-system: cpython\n"
                             "            url: https://www.python.org/ftp/python/3.7.17/"));
}

TEST_CASE("a pinned python ==3.8.5 is locked exactly, from a full standalone archive",
          "[cli][lock]") {
  TempDir dir;
  const auto p = project(dir,
                         "framework: torch 1.7.*\nrequires: {python: \"==3.8.5\"}\n"
                         "system: {driver: 455.23.05}\n");
  const auto r = envkit_in(p, {"lock", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto lock = parsed_json(r.out);
  CHECK(chosen(lock, "linux-x86_64").at("python") == "3.8.5");
  const auto& artifact = package(lock, "python", "linux-x86_64").at("artifacts").at(0);
  CHECK(artifact.at("kind") == "archive");
  CHECK(artifact.at("sha256") ==
        "30841db814a7837780b7161b13ad94e4da5a5425c054cedceb07052abf20c4c2");
  CHECK_THAT(read(p / "envkit.lock"),
             Catch::Contains("            layout: python-standalone-full\n"));
}

TEST_CASE("tensorflow-gpu 1.6 gets a Python 3.6 it supports, built from source", "[cli][lock]") {
  TempDir dir;
  const auto p = project(dir, "framework: tensorflow-gpu ==1.6.0\nsystem: {driver: 390.48}\n");
  const auto r = envkit_in(p, {"lock", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto lock = parsed_json(r.out);
  CHECK(chosen(lock, "linux-x86_64").at("python") == "3.6.15");
  CHECK(package(lock, "python", "linux-x86_64").at("artifacts").at(0).at("kind") == "source");
}

TEST_CASE("a Python the database lacks points at external:", "[cli][lock]") {
  TempDir dir;
  const auto p = project(dir,
                         "framework: tensorflow-gpu ==1.6.0\nrequires: {python: \"<3.5\"}\n"
                         "system: {driver: 390.48}\n");
  const auto r = envkit_in(p, {"lock", "--json"});
  CHECK(r.exit_code == 1);
  const auto answer = parsed_json(r.out);
  CHECK(answer.at("error") == "unsatisfiable");
  std::string explanation;
  for (const auto& line : answer.at("explanation"))
    explanation += line.get<std::string>();
  CHECK_THAT(explanation, Catch::Contains("python"));
  std::string hints;
  for (const auto& line : answer.at("hints"))
    hints += line.get<std::string>();
  CHECK_THAT(hints, Catch::Contains("external:"));
  CHECK_THAT(r.err, Catch::Contains("\nhint: ") && Catch::Contains("external: {python:"));
}

TEST_CASE("lock --check says whether envkit.lock is current, and never writes", "[cli][lock]") {
  TempDir dir;
  const auto p = project(dir, kTorch24);

  const auto missing = envkit_in(p, {"lock", "--check"});
  CHECK(missing.exit_code == 1);
  CHECK_THAT(missing.err, Catch::Contains("envkit.lock does not exist") &&
                              Catch::Contains("hint: run `envkit lock`"));
  CHECK_FALSE(fs::exists(p / "envkit.lock"));

  REQUIRE(envkit_in(p, {"lock"}).exit_code == 0);
  const auto locked = read(p / "envkit.lock");
  const auto current = envkit_in(p, {"lock", "--check"});
  CHECK(current.exit_code == 0);
  CHECK(current.err == "envkit.lock is up to date\n");

  SECTION("comments, key order and flow/block style do not make it stale") {
    dir.write("p/envkit.yaml",
              "# the project\nsystem:\n  driver: 535.104.05   # the fleet's driver\n"
              "framework: \"torch 2.4.*\"\n");
    const auto r = envkit_in(p, {"lock", "--check"});
    CHECK(r.exit_code == 0);
    CHECK(r.err == "envkit.lock is up to date\n");
  }
  SECTION("a different framework spec makes it stale") {
    dir.write("p/envkit.yaml", "framework: torch 2.3.*\nsystem: {driver: 535.104.05}\n");
    const auto r = envkit_in(p, {"lock", "--check"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::StartsWith("error: envkit.lock is out of date\n") &&
                          Catch::Contains("manifest changed") &&
                          Catch::Contains("hint: run `envkit lock` to update it"));
  }
  SECTION("a different driver in system: makes it stale") {
    dir.write("p/envkit.yaml", "framework: torch 2.4.*\nsystem: {driver: 550.54.15}\n");
    CHECK(envkit_in(p, {"lock", "--check"}).exit_code == 1);
  }
  SECTION("another platform asked for makes it stale") {
    const auto r = envkit_in(p, {"lock", "--check", "--platform", "windows-x86_64"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("linux-x86_64") && Catch::Contains("windows-x86_64"));
  }
  // Whatever --check found, the lock is as `envkit lock` wrote it.
  CHECK(read(p / "envkit.lock") == locked);
}

TEST_CASE("lock --check notices an edited recipe", "[cli][lock]") {
  TempDir dir;
  const auto recipes = dir.path() / "recipes";
  fs::copy(recipes_dir(), recipes, fs::copy_options::recursive);
  const auto p = project(dir, kTorch24);
  const auto in_copy = [&](std::vector<std::string> args) {
    std::vector<std::string> argv{"--recipes", recipes.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_envkit({.args = argv, .cwd = p, .env = kNoDriver, .stdin_data = {}});
  };
  REQUIRE(in_copy({"lock"}).exit_code == 0);
  const auto locked = read(p / "envkit.lock");
  REQUIRE(in_copy({"lock", "--check"}).exit_code == 0);

  // One byte more in cudnn's facts file, even a comment: the lock no longer
  // records the database it was made from.
  dir.write("recipes/cudnn.yaml", read(recipes / "cudnn.yaml") + "#\n");
  const auto stale = in_copy({"lock", "--check"});
  CHECK(stale.exit_code == 1);
  CHECK_THAT(stale.err, Catch::Contains("recipe `cudnn` changed in the recipe database"));
  CHECK_THAT(stale.err, !Catch::Contains("`torch`") && !Catch::Contains("`cuda`"));
  CHECK(read(p / "envkit.lock") == locked);

  // Locking again records the new database; nothing chosen changed.
  REQUIRE(in_copy({"lock"}).exit_code == 0);
  CHECK(in_copy({"lock", "--check"}).exit_code == 0);
  const auto relocked = read(p / "envkit.lock");
  CHECK(relocked != locked);
  CHECK(relocked.substr(relocked.find("\nsystem:")) == locked.substr(locked.find("\nsystem:")));
}

TEST_CASE("a lock solved with one machine's facts states the driver it needs, not that machine's",
          "[cli][lock]") {
  TempDir dir;
  const auto p = project(dir, "framework: torch 2.4.*\n");
  const Env machine = {{"ENVKIT_OVERRIDE_DRIVER", "535.104.05"},
                       {"ENVKIT_OVERRIDE_CUDA_ARCH", "8.0"}};
  const auto r = envkit_in(p, {"lock"}, machine);
  REQUIRE(r.exit_code == 0);
  const auto locked = read(p / "envkit.lock");
  // CUDA 12.x runs on 525.60.13 and newer (minor-version compatibility).
  CHECK_THAT(locked, Catch::Contains("\nsystem:\n  source: override\n  driver: \">=525.60.13\"\n"));
  CHECK_THAT(locked, !Catch::Contains("535.104.05"));
  CHECK(envkit_in(p, {"lock", "--check"}, machine).exit_code == 0);

  // Another machine with a newer driver: the committed lock is current there.
  const Env newer = {{"ENVKIT_OVERRIDE_DRIVER", "550.54.15"}, {"ENVKIT_OVERRIDE_CUDA_ARCH", "9.0"}};
  CHECK(envkit_in(p, {"lock", "--check"}, newer).exit_code == 0);

  // A machine whose driver is older than the lock needs is refused before anything is fetched.
  const auto old = envkit_in(p, {"install", "--locked"}, {{"ENVKIT_OVERRIDE_DRIVER", "470.57.02"}});
  CHECK(old.exit_code == 1);
  CHECK_THAT(old.err, Catch::Contains("470.57.02 is older than envkit.lock needs") &&
                          Catch::Contains(">=525.60.13"));
  CHECK(read(p / "envkit.lock") == locked);
}

TEST_CASE("a lock for several platforms holds each platform's own artifacts", "[cli][lock]") {
  TempDir dir;
  // PyPI's Windows wheels are CPU builds: Windows' CUDA build comes from PyTorch's index
  // (lock_closure_test.cpp: with PyPI alone, Windows has no environment).
  const auto p =
      project(dir,
              "framework: torch 2.12.*\n"
              "platforms: [linux-x86_64, linux-aarch64, windows-x86_64]\n"
              "indexes: [https://pypi.org/simple, https://download.pytorch.org/whl/cu130]\n"
              "system: {driver: 580.65.06}\n");
  const auto r = envkit_in(p, {"lock", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("locked linux-aarch64: ") &&
                        Catch::Contains("\nlocked linux-x86_64: ") &&
                        Catch::Contains("\nlocked windows-x86_64: "));
  const auto lock = parsed_json(r.out);
  CHECK(lock.at("platforms") == json{"linux-aarch64", "linux-x86_64", "windows-x86_64"});
  for (const auto& platform : {"linux-x86_64", "linux-aarch64", "windows-x86_64"}) {
    CAPTURE(platform);
    const auto got = chosen(lock, platform);
    CHECK(got.at("torch").starts_with("2.12."));
    CHECK(got.count("cuda") == 1);
    CHECK(got.count("cudnn") == 1);
    CHECK(got.count("python") == 1);
  }
  CHECK(
      package(lock, "torch", "linux-aarch64").at("build").get<std::string>().ends_with("-aarch64"));
  // cuDNN 9 needs zlib on Linux only.
  CHECK(chosen(lock, "linux-aarch64").count("zlib") == 1);
  CHECK(chosen(lock, "windows-x86_64").count("zlib") == 0);

  std::map<std::string, int> nvidia_archives;
  for (const auto& pkg : lock.at("packages")) {
    const std::string platform = pkg.at("platform");
    for (const auto& a : pkg.at("artifacts")) {
      const std::string url = a.at("url");
      CAPTURE(platform, url);
      if (a.at("kind") == "source") continue;  // zlib's tarball serves every platform
      if (url.starts_with("https://developer.download.nvidia.com/")) ++nvidia_archives[platform];
      if (platform == "linux-aarch64") {
        CHECK((url.find("linux-sbsa") != std::string::npos ||
               url.find("aarch64") != std::string::npos));
        CHECK(url.find("x86_64") == std::string::npos);
      } else if (platform == "windows-x86_64") {
        CHECK((url.find("windows") != std::string::npos ||
               url.find("win_amd64") != std::string::npos));
        CHECK(url.find("linux") == std::string::npos);
      } else {
        CHECK(url.find("x86_64") != std::string::npos);
        CHECK(url.find("sbsa") == std::string::npos);
        CHECK(url.find("aarch64") == std::string::npos);
        CHECK(url.find("windows") == std::string::npos);
      }
      if (platform == "linux-aarch64" &&
          url.starts_with("https://developer.download.nvidia.com/")) {
        CHECK(url.find("/linux-sbsa/") != std::string::npos);
      }
    }
  }
  CHECK(nvidia_archives["linux-aarch64"] > 0);
  CHECK(nvidia_archives["linux-x86_64"] > 0);
  CHECK(nvidia_archives["windows-x86_64"] > 0);

  const auto text = read(p / "envkit.lock");
  const auto aarch64 = text.find("  - platform: linux-aarch64\n");
  const auto x86_64 = text.find("  - platform: linux-x86_64\n");
  const auto windows = text.find("  - platform: windows-x86_64\n");
  CHECK(aarch64 != std::string::npos);
  CHECK(aarch64 < x86_64);
  CHECK(x86_64 < windows);
  CHECK(windows != std::string::npos);
}

TEST_CASE("lock --platform locks the platforms named, not the manifest's", "[cli][lock]") {
  TempDir dir;
  const auto p = project(dir, "framework: torch 2.12.*\nsystem: {driver: 580.65.06}\n");
  const auto r = envkit_in(p, {"lock", "--platform", "linux-aarch64", "--json"});
  REQUIRE(r.exit_code == 0);
  CHECK(parsed_json(r.out).at("platforms") == json{"linux-aarch64"});
  CHECK_THAT(read(p / "envkit.lock"), !Catch::Contains("platform: linux-x86_64"));

  const auto bad = envkit_in(p, {"lock", "--platform", "linux-sbsa"});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("`linux-sbsa`"));
}

TEST_CASE("a platform without builds is unsatisfiable, naming it", "[cli][lock]") {
  TempDir dir;
  const auto p = project(dir,
                         "framework: torch 2.4.*\nplatforms: [linux-x86_64, linux-aarch64]\n"
                         "system: {driver: 535.104.05}\n");
  const auto r = envkit_in(p, {"lock"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::StartsWith("error: no environment satisfies envkit.yaml on "
                                      "linux-aarch64\n") &&
                        Catch::Contains("has no linux-aarch64 build"));
  CHECK_FALSE(fs::exists(p / "envkit.lock"));
}

TEST_CASE("no driver known: lock warns and locks without a driver constraint", "[cli][lock]") {
  TempDir dir;
  const auto p = project(dir, "framework: torch 2.4.*\n");
  const auto r = envkit_in(p, {"lock"}, {{"ENVKIT_OVERRIDE_DRIVER", "none"}});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::StartsWith("warning: no NVIDIA driver") &&
                        Catch::Contains("no driver constraint") && Catch::Contains("system:"));
  CHECK_THAT(r.err, Catch::Contains("\nlocked linux-x86_64: "));
  const auto text = read(p / "envkit.lock");
  const auto system =
      text.substr(text.find("\nsystem:\n"), text.find("\nplatforms:") - text.find("\nsystem:\n"));
  // What the locked CUDA needs of the machines that install it.
  CHECK_THAT(system, Catch::Contains("driver: \">="));

  // A manifest that states the driver gets no warning.
  dir.write("p/envkit.yaml", kTorch24);
  const auto stated = envkit_in(p, {"lock"}, {{"ENVKIT_OVERRIDE_DRIVER", "none"}});
  CHECK(stated.exit_code == 0);
  CHECK_THAT(stated.err, !Catch::Contains("warning:"));
}

TEST_CASE("lock: input errors are exit 2 with file:line:column", "[cli][lock]") {
  TempDir dir;
  SECTION("malformed envkit.yaml") {
    const auto p = project(dir, "framework: torch 2.4.*\nsystem: {driver: \"535.104.05\"\n");
    const auto r = envkit_in(p, {"lock"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("envkit.yaml:2:") && Catch::Contains("invalid YAML"));
    CHECK_FALSE(fs::exists(p / "envkit.lock"));
  }
  SECTION("an unquoted >= specifier") {
    const auto p = project(dir, "framework: torch 2.4.*\nrequires:\n  cuda: >=12.1\n");
    const auto r = envkit_in(p, {"lock"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("envkit.yaml:3:9: `>=12.1` must be quoted"));
  }
  SECTION("no envkit.yaml") {
    fs::create_directories(dir.path() / "empty");
    const auto r = envkit_in(dir.path() / "empty", {"lock"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("envkit.yaml does not exist") &&
                          Catch::Contains("hint: run `envkit init`"));
    CHECK_FALSE(fs::exists(dir.path() / "empty" / "envkit.lock"));
  }
  SECTION("a corrupted envkit.lock with --check") {
    const auto p = project(dir, kTorch24);
    REQUIRE(envkit_in(p, {"lock"}).exit_code == 0);
    auto text = read(p / "envkit.lock");
    const auto at = text.find("manifest-hash:");
    REQUIRE(at != std::string::npos);
    text.replace(at, 14, "manifest-hsh:");
    dir.write("p/envkit.lock", text);
    const auto r = envkit_in(p, {"lock", "--check"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::StartsWith("error: envkit.lock:4:1: unknown key `manifest-hsh`\n") &&
                          Catch::Contains("did you mean `manifest-hash`?"));
    CHECK(read(p / "envkit.lock") == text);
  }
}

TEST_CASE("lock: releases the tables lack and the installable CUDA (issue 17)", "[cli][lock]") {
  TempDir dir;
  SECTION("tensorflow 2.12.1, a patch release PyPI has") {
    const auto p =
        project(dir, "framework: tensorflow ==2.12.1\nsystem: {driver: 535.104.05, glibc: 2.31}\n");
    const auto locked = envkit_in(p, {"lock"});
    CHECK(locked.exit_code == 0);
    CHECK_THAT(locked.err,
               Catch::Contains("cuda 11.8.0") && Catch::Contains("tensorflow 2.12.1 (cuda11.8)"));
  }
  SECTION("tensorflow 2.10 on driver 470: the CUDA 11.2.1 it was tested with, from its runfile") {
    const auto p = project(dir, "framework: tensorflow ==2.10.*\nsystem: {driver: 470.57.02}\n");
    const auto locked = envkit_in(p, {"lock"});
    CHECK(locked.exit_code == 0);
    CHECK_THAT(locked.err, Catch::Contains("cuda 11.2.1,"));
    const auto lock_text = read(p / "envkit.lock");
    CHECK_THAT(lock_text, Catch::Contains("            kind: runfile\n") &&
                              Catch::Contains("            layout: cuda-runfile-builds\n") &&
                              Catch::Contains("            components: [cuda_cccl, cuda_cudart,"));
    const auto why = envkit_in(p, {"why", "cuda"});
    CHECK_THAT(why.out + why.err,
               Catch::Contains("was tested with cuda 11.2") && !Catch::Contains("runfile"));
    CHECK(why.exit_code == 0);
  }
  SECTION("a machine whose glibc is older than the wheels need is refused in those words") {
    const auto p =
        project(dir, "framework: tensorflow ==2.12.1\nsystem: {driver: 535.104.05, glibc: 2.12}\n");
    const auto locked = envkit_in(p, {"lock"});
    CHECK(locked.exit_code == 1);
    CHECK_THAT(locked.err, Catch::Contains("glibc >=2.17 (its manylinux wheels)") &&
                               Catch::Contains("the machines' glibc is 2.12"));
    CHECK_FALSE(fs::exists(p / "envkit.lock"));
  }
}

// jax's builds come from recipes/pypi/jax.yaml, read from its wheels' METADATA.
TEST_CASE("lock: a project pinning jax 0.4.26 gets the CUDA 12 stack jax's metadata states",
          "[cli][lock][jax]") {
  // `jax[cuda12]` asks for the CUDA build by name; plain `jax` gets one as every framework does.
  const std::string requirement = GENERATE("jax[cuda12]==0.4.26", "jax==0.4.26");
  CAPTURE(requirement);
  TempDir dir;
  dir.write("p/requirements.txt", requirement + "\nnumpy\n");
  const auto p = dir.path() / "p";
  const auto init = envkit_in(p, {"init"});
  INFO(init.err);
  REQUIRE(init.exit_code == 0);
  CHECK_THAT(read(p / "envkit.yaml"), Catch::Contains("\nframework: jax ==0.4.26\n"));
  // The machine: a driver for CUDA 12.2, an A100 (as `--driver`/`--gpu` would state them).
  const Env machine = {{"ENVKIT_OVERRIDE_DRIVER", "535.104.05"},
                       {"ENVKIT_OVERRIDE_CUDA_ARCH", "8.0"}};
  const auto r = envkit_in(p, {"lock", "--json"}, machine);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto got = chosen(parsed_json(r.out), "linux-x86_64");
  CHECK(got.at("jax") == "0.4.26 (cuda12)");
  // cuda <13,>=12.1 (nvidia-cuda-runtime-cu12 >=12.1.105), the newest the driver runs natively.
  CHECK(got.at("cuda") == "12.2.2");
  // cudnn <9.0,>=8.9.2.26 (nvidia-cudnn-cu12): the newest 8.9.
  CHECK(got.at("cudnn") == "8.9.7.29 (cuda12)");
  // python <3.13,>=3.9: jax-cuda12-plugin 0.4.26 has wheels up to cp312.
  CHECK_THAT(got.at("python"), Catch::StartsWith("3.12."));
}

TEST_CASE("lock: jax 0.4.26 on a driver older than CUDA 12 explains itself", "[cli][lock][jax]") {
  TempDir dir;
  const auto p = project(dir, "framework: jax ==0.4.26\nsystem: {driver: 470.57.02}\n");
  const auto r = envkit_in(p, {"lock"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("jax") && Catch::Contains("cuda <13,>=12.1") &&
                        Catch::Contains("470.57.02"));
  CHECK_FALSE(fs::exists(p / "envkit.lock"));
}

TEST_CASE("lock: jax's cuda12 and cuda13 builds are both on PyPI and the driver chooses",
          "[cli][lock][jax]") {
  using Expected = std::pair<std::string, std::string>;
  const auto [driver, expected] = GENERATE(table<std::string, Expected>({
      {"535.104.05", {"0.7.2 (cuda12)", "12.2.2"}},
      {"580.65.06", {"0.7.2 (cuda13)", "13.0.0"}},
  }));
  CAPTURE(driver);
  TempDir dir;
  const auto p = project(dir, "framework: jax ==0.7.2\n");
  const auto r = envkit_in(p, {"lock", "--json"}, {{"ENVKIT_OVERRIDE_DRIVER", driver}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto got = chosen(parsed_json(r.out), "linux-x86_64");
  CHECK(got.at("jax") == expected.first);
  CHECK(got.at("cuda") == expected.second);
}

TEST_CASE("lock writes the same bytes with the recipe cache empty, filled, damaged or unusable",
          "[cli][lock][recipe-cache]") {
  TempDir dir;
  // manifests/two-platforms (the slowest reference lock before the cache), with PyTorch's
  // cu126 index, which serves Windows a CUDA build.
  const std::string manifest =
      "framework: torch 2.12.*\nplatforms: [linux-x86_64, windows-x86_64]\n"
      "indexes: [https://pypi.org/simple, https://download.pytorch.org/whl/cu126]\n"
      "system:\n  driver: \">=560.94\"\n  cuda-arch: [\"8.6\"]\n";
  const auto p = project(dir, manifest);
  const auto cache = dir.path() / "cache";
  const auto lock_with = [&](const fs::path& cache_dir) {
    fs::remove(p / "envkit.lock");
    auto run = envkit_in(p, {"--cache-dir", cache_dir.string(), "lock"});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    return run.err + "\n" + read(p / "envkit.lock");
  };
  // Without it: a cache folder that cannot be made (a file is there).
  const auto unusable = dir.write("not-a-folder", "");
  const auto expected = lock_with(unusable);
  CHECK(fs::is_regular_file(unusable));

  CHECK(lock_with(cache) == expected);  // parses, fills the cache
  std::vector<fs::path> entries;
  for (const auto& entry : fs::recursive_directory_iterator(cache / "recipes")) {
    if (entry.path().extension() == ".bin") entries.push_back(entry.path());
  }
  // The facts of cuda, cudnn, python, torch, zlib and each locked version's files.
  CHECK(entries.size() >= 8);
  CHECK(lock_with(cache) == expected);  // read from the cache

  for (const auto& entry : entries) {
    auto bytes = read(entry);
    for (std::size_t i = bytes.size() / 3; i < bytes.size(); i += 97)
      bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
    REQUIRE(envkit::sys::write_file_atomic(entry, bytes));
  }
  CHECK(lock_with(cache) == expected);  // damaged: parsed again
}
