// `envkit doctor` end to end: a real prefix installed from a loopback mirror,
// holding real ELF libraries built by the test, then broken one way at a time;
// each check must name what was broken.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "envkit/recipes/database.hpp"
#include "install_support.hpp"
#include "isolated_project.hpp"
#include "support/http_server.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using nlohmann::json;

constexpr std::string_view kCuda = "12.4.0";  // a version of the committed recipe database

// A shared library `name` (soname `soname`) linked against `needs` in `dir`.
fs::path build_library(const fs::path& dir, const std::string& file, const std::string& soname,
                       const std::vector<std::string>& needs = {}) {
  const auto source = dir / (file + ".c");
  std::ofstream(source) << "int " << soname.substr(3, soname.find('.') - 3)
                        << "_symbol(void) { return 1; }\n";
  std::string command = "cc -shared -fPIC -o '" + (dir / file).string() + "' '" + source.string() +
                        "' -Wl,--no-as-needed -Wl,-soname," + soname + " -L'" + dir.string() + "'";
  for (const auto& library : needs)
    command += " -l:" + library;
  REQUIRE(std::system(command.c_str()) == 0);
  return dir / file;
}

struct DoctorFixture {
  IsolatedProject project;
  fs::path built = project.dir.path() / "built";

  bool skip() {
    return nginx_missing() || program_missing("cc");  // cc builds the test's libraries
  }

  // Installs a CUDA 12.4 + cuDNN 9 prefix whose libraries are real ELF files:
  // libcublas.so.12 needs libcublasLt.so.12, as NVIDIA's does.
  void install(const StaticHttpServer& server, const RedistMirror& mirror) {
    fs::create_directories(built);
    const auto cudart = build_library(built, "libcudart.so.12.4.127", "libcudart.so.12");
    const auto lt = build_library(built, "libcublasLt.so.12.4.5.8", "libcublasLt.so.12");
    fs::copy_file(lt, built / "libcublasLt.so.12");
    const auto cublas =
        build_library(built, "libcublas.so.12.4.5.8", "libcublas.so.12", {"libcublasLt.so.12"});
    const auto cudnn = build_library(built, "libcudnn.so.9.1.0", "libcudnn.so.9");
    const FixtureComponent runtime{
        .name = "cuda_cudart",
        .version = "12.4.127",
        .files = {{.path = "lib/libcudart.so.12.4.127", .source = cudart},
                  {.path = "lib/libcudart.so.12", .symlink_target = "libcudart.so.12.4.127"}}};
    const FixtureComponent nvcc{
        .name = "cuda_nvcc",
        .version = "12.4.131",
        .files = {{.path = "bin/nvcc",
                   .content = "#!/bin/sh\necho 'Cuda compilation tools, release 12.4, "
                              "V12.4.131'\n",
                   .executable = true}}};
    const FixtureComponent blas{
        .name = "libcublas",
        .version = "12.4.5.8",
        .files = {{.path = "lib/libcublas.so.12.4.5.8", .source = cublas},
                  {.path = "lib/libcublas.so.12", .symlink_target = "libcublas.so.12.4.5.8"},
                  {.path = "lib/libcublasLt.so.12.4.5.8", .source = lt},
                  {.path = "lib/libcublasLt.so.12", .symlink_target = "libcublasLt.so.12.4.5.8"}}};
    const FixtureComponent dnn{
        .name = "cudnn",
        .version = "9.1.0.70",
        .files = {{.path = "lib/libcudnn.so.9.1.0", .source = cudnn},
                  {.path = "lib/libcudnn.so.9", .symlink_target = "libcudnn.so.9.1.0"},
                  {.path = "include/cudnn.h", .content = "#define CUDNN_MAJOR 9\n"}}};
    const auto url = server.url("");
    std::vector<specs::Artifact> cuda_artifacts;
    for (const auto* component : {&runtime, &nvcc, &blas})
      cuda_artifacts.push_back(lock_artifact(mirror.add_archive(*component), url));
    project.write(
        project.root / "envkit.lock",
        lock_text({{"cuda", std::string(kCuda), cuda_artifacts},
                   {"cudnn", "9.1.0.70", {lock_artifact(mirror.add_archive(dnn), url)}}}));
    const auto r = project.envkit({"install", "--frozen"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }

  // A driver and GPU that run CUDA 12.4, and a plain environment, unless `env` says otherwise.
  [[nodiscard]] sys::ProcessOutput doctor(
      std::map<std::string, std::optional<std::string>> env = {}) const {
    env.emplace("ENVKIT_OVERRIDE_DRIVER", "550.54.15");
    env.emplace("ENVKIT_OVERRIDE_CUDA_ARCH", "9.0");
    env.emplace("LD_LIBRARY_PATH", std::nullopt);
    env.emplace("LD_PRELOAD", std::nullopt);
    env.emplace("CUDA_HOME", std::nullopt);
    env.emplace("CUDA_PATH", std::nullopt);
    env.emplace("PATH", "/usr/bin:/bin");
    return project.envkit({"doctor", "--json"}, env);
  }
};

// The findings of `id` in doctor's JSON.
std::vector<json> findings(const sys::ProcessOutput& r, std::string_view id) {
  const auto report = json::parse(r.out);
  std::vector<json> found;
  for (const auto& finding : report.at("findings")) {
    if (finding.at("id") == id) found.push_back(finding);
  }
  return found;
}

// The one finding of `id` with `severity`; fails the test when there is none.
json finding(const sys::ProcessOutput& r, std::string_view id, std::string_view severity) {
  for (const auto& found : findings(r, id)) {
    if (found.at("severity") == severity) return found;
  }
  FAIL("no " << severity << " finding `" << id << "` in " << r.out);
  return {};
}

std::string minimum_driver_compat() {
  auto database = recipes::Database::open(source_dir() / "recipes").value();
  const auto* recipe = database.facts("cuda").value();
  const auto* version = recipe->find(specs::Version::parse(kCuda).value());
  REQUIRE(version != nullptr);
  return version->builds.front().min_driver_compat.at(specs::Platform::linux_x86_64).original();
}

void remove_file(const fs::path& path) {
  REQUIRE(fs::remove(path));  // the prefix's folders are writable; its files are links
}

TEST_CASE("doctor finds nothing wrong with a sound prefix on a capable machine", "[cli][doctor]") {
  DoctorFixture fixture;
  if (fixture.skip()) return;
  const RedistMirror mirror(fixture.project.dir.path() / "www");
  const StaticHttpServer server(mirror.root());
  fixture.install(server, mirror);
  const auto r = fixture.doctor();
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  for (const auto* id : {"driver", "gpu-arch", "libraries", "shadowing", "toolkit", "prefix",
                         "cuda-duplicate-library"}) {
    INFO(id);
    CHECK(finding(r, id, "ok").at("fix") == "");
  }
  CHECK_THAT(finding(r, "toolkit", "ok").at("message").get<std::string>(),
             Contains("nvcc 12.4.131 and libcudart 12.4.127"));
}

TEST_CASE("doctor names each broken part of the stack", "[cli][doctor]") {
  DoctorFixture fixture;
  if (fixture.skip()) return;
  const RedistMirror mirror(fixture.project.dir.path() / "www");
  const StaticHttpServer server(mirror.root());
  fixture.install(server, mirror);
  const auto prefix = fixture.project.prefix();

  SECTION("1: no driver") {
    const auto r = fixture.doctor({{"ENVKIT_OVERRIDE_DRIVER", "none"}});
    CHECK(r.exit_code == 1);
    const auto found = finding(r, "driver", "error");
    CHECK_THAT(found.at("message").get<std::string>(), Contains("no NVIDIA driver"));
    CHECK_THAT(found.at("fix").get<std::string>(), Contains(minimum_driver_compat()));
  }
  SECTION("1: a driver too old for the locked CUDA") {
    const auto r = fixture.doctor({{"ENVKIT_OVERRIDE_DRIVER", "470.57.02"}});
    CHECK(r.exit_code == 1);
    const auto message = finding(r, "driver", "error").at("message").get<std::string>();
    CHECK_THAT(message, Contains("CUDA driver version is insufficient for CUDA runtime version"));
    CHECK_THAT(message, Contains("470.57.02"));
    CHECK_THAT(message, Contains(std::string(kCuda)));
    CHECK_THAT(message, Contains(minimum_driver_compat()));
  }
  SECTION("2: a GPU the locked CUDA no longer supports") {
    const auto r = fixture.doctor({{"ENVKIT_OVERRIDE_CUDA_ARCH", "3.0"}});
    CHECK(r.exit_code == 1);
    const auto message = finding(r, "gpu-arch", "error").at("message").get<std::string>();
    CHECK_THAT(message, Contains("compute capability 3.0"));
    CHECK_THAT(message, Contains("CUDA 12.4.0"));
  }
  SECTION("3 and 6: a library another one needs is gone") {
    remove_file(prefix / "lib" / "libcublasLt.so.12");
    remove_file(prefix / "lib" / "libcublasLt.so.12.4.5.8");
    const auto r = fixture.doctor();
    CHECK(r.exit_code == 1);
    const auto message = finding(r, "libraries", "error").at("message").get<std::string>();
    CHECK_THAT(message, Contains("libcublasLt.so.12, needed by lib/libcublas.so.12"));
    const auto receipts = finding(r, "prefix", "error");
    CHECK_THAT(receipts.at("message").get<std::string>(),
               Contains("lib/libcublasLt.so.12.4.5.8 (missing)"));
    CHECK_THAT(receipts.at("fix").get<std::string>(), Contains("--reinstall"));

    // The fix the finding gives puts it back.
    const auto repaired = fixture.project.envkit({"install", "--frozen", "--reinstall"});
    INFO(repaired.err);
    REQUIRE(repaired.exit_code == 0);
    const auto again = fixture.doctor();
    INFO(again.out);
    CHECK(again.exit_code == 0);
    CHECK(fs::exists(prefix / "lib" / "libcublasLt.so.12.4.5.8"));
  }
  SECTION("3: the lock's cuDNN library is missing from the prefix") {
    remove_file(prefix / "lib" / "libcudnn.so.9");
    remove_file(prefix / "lib" / "libcudnn.so.9.1.0");
    const auto r = fixture.doctor();
    CHECK(r.exit_code == 1);
    CHECK_THAT(finding(r, "libraries", "error").at("message").get<std::string>(),
               Contains("libcudnn.so"));
  }
  SECTION("4: another libcudart earlier on LD_LIBRARY_PATH") {
    const auto other = fixture.project.dir.path() / "other-cuda";
    fs::create_directories(other);
    build_library(other, "libcudart.so.12", "libcudart.so.12");
    const auto r = fixture.doctor({{"LD_LIBRARY_PATH", other.string()}});
    const auto message = finding(r, "shadowing", "warn").at("message").get<std::string>();
    CHECK_THAT(message, Contains((other / "libcudart.so.12").string()));
    CHECK(r.exit_code == 0);  // a warning: `envkit run` is unaffected
    // Behind the prefix's own folder it shadows nothing.
    const auto behind =
        fixture.doctor({{"LD_LIBRARY_PATH", (prefix / "lib").string() + ":" + other.string()}});
    CHECK(findings(behind, "shadowing").at(0).at("severity") == "ok");
  }
  SECTION("5: nvcc and the runtime from different releases, CUDA_HOME elsewhere") {
    remove_file(prefix / "bin" / "nvcc");
    std::ofstream(prefix / "bin" / "nvcc")
        << "#!/bin/sh\necho 'Cuda compilation tools, release 12.3, V12.3.107'\n";
    fs::permissions(prefix / "bin" / "nvcc", fs::perms::owner_all);
    const auto r = fixture.doctor({{"CUDA_HOME", "/opt/other-cuda"}});
    CHECK(r.exit_code == 1);
    const auto toolkit = findings(r, "toolkit");
    REQUIRE(toolkit.size() == 2);
    CHECK(toolkit[0].at("severity") == "error");
    CHECK_THAT(toolkit[0].at("message").get<std::string>(), Contains("release 12.3.107"));
    CHECK_THAT(toolkit[0].at("message").get<std::string>(), Contains("12.4.127"));
    CHECK(toolkit[1].at("severity") == "warn");
    CHECK_THAT(toolkit[1].at("message").get<std::string>(), Contains("CUDA_HOME=/opt/other-cuda"));
    CHECK_THAT(finding(r, "prefix", "error").at("message").get<std::string>(),
               Contains("bin/nvcc (modified)"));
  }
  SECTION("7: a second libcudart from a wheel in site-packages") {
    const auto wheel_lib =
        prefix / "lib" / "python3.11" / "site-packages" / "nvidia" / "cuda_runtime" / "lib";
    fs::create_directories(wheel_lib);
    build_library(wheel_lib, "libcudart.so.12", "libcudart.so.12");
    const auto r = fixture.doctor();
    CHECK(r.exit_code == 1);
    const auto found = finding(r, "cuda-duplicate-library", "error");
    const auto message = found.at("message").get<std::string>();
    CHECK_THAT(message, Contains("`lib/libcudart.so.12.4.127` (12.4.127)"));
    CHECK_THAT(message,
               Contains("`lib/python3.11/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12`"));
    CHECK_THAT(found.at("fix").get<std::string>(), Contains("envkit lock"));
  }
  SECTION("6: a header changed in place") {
    remove_file(prefix / "include" / "cudnn.h");
    std::ofstream(prefix / "include" / "cudnn.h") << "#define CUDNN_MAJOR 8\n";
    const auto r = fixture.doctor();
    CHECK(r.exit_code == 1);
    CHECK_THAT(finding(r, "prefix", "error").at("message").get<std::string>(),
               Contains("1 file of cudnn 9.1.0.70 differs from what envkit installed: "
                        "include/cudnn.h (modified)"));
  }
}

TEST_CASE("doctor without an installed prefix says to install", "[cli][doctor]") {
  IsolatedProject project;
  const auto r = project.envkit({"doctor", "--json"}, {{"ENVKIT_OVERRIDE_DRIVER", "none"}});
  CHECK(r.exit_code == 1);
  CHECK_THAT(finding(r, "prefix", "error").at("fix").get<std::string>(),
             Contains("envkit install"));
}

}  // namespace
}  // namespace envkit::test
