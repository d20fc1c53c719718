// A lock is written on one machine and installed on others: without
// `system:` in envkit.yaml it records what the stack needs of a machine (the
// driver its CUDA runs on, the GPUs its builds have code for), and
// `install --locked` takes it on any machine meeting that. Real parts: a
// redist archive on nginx, imported as a recipe database by envkit itself.
#include <catch2/catch.hpp>

#include "envkit/sys/fs.hpp"
#include "install_support.hpp"
#include "isolated_project.hpp"
#include "support/http_server.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using Catch::Contains;

using Machine = std::map<std::string, std::optional<std::string>>;

Machine machine(std::string driver, std::string cuda_arch) {
  return {{"ENVKIT_OVERRIDE_DRIVER", std::move(driver)},
          {"ENVKIT_OVERRIDE_CUDA_ARCH", std::move(cuda_arch)}};
}

// CUDA 13.0.2 with one component served by nginx, imported from its
// redistrib JSON; the facts NVIDIA's tables give (its driver floor, the GPUs
// it has code for) are added as importing the tables would.
struct CudaDatabase {
  IsolatedProject project;
  RedistMirror www{project.dir.path() / "www"};
  std::optional<StaticHttpServer> server;
  fs::path db = project.dir.path() / "db";

  bool skip() {
    if (nginx_missing()) return true;
    const auto cudart = www.add_archive(library_component("cuda_cudart", "13.0.96"));
    const auto redistrib = www.write_redistrib("13.0.2", {cudart});
    server.emplace(www.root());
    const auto imported =
        project.envkit({"--recipes", db.string(), "recipes", "import", "nvidia-redist",
                        redistrib.string(), "--base-url", server->url("/")});
    INFO(imported.err);
    REQUIRE(imported.exit_code == 0);
    auto facts = sys::read_file(db / "cuda.yaml").value();
    const std::string build = "      - platforms:";
    const auto at = facts.find(build);
    REQUIRE(at != std::string::npos);
    facts.replace(at, build.size(),
                  "      - min-driver-compat:\n"
                  "          linux-x86_64: \"580.65.06\"\n"
                  "        cuda-arch: [\"7.5\", \"8.0\", \"9.0\"]\n"
                  "        platforms:");
    REQUIRE(sys::write_file_atomic(db / "cuda.yaml", facts));
    project.write(project.root / "envkit.yaml", "requires:\n  cuda: \"13.0\"\n");
    return false;
  }

  [[nodiscard]] sys::ProcessOutput envkit(std::vector<std::string> args, const Machine& on) const {
    args.insert(args.begin(), {"--recipes", db.string()});
    return project.envkit(std::move(args), on);
  }
};

TEST_CASE("a lock written on one machine installs with --locked on one with a newer driver",
          "[cli][lock][install]") {
  CudaDatabase fixture;
  if (fixture.skip()) return;
  const auto writer = machine("580.82.07", "8.6");
  const auto locked = fixture.envkit({"lock"}, writer);
  INFO(locked.err);
  REQUIRE(locked.exit_code == 0);
  const auto lock_path = fixture.project.root / "envkit.lock";
  const auto committed = sys::read_file(lock_path).value();
  // What the stack needs, not the writer's 580.82.07 and 8.6.
  CHECK_THAT(committed, Contains("  source: override\n  driver: \">=580.65.06\"\n"
                                 "  cuda-arch: [\"7.5\", \"8.0\", \"9.0\"]\n"));
  CHECK_THAT(committed, !Contains("580.82.07"));

  // Another machine: a newer driver, another GPU the stack has code for.
  const auto other = machine("590.44.01", "9.0");
  CHECK(fixture.envkit({"lock", "--check"}, other).exit_code == 0);
  const auto installed = fixture.envkit({"install", "--locked"}, other);
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);
  CHECK(fs::exists(fixture.project.prefix() / "lib" / "libcuda_cudart.so.13.0.96"));
  // A plain install on a third machine leaves the committed lock as it is.
  CHECK(fixture.envkit({"install"}, machine("580.65.06", "7.5")).exit_code == 0);
  CHECK(sys::read_file(lock_path).value() == committed);
}

TEST_CASE("install refuses a machine the lock does not fit, naming what it lacks",
          "[cli][lock][install]") {
  CudaDatabase fixture;
  if (fixture.skip()) return;
  REQUIRE(fixture.envkit({"lock"}, machine("580.82.07", "8.6")).exit_code == 0);
  const auto lock_path = fixture.project.root / "envkit.lock";
  const auto committed = sys::read_file(lock_path).value();

  const auto old_driver = fixture.envkit({"install"}, machine("575.57.08", "8.6"));
  CHECK(old_driver.exit_code == 1);
  CHECK_THAT(old_driver.err, Contains("driver 575.57.08 is older than envkit.lock needs") &&
                                 Contains(">=580.65.06"));

  const auto pascal = fixture.envkit({"install", "--locked"}, machine("580.82.07", "6.1"));
  CHECK(pascal.exit_code == 1);
  CHECK_THAT(pascal.err, Contains("compute capability 6.1") && Contains("7.5, 8.0, 9.0"));

  CHECK(sys::read_file(lock_path).value() == committed);
  CHECK_FALSE(fs::exists(fixture.project.prefix()));
}

}  // namespace
}  // namespace envkit::test
