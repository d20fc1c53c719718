// `envkit install` of CUDA releases NVIDIA ships only as runfiles: the real
// binary downloads makeself runfiles (built by Debian's makeself in NVIDIA's
// shapes, holding real ELF libraries from /usr/local/cuda where it exists) from
// nginx, verifies them, unpacks their payloads without running them, applies
// the patches, and places only the locked components.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "envkit/core/sha256.hpp"
#include "envkit/sys/fs.hpp"
#include "install_support.hpp"
#include "support/http_server.hpp"
#include "support/runfile_fixture.hpp"
#include "support/temp_dir.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The components a framework needs, as `envkit lock` writes them for a runfile.
const std::vector<std::string> kLockedComponents = {"cuda_cudart", "cuda_cupti",  "cuda_nvcc",
                                                    "cuda_nvrtc",  "libcublas",   "libcufft",
                                                    "libcurand",   "libcusolver", "libcusparse"};

// A real ELF library of /usr/local/cuda under a CUDA 9.0 name, or text where there is none.
FixtureFile library_file(const std::string& path, const std::string& real_name,
                         const std::string& fallback) {
  const fs::path real = fs::path("/usr/local/cuda/lib64") / real_name;
  std::error_code ignored;
  if (fs::is_regular_file(real, ignored)) return {.path = path, .source = real};
  return {.path = path, .content = fallback};
}

bool is_elf(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in.gcount() == 4 && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' &&
         magic[3] == 'F';
}

// CUDA 9.0's toolkit tree, as the nested runfile holds it.
std::vector<FixtureFile> cuda9_toolkit() {
  return {library_file("lib64/libcudart.so.9.0.176", "libcudart.so.13", "cudart 9.0.176\n"),
          {.path = "lib64/libcudart.so.9.0", .symlink_target = "libcudart.so.9.0.176"},
          {.path = "lib64/libcudart.so", .symlink_target = "libcudart.so.9.0"},
          {.path = "lib64/libcublas.so.9.0.176", .content = "cublas 9.0.176\n"},
          {.path = "lib64/libcublas.so.9.0", .symlink_target = "libcublas.so.9.0.176"},
          {.path = "lib64/libcufft.so.9.0.176", .content = "cufft 9.0.176\n"},
          {.path = "lib64/libnppc.so.9.0.176", .content = "npp: not a framework's\n"},
          {.path = "lib64/stubs/libcuda.so", .content = "driver stub\n"},
          {.path = "include/cuda_runtime_api.h", .content = "#define CUDART_VERSION 9000\n"},
          {.path = "bin/nvcc", .content = "#!/bin/sh\necho nvcc 9.0\n", .executable = true},
          {.path = "bin/nvvp", .content = "#!/bin/sh\n", .executable = true},
          {.path = "nvvm/bin/cicc", .content = "cicc\n", .executable = true},
          {.path = "extras/CUPTI/lib64/libcupti.so.9.0.176", .content = "cupti\n"},
          {.path = "doc/html/index.html", .content = "<html></html>\n"},
          {.path = "samples/Makefile", .content = "all:\n"},
          {.path = "version.txt", .content = "CUDA Version 9.0.176\n"}};
}

specs::Artifact runfile_artifact(const BuiltRunfile& built, const std::string& url,
                                 specs::Layout layout) {
  specs::Artifact artifact;
  artifact.component = "cuda";
  artifact.kind = specs::ArtifactKind::runfile;
  artifact.format = "run";
  artifact.layout = layout;
  artifact.url = url;
  artifact.sha256 = built.sha256;
  artifact.size = built.size;
  artifact.components = kLockedComponents;
  return artifact;
}

specs::RunfilePatch patch_of(const BuiltRunfile& built, const std::string& url) {
  return {.url = url, .sha256 = built.sha256, .size = built.size};
}

// An InstallProject whose locks are of one runfile package, served from www/.
struct RunfileProject : InstallProject {
  fs::path www = dir.path() / "www";
  RunfileFixture runfiles{www};

  RunfileProject() { stall_timeout_ms = "2000"; }
  using InstallProject::lock;
  void lock(const std::vector<specs::Artifact>& artifacts,
            const std::string& version = "9.0.176") const {
    lock({{"cuda", version, artifacts}});
  }
};

std::string url_of(const StaticHttpServer& server, const BuiltRunfile& built) {
  return server.url("/" + built.path.filename().string());
}

}  // namespace

TEST_CASE("install unpacks a CUDA 9.0 runfile and its patch into the redist layout",
          "[cli][install][runfile]") {
  if (nginx_missing()) return;
  RunfileProject project;
  const auto release = project.runfiles.nested("9.0.176", "22781540", "384.81", cuda9_toolkit());
  const auto patch = project.runfiles.patch(
      "9.0.176", 1,
      {{.path = "lib64/libcublas.so.9.0.176", .content = "cublas 9.0.176 patch 1\n"},
       {.path = "lib64/libcublas.so.9.0.480", .content = "cublas 9.0.480\n"},
       {.path = "lib64/libcublas.so.9.0", .symlink_target = "libcublas.so.9.0.480"}});
  const StaticHttpServer server(project.www);
  auto artifact =
      runfile_artifact(release, url_of(server, release), specs::Layout::cuda_runfile_nested);
  artifact.patches = {patch_of(patch, url_of(server, patch))};
  project.lock({artifact});

  const auto r = project.install({"--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto prefix = project.prefix();
  // The runtime, where `envkit run` and the loader look, with its soname link.
  CHECK(fs::read_symlink(prefix / "lib" / "libcudart.so.9.0") == "libcudart.so.9.0.176");
  if (fs::exists("/usr/local/cuda/lib64/libcudart.so.13")) {
    CHECK(is_elf(prefix / "lib" / "libcudart.so.9.0.176"));
    CHECK(fs::file_size(prefix / "lib" / "libcudart.so.9.0.176") ==
          fs::file_size("/usr/local/cuda/lib64/libcudart.so.13"));
  }
  CHECK(read_text(prefix / "include" / "cuda_runtime_api.h") == "#define CUDART_VERSION 9000\n");
  CHECK(read_text(prefix / "bin" / "nvcc") == "#!/bin/sh\necho nvcc 9.0\n");
  CHECK(fs::exists(prefix / "nvvm" / "bin" / "cicc"));
  CHECK(read_text(prefix / "lib" / "libcupti.so.9.0.176") == "cupti\n");
  CHECK(read_text(prefix / "lib" / "stubs" / "libcuda.so") == "driver stub\n");
  CHECK(read_text(prefix / "version.txt") == "CUDA Version 9.0.176\n");
  // The toolkit's EULA (the fixture writes one into every toolkit tree).
  CHECK(fs::file_size(prefix / "share" / "licenses" / "cuda" / "cuda" / "EULA.txt") > 0);
  // The patch, applied over the release: a replaced library and a moved link.
  CHECK(read_text(prefix / "lib" / "libcublas.so.9.0.176") == "cublas 9.0.176 patch 1\n");
  CHECK(fs::read_symlink(prefix / "lib" / "libcublas.so.9.0") == "libcublas.so.9.0.480");
  CHECK(read_text(prefix / "lib" / "libcublas.so.9.0") == "cublas 9.0.480\n");
  // nvcc's profile and the loader find the tree where CUDA 12 puts it.
  CHECK(fs::read_symlink(prefix / "lib64") == "lib");
  // Never the driver, the samples, the docs or what no framework needs.
  for (const auto* absent : {"lib/libnppc.so.9.0.176", "bin/nvvp", "doc", "samples", "run_files",
                             "cuda-installer.pl", "NVIDIA-Linux-x86_64-384.81"}) {
    CAPTURE(absent);
    CHECK_FALSE(fs::exists(fs::symlink_status(prefix / absent)));
  }
  const auto report = json::parse(r.out);
  CHECK(report.at("added") == json::array({"cuda 9.0.176 (runfile)"}));
  CHECK(report.at("downloaded_bytes") == release.size + patch.size);

  // The receipt says what was applied, in order.
  const auto receipt = json::parse(read_text(prefix / ".envkit" / "receipts" / "cuda.json"));
  REQUIRE(receipt.at("artifacts").size() == 1);
  const auto& recorded = receipt.at("artifacts").at(0);
  CHECK(recorded.at("sha256") == release.sha256);
  REQUIRE(recorded.at("patches").size() == 1);
  CHECK(recorded.at("patches").at(0).at("sha256") == patch.sha256);
  CHECK(recorded.at("patches").at(0).at("url") == url_of(server, patch));

  // A second install changes nothing and downloads nothing.
  const auto again = project.install({"--json"});
  REQUIRE(again.exit_code == 0);
  CHECK(json::parse(again.out).at("changed") == false);
}

TEST_CASE("install places only the locked components of an 11.x builds runfile",
          "[cli][install][runfile]") {
  if (nginx_missing()) return;
  RunfileProject project;
  const std::vector<FixtureComponent> components = {
      {.name = "cuda_cudart",
       .version = "11.2.72",
       .files = {library_file("targets/x86_64-linux/lib/libcudart.so.11.2.72", "libcudart.so.13",
                              "cudart 11.2\n"),
                 {.path = "targets/x86_64-linux/lib/libcudart.so.11.0",
                  .symlink_target = "libcudart.so.11.2.72"},
                 {.path = "targets/x86_64-linux/include/cuda_runtime_api.h",
                  .content = "#define CUDART_VERSION 11020\n"},
                 {.path = "lib64", .symlink_target = "targets/x86_64-linux/lib"}}},
      {.name = "libcublas",
       .version = "11.4.1.1026",
       .files = {{.path = "lib64/libcublas.so.11.4.1.1026", .content = "cublas 11\n"},
                 {.path = "lib64/libcublas.so.11", .symlink_target = "libcublas.so.11.4.1.1026"}}},
      {.name = "libnpp",
       .version = "11.3.2.139",
       .files = {{.path = "lib64/libnppc.so.11", .content = "npp\n"}}}};
  const auto release = project.runfiles.builds("11.2.1", components, RunfileCompression::xz);
  const StaticHttpServer server(project.www);
  auto artifact =
      runfile_artifact(release, url_of(server, release), specs::Layout::cuda_runfile_builds);
  project.lock({artifact}, "11.2.1");

  const auto r = project.install();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto prefix = project.prefix();
  CHECK(fs::read_symlink(prefix / "lib" / "libcudart.so.11.0") == "libcudart.so.11.2.72");
  CHECK(read_text(prefix / "include" / "cuda_runtime_api.h") == "#define CUDART_VERSION 11020\n");
  CHECK(read_text(prefix / "lib" / "libcublas.so.11") == "cublas 11\n");
  CHECK_FALSE(fs::exists(prefix / "lib" / "libnppc.so.11"));
  CHECK_FALSE(fs::exists(prefix / "builds"));
}

TEST_CASE("a runfile that is not the locked one leaves the environment as it was",
          "[cli][install][runfile]") {
  if (nginx_missing()) return;
  RunfileProject project;
  const auto release = project.runfiles.nested("9.0.176", "22781540", "384.81", cuda9_toolkit());
  const StaticHttpServer server(project.www);
  const auto good =
      runfile_artifact(release, url_of(server, release), specs::Layout::cuda_runfile_nested);
  project.lock({good});
  REQUIRE(project.install().exit_code == 0);
  const auto before = read_text(project.prefix() / ".envkit" / "receipts" / "cuda.json");

  SECTION("a sha256 other than the lock's") {
    auto changed = good;
    changed.sha256 = std::string(64, 'b');
    changed.components = {"cuda_cudart"};  // another entry: it must be downloaded again
    project.lock({changed});
    const auto r = project.install();
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains(good.url));
    CHECK_THAT(r.err, Catch::Contains(std::string(64, 'b')));
    CHECK_THAT(r.err, Catch::Contains(release.sha256));
  }
  SECTION("a payload that ends early") {
    const auto cut = project.runfiles.truncated(release, "cut.run", 4096);
    auto truncated = runfile_artifact(cut, url_of(server, cut), specs::Layout::cuda_runfile_nested);
    project.lock({truncated});
    const auto r = project.install();
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains(truncated.url));
    CHECK_THAT(r.err, Catch::Contains("byte"));
  }
  SECTION("a header that lies about the payload's size") {
    const auto lying = project.runfiles.lying_filesizes(release, "lying.run", 512);
    auto artifact =
        runfile_artifact(lying, url_of(server, lying), specs::Layout::cuda_runfile_nested);
    project.lock({artifact});
    const auto r = project.install();
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains(artifact.url));
  }
  SECTION("a patch whose sha256 differs") {
    const auto patch = project.runfiles.patch(
        "9.0.176", 1, {{.path = "lib64/libcublas.so.9.0.480", .content = "cublas 9.0.480\n"}});
    auto patched = good;
    patched.patches = {
        {.url = url_of(server, patch), .sha256 = std::string(64, 'c'), .size = patch.size}};
    project.lock({patched});
    const auto r = project.install();
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("cuda patch 1"));
    CHECK_THAT(r.err, Catch::Contains(url_of(server, patch)));
  }
  // Nothing of the failed install reached the environment.
  CHECK(read_text(project.prefix() / ".envkit" / "receipts" / "cuda.json") == before);
  CHECK(fs::read_symlink(project.prefix() / "lib" / "libcudart.so.9.0") == "libcudart.so.9.0.176");
}

TEST_CASE("install --offline names a runfile missing from the cache", "[cli][install][runfile]") {
  RunfileProject project;
  auto artifact = runfile_artifact(
      {.path = "cuda_9.0.176_384.81_linux-run", .sha256 = std::string(64, 'a'), .size = 10},
      "https://developer.nvidia.com/compute/cuda/9.0/Prod/local_installers/"
      "cuda_9.0.176_384.81_linux-run",
      specs::Layout::cuda_runfile_nested);
  project.lock({artifact});
  const auto r = project.install({"--offline"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("not in the cache"));
  CHECK_THAT(r.err, Catch::Contains("cuda 9.0.176: cuda (" + artifact.url + ")"));
}

}  // namespace envkit::test
