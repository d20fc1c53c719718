// `envkit why PACKAGE` as a user runs it: the requirements and machine facts
// behind a version, from the real binary on temporary projects.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "envkit/sys/fs.hpp"
#include "support/envkit_runner.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using envkit::test::run_envkit;
using envkit::test::TempDir;
using nlohmann::json;
using Env = std::map<std::string, std::optional<std::string>>;

// No driver on this machine, whatever runs the tests; manifests state theirs.
const Env kNoDriver = {{"ENVKIT_OVERRIDE_DRIVER", "none"}};

envkit::sys::ProcessOutput envkit_in(const fs::path& project, std::vector<std::string> args,
                                     Env env = kNoDriver) {
  std::vector<std::string> argv{"--recipes", (envkit::test::source_dir() / "recipes").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_envkit({.args = argv, .cwd = project, .env = std::move(env), .stdin_data = {}});
}

fs::path project(const TempDir& dir, std::string_view manifest) {
  dir.write("p/envkit.yaml", manifest);
  return dir.path() / "p";
}

const char* const kTorch24 = "framework: torch 2.4.*\nsystem: {driver: 535.104.05}\n";

}  // namespace

TEST_CASE("why cuda names the framework's requirement and the driver", "[cli][why]") {
  TempDir dir;
  const auto p = project(dir, kTorch24);
  const auto r = envkit_in(p, {"why", "cuda"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::StartsWith("cuda 12.1.1 on linux-x86_64, because:\n"));
  CHECK_THAT(r.err, Catch::Contains("\n  torch 2.4.1 (cu121) requires cuda <13,>=12.1\n"));
  CHECK_THAT(r.err, Catch::Contains("driver is 535.104.05") &&
                        Catch::Contains("it runs CUDA 12.1.1 natively"));
  CHECK_THAT(r.err, Catch::Contains("chosen: torch 2.4.1 (cu121) was tested with cuda 12.1"));
  CHECK_FALSE(fs::exists(p / "envkit.lock"));  // why explains; it does not lock
}

TEST_CASE("why --json has the shape CLI.md gives", "[cli][why]") {
  TempDir dir;
  const auto p = project(dir, kTorch24);
  const auto r = envkit_in(p, {"why", "cuda", "--json"});
  REQUIRE(r.exit_code == 0);
  REQUIRE(json::accept(r.out));
  const auto answer = json::parse(r.out);
  CHECK(answer.at("package") == "cuda");
  CHECK(answer.at("version") == "12.1.1");
  const auto& because = answer.at("because");
  REQUIRE(because.is_array());
  std::vector<std::string> lines;
  for (const auto& line : because)
    lines.push_back(line.get<std::string>());
  CHECK(std::find(lines.begin(), lines.end(), "torch 2.4.1 (cu121) requires cuda <13,>=12.1") !=
        lines.end());
  CHECK(std::any_of(lines.begin(), lines.end(), [](const std::string& line) {
    return line.find("535.104.05") != std::string::npos;
  }));
  // The same lines as the text answer.
  const auto text = envkit_in(p, {"why", "cuda"});
  for (const auto& line : lines)
    CHECK_THAT(text.err, Catch::Contains("\n  " + line + "\n"));
}

TEST_CASE("why says when the driver runs CUDA only through minor-version compatibility",
          "[cli][why]") {
  TempDir dir;
  // PyPI's torch 2.4.1 is the cu121 build; CUDA 12.1 needs 530.30.02 natively, 525.60.13
  // through minor-version compatibility. (A 450 driver: lock_closure_test.cpp.)
  const auto p = project(dir, "framework: torch 2.4.*\nsystem: {driver: 525.60.13}\n");
  const auto r = envkit_in(p, {"why", "cuda"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::StartsWith("cuda 12.1.1 on linux-x86_64, because:\n") &&
                        Catch::Contains("torch 2.4.1 (cu121) requires cuda <13,>=12.1") &&
                        Catch::Contains("only through minor-version compatibility"));
}

TEST_CASE("why for a package the machine provides says so", "[cli][why]") {
  TempDir dir;
  const auto p = project(dir,
                         "framework: tensorflow-gpu ==1.6.0\nexternal: {python: \"3.6.9\"}\n"
                         "system: {driver: 390.48}\n");
  const auto r = envkit_in(p, {"why", "python"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::StartsWith("python 3.6.9 on linux-x86_64, provided by the machine") &&
                        Catch::Contains("tensorflow-gpu 1.6.0 (cuda9.0) requires python "
                                        "<3.7,>=3.3"));
}

TEST_CASE("why takes the names users write (pytorch)", "[cli][why]") {
  TempDir dir;
  const auto p = project(dir, kTorch24);
  const auto r = envkit_in(p, {"why", "PyTorch", "--json"});
  REQUIRE(r.exit_code == 0);
  const auto answer = json::parse(r.out);
  CHECK(answer.at("package") == "torch");
  CHECK(answer.at("version") == "2.4.1");
}

TEST_CASE("why for a package that is not in the environment fails naming it", "[cli][why]") {
  TempDir dir;
  const auto p = project(dir, kTorch24);
  const auto r = envkit_in(p, {"why", "nosuchpkg"});
  CHECK(r.exit_code == 1);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::StartsWith("error: `nosuchpkg` is not part of the environment\n") &&
                        Catch::Contains("hint: the environment has cuda, cudnn, python, torch, "
                                        "zlib"));

  // tensorflow-gpu's environment has no torch.
  const auto q = project(dir,
                         "framework: tensorflow-gpu ==1.6.0\nexternal: {python: \"3.6.9\"}\n"
                         "system: {driver: 390.48}\n");
  const auto torch = envkit_in(q, {"why", "torch"});
  CHECK(torch.exit_code == 1);
  CHECK_THAT(torch.err, Catch::Contains("`torch` is not part of the environment"));
}

TEST_CASE("why on an unsatisfiable manifest explains the failure", "[cli][why]") {
  TempDir dir;
  const auto p = project(dir,
                         "framework: tensorflow-gpu ==1.6.0\nexternal: {python: \"3.6.9\"}\n"
                         "system: {driver: 375.26}\n");
  const auto r = envkit_in(p, {"why", "cuda", "--json"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("requires an NVIDIA driver >=384.81") &&
                        Catch::Contains("hint: upgrade the NVIDIA driver to >= 384.81"));
  REQUIRE(json::accept(r.out));
  CHECK(json::parse(r.out).at("error") == "unsatisfiable");
}

TEST_CASE("why warns when envkit.lock holds another version", "[cli][why]") {
  TempDir dir;
  const auto p = project(dir, kTorch24);
  REQUIRE(envkit_in(p, {"lock"}).exit_code == 0);
  const auto current = envkit_in(p, {"why", "cuda"});
  CHECK(current.exit_code == 0);
  CHECK_THAT(current.err, !Catch::Contains("warning:"));

  // The project moved to torch 2.5 in envkit.yaml (PyPI's is the cu124 build), the lock was
  // not redone.
  dir.write("p/envkit.yaml", "framework: torch 2.5.*\nsystem: {driver: 535.104.05}\n");
  const auto stale = envkit_in(p, {"why", "cuda"});
  CHECK(stale.exit_code == 0);
  CHECK_THAT(stale.err, Catch::StartsWith("cuda 12.4.1 on linux-x86_64, because:\n") &&
                            Catch::Contains("warning: envkit.lock has cuda 12.1.1 on "
                                            "linux-x86_64; run `envkit lock` to update it"));
}

TEST_CASE("why without envkit.yaml is an input error", "[cli][why]") {
  TempDir dir;
  const auto r = envkit_in(dir.path(), {"why", "cuda"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("envkit.yaml does not exist") &&
                        Catch::Contains("hint: run `envkit init`"));
}
