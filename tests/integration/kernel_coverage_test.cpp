// Kernel coverage end to end, with a real CUDA library: cuDNN's libcudnn_cnn.so.9
// from /usr/local/cuda, served as a redist archive by nginx and installed.
// install reads its fatbinaries into the receipt and refuses, before the switch,
// a generation with no kernel for the machine's GPU; doctor names the gap.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "install_support.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using nlohmann::json;

const fs::path kCudnnCnn = "/usr/local/cuda/lib64/libcudnn_cnn.so.9";

// The fake GPU and driver: an H100-class 9.0 or a GTX 1080 Ti's 6.1.
std::map<std::string, std::optional<std::string>> gpu(std::string capability) {
  return {{"ENVKIT_OVERRIDE_DRIVER", "580.95.05"},
          {"ENVKIT_OVERRIDE_CUDA_ARCH", std::move(capability)}};
}

std::vector<json> kernel_findings(const sys::ProcessOutput& run, std::string_view severity) {
  std::vector<json> found;
  const auto report = json::parse(run.out);
  for (const auto& finding : report.at("findings")) {
    if (finding.at("id") == "kernels" && finding.at("severity") == severity)
      found.push_back(finding);
  }
  return found;
}

struct CudnnProject {
  InstallProject project;
  RedistMirror mirror{project.dir.path() / "www"};
  StaticHttpServer server{mirror.root()};
  LockedSpec cuda{"cuda",
                  "13.0.2",
                  {lock_artifact(mirror.add_archive(library_component("cuda_cudart", "13.0.96")),
                                 server.url(""))}};
  LockedSpec cudnn{
      "cudnn",
      "9.19.0.56",
      {lock_artifact(
          mirror.add_archive({.name = "cudnn",
                              .version = "9.19.0.56",
                              .files = {{.path = "lib/libcudnn_cnn.so.9", .source = kCudnnCnn}}}),
          server.url(""))}};

  [[nodiscard]] int generation() const {
    return std::stoi(fs::read_symlink(project.prefix()).filename().string());
  }
};

bool cudnn_missing() {
  if (fs::exists(kCudnnCnn)) return false;
  skip_test(SkipKind::expected, "no " + kCudnnCnn.string());
  return true;
}

TEST_CASE("install refuses, before the switch, binaries without kernels for the machine's GPU",
          "[cli][install][kernels]") {
  if (cudnn_missing() || nginx_missing()) return;
  CudnnProject fixture;
  const auto& project = fixture.project;
  project.lock({fixture.cuda});
  const auto first = project.install({}, gpu("6.1"));
  INFO(first.err);
  REQUIRE(first.exit_code == 0);  // cudart alone: no fatbinary, nothing to judge
  REQUIRE(fixture.generation() == 1);

  // The lock now adds CUDA 13's cuDNN, whose kernels start at sm_75.
  project.lock({fixture.cuda, fixture.cudnn});
  const auto lock_before = read_text(project.root / "envkit.lock");
  const auto refused = project.install({}, gpu("6.1"));
  INFO(refused.err);
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.err, Contains("no kernels for this machine's GPUs (compute capability 6.1)") &&
                              Contains("cudnn 9.19.0.56") &&
                              Contains("lib/libcudnn_cnn.so.9 holds sm_75") &&
                              Contains("--no-kernel-check"));
  // The previous environment stands, and the lock is as it was.
  CHECK(fixture.generation() == 1);
  CHECK_FALSE(fs::exists(project.prefix() / "lib" / "libcudnn_cnn.so.9"));
  CHECK(read_text(project.root / "envkit.lock") == lock_before);
  CHECK_THAT(read_text(project.prefix() / ".envkit" / "state.json"), !Contains("cudnn"));

  SECTION("a GPU the binaries cover installs, with the kernels in the receipt") {
    const auto installed = project.install({}, gpu("9.0"));
    INFO(installed.err);
    REQUIRE(installed.exit_code == 0);
    CHECK(fixture.generation() == 2);
    const auto receipt =
        json::parse(read_text(project.prefix() / ".envkit" / "receipts" / "cudnn.json"));
    const auto& kernels = receipt.at("kernels");
    CHECK(kernels.at("files").at(0).at("path") == "lib/libcudnn_cnn.so.9");
    const auto sass = kernels.at("sass").get<std::vector<std::string>>();
    CHECK(std::find(sass.begin(), sass.end(), "sm_75") != sass.end());
    CHECK(std::find(sass.begin(), sass.end(), "sm_61") == sass.end());
    // Remembered by the artifact's sha256 for the next lock.
    CHECK(fs::exists(project.cache / "kernels" / (fixture.cudnn.artifacts[0].sha256 + ".json")));
  }
  SECTION("--no-kernel-check installs it anyway") {
    const auto installed = project.install({"--no-kernel-check"}, gpu("6.1"));
    INFO(installed.err);
    REQUIRE(installed.exit_code == 0);
    CHECK(fixture.generation() == 2);
    CHECK(fs::exists(project.prefix() / "lib" / "libcudnn_cnn.so.9"));
  }
}

TEST_CASE("doctor says per GPU whether each package has kernels for it", "[cli][doctor][kernels]") {
  if (cudnn_missing() || nginx_missing()) return;
  CudnnProject fixture;
  const auto& project = fixture.project;
  project.lock({fixture.cuda, fixture.cudnn});
  const auto installed = project.install({}, gpu("9.0"));
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);

  const auto covered = project.envkit({"doctor", "--json"}, gpu("9.0"));
  INFO(covered.out << covered.err);
  CHECK(kernel_findings(covered, "error").empty());
  const auto ok = kernel_findings(covered, "ok");
  REQUIRE(ok.size() == 1);
  CHECK_THAT(ok[0].at("message").get<std::string>(),
             Contains("compute capability 9.0") && Contains("SASS in cudnn 9.19.0.56"));

  const auto pascal = project.envkit({"doctor", "--json"}, gpu("6.1"));
  INFO(pascal.out << pascal.err);
  CHECK(pascal.exit_code == 1);
  const auto errors = kernel_findings(pascal, "error");
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0].at("message").get<std::string>(),
             Contains("cudnn 9.19.0.56 has no kernel for a GPU of compute capability 6.1") &&
                 Contains("lib/libcudnn_cnn.so.9 holds sm_75"));
  CHECK_THAT(errors[0].at("fix").get<std::string>(), Contains("sm_60 or sm_61"));

  // The plain report on stdout says the same.
  const auto text = project.envkit({"doctor"}, gpu("6.1"));
  CHECK_THAT(text.out, Contains("kernels") && Contains("no kernel image is available"));
}

}  // namespace
}  // namespace envkit::test
