// `envkit smoke --framework` and doctor's framework check on a machine without
// a GPU: the prefix's Python imports a stand-in `torch` whose import dlopen()s a
// real CUDA library (a copy of /usr/local/cuda's libcudart.so.13 inside the
// prefix) and, when asked, the machine's own copy too; envkit reads what the
// process really loaded from its /proc/self/maps.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "envkit/sys/process.hpp"
#include "install_support.hpp"
#include "support/http_server.hpp"
#include "support/redist_fixture.hpp"
#include "support/skip.hpp"

// A namespace of its own: test_cli is a unity build.
namespace envkit::test::framework_libraries {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::string_view kCudart = "/usr/local/cuda/lib64/libcudart.so.13";

// torch as far as framework_smoke.py asks it, loading its libcudart (and
// FAKE_TORCH_ALSO_LOAD's libraries) the way a real torch loads its CUDA.
constexpr std::string_view kFakeTorch = R"(import ctypes, os
__version__ = "0.0.0+fake"
ctypes.CDLL(os.path.join(os.path.dirname(__file__), "lib", "libcudart.so.13"))
for _path in filter(None, os.environ.get("FAKE_TORCH_ALSO_LOAD", "").split(":")):
    ctypes.CDLL(_path)
class version:
    cuda = "13.0"
class backends:
    class cudnn:
        @staticmethod
        def version():
            return None
class cuda:
    @staticmethod
    def is_available():
        return False
)";

// A prefix with a Python (the machine's, with the prefix's site-packages) and the stand-in.
FixtureComponent framework_prefix(const fs::path& python) {
  const std::string site = "lib/python3.11/site-packages";
  return {.name = "cuda_fake_framework",
          .version = "13.0.96",
          .files = {{.path = "bin/python3",
                     .content = "#!/bin/sh\nhere=$(cd \"$(dirname \"$0\")/..\" && pwd)\n"
                                "PYTHONPATH=\"$here/" +
                                site + "\" exec " + python.string() + " -s \"$@\"\n",
                     .executable = true},
                    {.path = site + "/torch/__init__.py", .content = std::string(kFakeTorch)},
                    {.path = site + "/torch/lib/libcudart.so.13", .source = fs::path(kCudart)}}};
}

struct FrameworkProject {
  InstallProject project;
  RedistMirror mirror{project.dir.path() / "www"};
  BuiltArtifact built;
  StaticHttpServer server{mirror.root()};

  FrameworkProject(const fs::path& python, const std::string& cuda)
      : built(mirror.add_archive(framework_prefix(python))) {
    project.lock({{"cuda", cuda, {lock_artifact(built, server.url(""))}}});
    const auto installed = project.install();
    INFO(installed.err);
    REQUIRE(installed.exit_code == 0);
  }
};

bool missing_parts() {
  if (nginx_missing() || program_missing("python3")) return true;
  std::error_code ec;
  if (!fs::exists(kCudart, ec)) {
    skip_test(SkipKind::expected, std::string(kCudart) + " is absent (no CUDA toolkit here)");
    return true;
  }
  return false;
}

json framework_findings(const sys::ProcessOutput& run) {
  json found = json::array();
  const auto report = json::parse(run.out);
  for (const auto& finding : report.at("findings")) {
    if (finding.at("id") == "framework") found.push_back(finding);
  }
  return found;
}

}  // namespace

TEST_CASE("smoke --framework without a GPU reports the libraries the framework loaded",
          "[cli][smoke][framework]") {
  if (missing_parts()) return;
  const FrameworkProject served(*sys::find_on_path("python3"), "13.0");  // /usr/local/cuda's
  const auto& project = served.project;
  const auto prefix_lib =
      fs::canonical(project.prefix()) / "lib/python3.11/site-packages/torch/lib";

  SECTION("all from the prefix: a skip (77) with the report") {
    const auto r = project.envkit({"smoke", "--framework", "--json"});
    INFO(r.err);
    CHECK(r.exit_code == 77);
    const auto out = json::parse(r.out);
    CHECK(out.at("status") == "skip");
    const auto& framework = out.at("framework");
    CHECK(framework.at("status") == "skip");
    CHECK_THAT(framework.at("reason").get<std::string>(), Catch::Contains("no NVIDIA driver"));
    CHECK(framework.at("framework") == "torch");
    CHECK(framework.at("problems").empty());
    CHECK_FALSE(framework.contains("maps"));
    REQUIRE(framework.at("libraries").size() == 1);
    const auto& cudart = framework.at("libraries")[0];
    CHECK(cudart.at("name") == "libcudart");
    CHECK(cudart.at("path") == (prefix_lib / "libcudart.so.13").string());
    CHECK(cudart.at("in_prefix") == true);
    CHECK(cudart.at("version") == "13");
    CHECK_THAT(r.err, Catch::Contains("framework:     torch loaded 1 CUDA libraries"));
  }
  SECTION("the machine's libcudart too: a failure naming it") {
    const auto r = project.envkit({"smoke", "--framework", "--json"},
                                  {{"FAKE_TORCH_ALSO_LOAD", std::string(kCudart)}});
    INFO(r.err);
    CHECK(r.exit_code == 1);
    const auto out = json::parse(r.out);
    CHECK(out.at("status") == "fail");
    const auto& framework = out.at("framework");
    CHECK(framework.at("status") == "fail");
    CHECK(framework.at("libraries").size() == 2);
    const auto machines = fs::canonical(kCudart).string();
    REQUIRE(framework.at("problems").size() == 2);
    CHECK(framework.at("problems")[0] ==
          "libcudart was loaded from outside the prefix: " + machines);
    CHECK_THAT(framework.at("problems")[1].get<std::string>(),
               Catch::Contains("2 different libcudart files were loaded into one process"));
    CHECK_THAT(r.err, Catch::Contains("framework:     FAIL: libcudart was loaded from outside"));
  }
}

TEST_CASE("smoke --framework names a CUDA other than the lock's", "[cli][smoke][framework]") {
  if (missing_parts()) return;
  const FrameworkProject served(*sys::find_on_path("python3"), "12.4.1");
  const auto r = served.project.envkit({"smoke", "--framework", "--json"});
  INFO(r.err);
  CHECK(r.exit_code == 1);
  const auto problems = json::parse(r.out).at("framework").at("problems");
  REQUIRE(problems.size() == 2);
  CHECK_THAT(problems[0].get<std::string>(), Catch::Contains("libcudart of CUDA 13 was loaded") &&
                                                 Catch::Contains("the lock's CUDA is 12.4.1"));
  CHECK(problems[1] == "torch states CUDA 13.0, but the lock's CUDA is 12.4.1");
}

TEST_CASE("doctor imports the prefix's framework and names a library from outside",
          "[cli][doctor][framework]") {
  if (missing_parts()) return;
  const FrameworkProject served(*sys::find_on_path("python3"), "13.0");
  const auto& project = served.project;

  auto r = project.envkit({"doctor", "--json"});
  INFO(r.err);
  auto found = framework_findings(r);
  REQUIRE(found.size() == 1);
  CHECK(found[0].at("severity") == "ok");
  CHECK_THAT(found[0].at("message").get<std::string>(),
             Catch::Contains("torch loads 1 CUDA libraries, each the prefix's"));

  // The machine's copy, found through LD_LIBRARY_PATH ahead of the prefix's wheel copy.
  const auto machine_lib = fs::canonical(kCudart).parent_path();
  r = project.envkit({"doctor", "--json"}, {{"FAKE_TORCH_ALSO_LOAD", std::string(kCudart)},
                                            {"LD_LIBRARY_PATH", machine_lib.string()}});
  found = framework_findings(r);
  REQUIRE(found.size() == 2);
  CHECK(found[0].at("severity") == "error");
  CHECK_THAT(found[0].at("message").get<std::string>(),
             Catch::Contains("libcudart was loaded from outside the prefix: " +
                             (machine_lib / "libcudart.so.13").string()));
  // The prefix's lib/ has no libcudart.so.13 (only the framework's folder does).
  CHECK_THAT(found[0].at("fix").get<std::string>(),
             Catch::Contains("take " + machine_lib.string() + " off LD_LIBRARY_PATH"));
  CHECK_THAT(found[1].at("message").get<std::string>(), Catch::Contains("2 different libcudart"));

  // Without a Python of its own the check says it could not look.
  fs::remove(fs::canonical(project.prefix()) / "bin/python3");
  r = project.envkit({"doctor", "--json"});
  found = framework_findings(r);
  REQUIRE(found.size() == 1);
  CHECK(found[0].at("severity") == "ok");
  CHECK_THAT(found[0].at("message").get<std::string>(), Catch::Contains("no Python of its own"));
}

}  // namespace envkit::test::framework_libraries
