// `external: {cuda: ..., cudnn: ...}` checked against the machine's CUDA and cuDNN at lock
// and install, and doctor's findings on a prefix whose cuDNN is the machine's: the seeds'
// workaround (CUDA 9.0.176 and cuDNN 7.3.0.29 stated on a CUDA 13 machine) fails at lock,
// naming both, with hints that lock.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "envkit/lock/lockfile.hpp"
#include "install_support.hpp"
#include "isolated_project.hpp"
#include "support/http_server.hpp"
#include "support/skip.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

const fs::path kMachineCuda = "/usr/local/cuda";

// The seeds' stack, with the troubleshooting page's workaround: the machine's CUDA 9.0 and
// cuDNN 7.3 (and Python 3.6.9).
constexpr std::string_view kSeedsExternalManifest =
    "framework: tensorflow-gpu ==1.6.0\n"
    "external:\n"
    "  python: \"3.6.9\"\n"
    "  cuda: \"9.0.176\"\n"
    "  cudnn: \"7.3.0.29\"\n";

// envkit with CUDA_HOME at `cuda_home`, no CUDA_PATH, and nvcc only where `cuda_home` has it.
sys::ProcessOutput envkit_with_cuda_home(const IsolatedProject& project,
                                         std::vector<std::string> args, const fs::path& cuda_home) {
  return project.envkit(std::move(args),
                        {{"CUDA_HOME", cuda_home.string()},
                         {"CUDA_PATH", std::nullopt},
                         {"PATH", (cuda_home / "bin").string() + ":/usr/bin:/bin"}});
}

// The file of /usr/local/cuda that states its version, in the order docs/manifest.md gives.
std::optional<fs::path> machine_cuda_version_file() {
  for (const auto& file : {kMachineCuda / "version.json", kMachineCuda / "version.txt",
                           kMachineCuda / "include" / "cuda.h"}) {
    if (fs::exists(file)) return file;
  }
  return std::nullopt;
}

// A CUDA 9.0 toolkit with cuDNN 7.3.0 in it, as NVIDIA's runfile and tarball leave them.
fs::path write_external_cuda9(const IsolatedProject& project, bool with_cudnn_library = true) {
  const auto root = project.dir.path() / "cuda-9.0";
  project.write(root / "version.txt", "CUDA Version 9.0.176\n");
  project.write(root / "include" / "cuda.h", "#define CUDA_VERSION 9000\n");
  project.write(root / "lib64" / "libcudart.so.9.0.176", "ELF");
  project.write(root / "include" / "cudnn.h",
                "#define CUDNN_MAJOR 7\n#define CUDNN_MINOR 3\n#define CUDNN_PATCHLEVEL 0\n");
  if (with_cudnn_library) project.write(root / "lib64" / "libcudnn.so.7.3.0", "ELF");
  return root;
}

// The text between backticks of the hint that starts with `prefix` in `err`.
std::string requires_hinted(const std::string& err, const std::string& prefix) {
  const std::regex pattern("hint: " + prefix +
                           "[^\\n]*\\(`requires: \\{([a-z]+): \"([^\"]+)\"\\}`\\)");
  std::smatch match;
  if (!std::regex_search(err, match, pattern)) return "";
  return match[1].str() + "=" + match[2].str();
}

TEST_CASE("the seeds' external CUDA 9.0 on a CUDA 13 machine fails at lock, naming both",
          "[cli][lock][external]") {
  const auto version_file = machine_cuda_version_file();
  if (!version_file) {
    skip_test(SkipKind::expected, "no CUDA toolkit at /usr/local/cuda");
    return;
  }
  IsolatedProject project;
  project.write(project.root / "envkit.yaml", std::string(kSeedsExternalManifest));
  const auto r = envkit_with_cuda_home(project, {"lock"}, kMachineCuda);
  INFO(r.err);
  CHECK(r.exit_code == 1);  // CLI.md: failed for a reason the user can act on
  // Line 4, the value after `  cuda: `.
  CHECK_THAT(r.err, StartsWith("error: " + (project.root / "envkit.yaml").string() +
                               ":4:9: `external.cuda` states CUDA 9.0.176"));
  CHECK_THAT(r.err, Contains("caused by: " + version_file->string() + " says"));
  CHECK_FALSE(fs::exists(project.root / "envkit.lock"));

  // The hint's manifest locks once the cuDNN stated is fixed the same way.
  REQUIRE(requires_hinted(r.err, "let envkit install CUDA 9.0.176") == "cuda=9.0.176");
  project.write(project.root / "envkit.yaml",
                "framework: tensorflow-gpu ==1.6.0\nrequires: {cuda: \"9.0.176\"}\n"
                "external:\n  python: \"3.6.9\"\n  cudnn: \"7.3.0.29\"\n");
  const auto next = envkit_with_cuda_home(project, {"lock"}, kMachineCuda);
  INFO(next.err);
  if (fs::exists(kMachineCuda / "include" / "cudnn_version.h")) {
    CHECK(next.exit_code == 1);
    CHECK_THAT(next.err, Contains(":5:10: `external.cudnn` states cuDNN 7.3.0.29"));
    CHECK_THAT(next.err, Contains((kMachineCuda / "include" / "cudnn_version.h").string()));
    REQUIRE(requires_hinted(next.err, "let envkit install cuDNN 7.3.0.29") == "cudnn=7.3.0.29");
    project.write(project.root / "envkit.yaml",
                  "framework: tensorflow-gpu ==1.6.0\n"
                  "requires: {cuda: \"9.0.176\", cudnn: \"7.3.0.29\"}\n"
                  "external:\n  python: \"3.6.9\"\n");
    const auto last = envkit_with_cuda_home(project, {"lock"}, kMachineCuda);
    INFO(last.err);
    CHECK(last.exit_code == 0);
  }
}

TEST_CASE("an external CUDA the machine holds locks", "[cli][lock][external]") {
  IsolatedProject project;
  SECTION("a CUDA 9.0 tree with cuDNN 7.3 in it, as the seeds' machine would have") {
    const auto cuda9 = write_external_cuda9(project);
    project.write(project.root / "envkit.yaml", std::string(kSeedsExternalManifest));
    const auto r = envkit_with_cuda_home(project, {"lock"}, cuda9);
    INFO(r.err);
    CHECK(r.exit_code == 0);
  }
  SECTION("/usr/local/cuda's own version, as its nvcc prints it") {
    if (!fs::exists(kMachineCuda / "bin" / "nvcc")) {
      skip_test(SkipKind::expected, "no nvcc at /usr/local/cuda");
      return;
    }
    auto nvcc = sys::run_process({(kMachineCuda / "bin" / "nvcc").string(), "--version"});
    REQUIRE(static_cast<bool>(nvcc));
    std::smatch match;
    REQUIRE(std::regex_search(nvcc->out, match, std::regex(R"(, V([0-9.]+))")));
    project.write(project.root / "envkit.yaml", "external:\n  cuda: \"" + match[1].str() + "\"\n");
    const auto r = envkit_with_cuda_home(project, {"lock"}, kMachineCuda);
    INFO(r.err);
    CHECK(r.exit_code == 0);
  }
}

TEST_CASE("install checks the lock's external CUDA against the machine before it changes anything",
          "[cli][install][external]") {
  if (!machine_cuda_version_file()) {
    skip_test(SkipKind::expected, "no CUDA toolkit at /usr/local/cuda");
    return;
  }
  IsolatedProject project;
  const auto cuda9 = write_external_cuda9(project);
  project.write(project.root / "envkit.yaml", std::string(kSeedsExternalManifest));
  const auto locked = envkit_with_cuda_home(project, {"lock"}, cuda9);
  INFO(locked.err);
  REQUIRE(locked.exit_code == 0);
  // The lock travels to a machine whose CUDA is 13.
  const auto r = envkit_with_cuda_home(project, {"install", "--frozen"}, kMachineCuda);
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, StartsWith("error: " + (project.root / "envkit.yaml").string() + ":4:9:"));
  CHECK_THAT(r.err, Contains("`/usr/local/cuda`"));
  CHECK_FALSE(fs::exists(project.prefix()));
}

TEST_CASE("doctor on a prefix whose external cuDNN has no library names the machine's tree",
          "[cli][doctor][external]") {
  if (nginx_missing()) return;
  IsolatedProject project;
  const RedistMirror mirror(project.dir.path() / "www");
  const StaticHttpServer server(mirror.root());
  // The prefix holds the lock's CUDA runtime; cuDNN is the machine's, whose tree has its
  // headers and no library.
  const auto artifact =
      lock_artifact(mirror.add_archive(library_component("cudart", "12.4.127")), server.url(""));
  lock::Lockfile lockfile;
  lockfile.manifest_hash = "sha256:" + std::string(64, '0');
  lockfile.system.source = specs::FactSource::none;
  lock::PlatformLock platform{.platform = specs::host_platform()};
  platform.packages.push_back({.name = "cuda",
                               .version = specs::Version::parse("12.4.0").value(),
                               .build = "",
                               .external = std::nullopt,
                               .requires_ = {},
                               .artifacts = {artifact}});
  platform.packages.push_back({.name = "cudnn",
                               .version = specs::Version::parse("7.3.0.29").value(),
                               .build = "",
                               .external = "7.3.0.29",
                               .requires_ = {},
                               .artifacts = {}});
  lockfile.platforms.push_back(std::move(platform));
  project.write(project.root / "envkit.lock", lock::write(lockfile));
  const auto cuda9 = write_external_cuda9(project, /*with_cudnn_library=*/false);

  const auto installed = envkit_with_cuda_home(project, {"install", "--frozen"}, cuda9);
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);
  const auto r = project.envkit({"doctor", "--json"}, {{"CUDA_HOME", cuda9.string()},
                                                       {"CUDA_PATH", std::nullopt},
                                                       {"PATH", "/usr/bin:/bin"},
                                                       {"LD_LIBRARY_PATH", std::nullopt},
                                                       {"ENVKIT_OVERRIDE_DRIVER", "550.54.15"}});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  bool named = false;
  const auto report = nlohmann::json::parse(r.out);
  for (const auto& finding : report.at("findings")) {
    const auto message = finding.at("message").get<std::string>();
    const auto fix = finding.at("fix").get<std::string>();
    INFO(message << "\nfix: " << fix);
    // No fix is an install that would say "nothing to do".
    CHECK_THAT(fix, !Contains("run `envkit install`"));
    CHECK_THAT(message, !Contains("the prefix has no libcudnn"));
    if (message.find("cudnn 7.3.0.29 is external") != std::string::npos) {
      named = true;
      CHECK(finding.at("severity") == "error");
      CHECK_THAT(message, Contains(cuda9.string()));
      CHECK_THAT(message, Contains("no libcudnn.so.*"));
      CHECK_THAT(fix, Contains("remove `cudnn` from `external:`"));
    }
  }
  CHECK(named);
  // And indeed install has nothing to do for it.
  const auto again = envkit_with_cuda_home(project, {"install", "--frozen"}, cuda9);
  CHECK_THAT(again.err, Contains("nothing to do"));
}

}  // namespace
}  // namespace envkit::test
