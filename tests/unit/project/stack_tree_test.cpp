#include "envkit/project/stack_tree.hpp"

#include <catch2/catch.hpp>
#include <regex>
#include <set>
#include <string>

#include "envkit/project/external.hpp"
#include "envkit/sys/fs.hpp"
#include "envkit/sys/process.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
namespace project = envkit::project;
using envkit::specs::Version;
using envkit::test::TempDir;

Version v(std::string_view text) {
  return Version::parse(text).value();
}

// The head of CUDA 9.0's cuda.h and version.txt, and cuDNN 7.3's cudnn.h (NVIDIA's files).
constexpr std::string_view kCudaH9 =
    "/**\n * CUDA API version number\n */\n#define CUDA_VERSION 9000\n\n#ifdef __cplusplus\n";
constexpr std::string_view kVersionTxt9 = "CUDA Version 9.0.176\n";
constexpr std::string_view kCudnnH7 =
    "#if !defined(CUDNN_H_)\n#define CUDNN_H_\n\n#define CUDNN_MAJOR 7\n#define CUDNN_MINOR 3\n"
    "#define CUDNN_PATCHLEVEL 0\n\n#define CUDNN_VERSION (CUDNN_MAJOR * 1000 + CUDNN_MINOR * "
    "100 + CUDNN_PATCHLEVEL)\n";
// cuDNN 9's cudnn_version.h, and a CUDA 12.1 toolkit's version.json.
constexpr std::string_view kCudnnVersionH9 =
    "#ifndef CUDNN_VERSION_H_\n#define CUDNN_VERSION_H_\n\n#define CUDNN_MAJOR 9\n"
    "#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n\n#define CUDNN_VERSION (CUDNN_MAJOR * "
    "10000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)\n";
constexpr std::string_view kVersionJson121 = R"json({
   "cuda" : {
      "name" : "CUDA SDK",
      "version" : "12.1.1"
   },
   "cuda_cudart" : {
      "name" : "CUDA Runtime (cudart)",
      "version" : "12.1.105"
   }
})json";

// A CUDA 9.0 toolkit as its runfile installs it, with cuDNN 7.3.0 copied in.
void write_cuda9(const TempDir& dir, const fs::path& root) {
  dir.write(root / "version.txt", kVersionTxt9);
  dir.write(root / "include" / "cuda.h", kCudaH9);
  dir.write(root / "lib64" / "libcudart.so.9.0.176", "ELF");
  dir.write(root / "lib64" / "libcudart.so.9.0", "ELF");
  dir.write(root / "include" / "cudnn.h", kCudnnH7);
  dir.write(root / "lib64" / "libcudnn.so.7.3.0", "ELF");
  dir.write(root / "lib64" / "libcudnn.so.7", "ELF");
}

std::vector<std::string> files_of(const std::vector<project::VersionEvidence>& found) {
  std::vector<std::string> out;
  for (const auto& evidence : found)
    out.push_back(evidence.file.filename().string() + "=" + evidence.version.to_string());
  return out;
}

TEST_CASE("the version files of CUDA and cuDNN are read", "[project][stack-tree]") {
  CHECK(project::parse_cuda_h_version(kCudaH9) == v("9.0"));
  CHECK(project::parse_cuda_h_version("#define CUDA_VERSION 12040\n") == v("12.4"));
  CHECK(project::parse_cuda_version_txt(kVersionTxt9) == v("9.0.176"));
  CHECK(project::parse_cudnn_header_version(kCudnnH7) == v("7.3.0"));
  CHECK(project::parse_cudnn_header_version(kCudnnVersionH9) == v("9.1.0"));
  // cuDNN 8's cudnn.h includes cudnn_version.h and defines no version itself.
  CHECK_FALSE(project::parse_cudnn_header_version("#include \"cudnn_version.h\"\n"));
  CHECK_FALSE(project::parse_cuda_h_version("#define CUDA_VERSION_MAJOR 9\n"));
}

TEST_CASE("a library's file name carries its version", "[project][stack-tree]") {
  CHECK(project::library_file_version("libcudart.so.9.0", "libcudart.so") == v("9.0"));
  CHECK(project::library_file_version("libcudart.so.12.4.127", "libcudart.so") == v("12.4.127"));
  // Every CUDA 11 runtime is libcudart.so.11.0: it says 11, not 11.0.
  CHECK(project::library_file_version("libcudart.so.11.0", "libcudart.so") == v("11"));
  CHECK(project::library_file_version("libcudnn.so.7", "libcudnn.so") == v("7"));
  CHECK_FALSE(project::library_file_version("libcudnn.so", "libcudnn.so"));
  CHECK_FALSE(project::library_file_version("libcudnn_ops.so.9", "libcudnn.so"));
  CHECK_FALSE(project::library_file_version("libcudart.so.12.bak", "libcudart.so"));
}

TEST_CASE("versions agree on the numbers both give", "[project][stack-tree]") {
  CHECK(project::versions_agree(v("13.0.88"), v("13.0")));
  CHECK(project::versions_agree(v("7.3.0.29"), v("7.3.0")));
  CHECK(project::versions_agree(v("9"), v("9.19.0")));
  CHECK_FALSE(project::versions_agree(v("9.0.176"), v("13.0")));
  CHECK_FALSE(project::versions_agree(v("7.3.0.29"), v("9")));
}

TEST_CASE("a fake CUDA 9.0 tree states its CUDA and cuDNN, most precise first",
          "[project][stack-tree]") {
  const TempDir dir;
  const auto root = dir.path() / "cuda-9.0";
  write_cuda9(dir, root);
  const auto cuda = project::stack_versions_in("cuda", root);
  CHECK(files_of(cuda) == std::vector<std::string>{"version.txt=9.0.176", "cuda.h=9.0",
                                                   "libcudart.so.9.0=9.0",
                                                   "libcudart.so.9.0.176=9.0.176"});
  CHECK_FALSE(project::contradiction(v("9.0.176"), cuda));
  const auto against = project::contradiction(v("13.0"), cuda);
  REQUIRE(against);
  CHECK(against->file == root / "version.txt");

  const auto cudnn = project::stack_versions_in("cudnn", root);
  CHECK(files_of(cudnn) ==
        std::vector<std::string>{"cudnn.h=7.3.0", "libcudnn.so.7=7", "libcudnn.so.7.3.0=7.3.0"});
  CHECK_FALSE(project::contradiction(v("7.3.0.29"), cudnn));
}

TEST_CASE("cuDNN libraries of two versions side by side: one that agrees is enough",
          "[project][stack-tree]") {
  const TempDir dir;
  dir.write("usr/lib/x86_64-linux-gnu/libcudnn.so.8", "ELF");
  dir.write("usr/lib/x86_64-linux-gnu/libcudnn.so.9", "ELF");
  const auto found = project::stack_versions_in("cudnn", dir.path() / "usr");
  CHECK_FALSE(project::contradiction(v("9.1.0.70"), found));
  CHECK_FALSE(project::contradiction(v("8.9.7.29"), found));
  const auto against = project::contradiction(v("7.3.0.29"), found);
  REQUIRE(against);
  CHECK(against->library);
}

TEST_CASE("the machine's CUDA is looked for in order, and where is said", "[project][stack-tree]") {
  const TempDir dir;
  dir.write("home-cuda/version.json", kVersionJson121);
  write_cuda9(dir, dir.path() / "default-cuda");
  dir.write("usr/include/cudnn_version.h", kCudnnVersionH9);
  project::TreeSearch search;
  search.defaults = {dir.path() / "default-cuda"};
  search.system_roots = {dir.path() / "usr"};

  SECTION("CUDA_HOME first") {
    search.cuda_home = (dir.path() / "home-cuda").string();
    const auto found = project::find_stack("cuda", search);
    REQUIRE(found.root);
    CHECK(*found.root == dir.path() / "home-cuda");
    CHECK(found.found_by == "CUDA_HOME");
    CHECK(found.versions.front().version == v("12.1.1"));
    // No cuDNN there: the next place that has one.
    const auto cudnn = project::find_stack("cudnn", search);
    REQUIRE(cudnn.root);
    CHECK(*cudnn.root == dir.path() / "default-cuda");
    CHECK_THAT(cudnn.looked.front(), Catch::Contains("no file states a cuDNN version"));
  }
  SECTION("a CUDA_HOME that does not exist is passed over, and said so") {
    search.cuda_home = (dir.path() / "nowhere").string();
    const auto found = project::find_stack("cuda", search);
    REQUIRE(found.root);
    CHECK(*found.root == dir.path() / "default-cuda");
    CHECK_THAT(found.looked.front(), Catch::Contains("nowhere (CUDA_HOME): does not exist"));
  }
  SECTION("the folder envkit.yaml names is the only place looked in") {
    search.cuda_home = (dir.path() / "home-cuda").string();
    search.named = dir.path() / "empty";
    fs::create_directories(*search.named);
    const auto found = project::find_stack("cuda", search);
    CHECK_FALSE(found.root);
    REQUIRE(found.looked.size() == 1);
    CHECK_THAT(found.looked.front(), Catch::Contains("empty (envkit.yaml)"));
  }
  SECTION("the prefix itself is never the machine's") {
    search.cuda_home = (dir.path() / "home-cuda").string();
    search.exclude = {dir.path() / "home-cuda"};
    const auto found = project::find_stack("cuda", search);
    REQUIRE(found.root);
    CHECK(*found.root == dir.path() / "default-cuda");
  }
  SECTION("cuDNN from the system's packages") {
    search.defaults = {};
    const auto cudnn = project::find_stack("cudnn", search);
    REQUIRE(cudnn.root);
    CHECK(*cudnn.root == dir.path() / "usr");
    CHECK(cudnn.versions.front().version == v("9.1.0"));
  }
}

TEST_CASE("an nvcc named in external: stands for its toolkit", "[project][stack-tree]") {
  const TempDir dir;
  const auto nvcc = dir.write("cuda-9.0/bin/nvcc", "#!/bin/sh\n");
  CHECK(project::named_tree("cuda", nvcc.string(), "/elsewhere") == dir.path() / "cuda-9.0");
  CHECK(project::named_tree("cuda", "./cuda-9.0", dir.path()) == dir.path() / "cuda-9.0");
  CHECK_FALSE(project::named_tree("cudnn", "7.3.0.29", dir.path()));
}

TEST_CASE("/usr/local/cuda's CUDA and cuDNN as their own tools and files say",
          "[project][stack-tree]") {
  const fs::path root = "/usr/local/cuda";
  const auto nvcc = root / "bin" / "nvcc";
  if (!fs::exists(nvcc)) {
    envkit::test::skip_test(envkit::test::SkipKind::expected, "no nvcc at /usr/local/cuda");
    return;
  }
  // nvcc's own `release N.N, VN.N.N` line is the toolkit's version: every file envkit
  // reads must agree with it.
  auto run = envkit::sys::run_process({nvcc.string(), "--version"});
  REQUIRE(run);
  const auto release = project::parse_nvcc_version(run->out);
  REQUIRE(release);
  const auto cuda = project::stack_versions_in("cuda", root);
  REQUIRE_FALSE(cuda.empty());
  for (const auto& evidence : cuda) {
    INFO(evidence.file << ": " << evidence.says);
    CHECK(project::versions_agree(*release, evidence.version));
  }
  CHECK(project::contradiction(Version::from_release({release->major() - 4, 0, 176}), cuda));

  const auto cudnn = project::stack_versions_in("cudnn", root);
  if (cudnn.empty()) {
    envkit::test::skip_test(envkit::test::SkipKind::expected, "no cuDNN in /usr/local/cuda");
    return;
  }
  // The header's major is the N of a libcudnn.so.N the folder holds.
  std::set<std::string> sonames;
  for (const auto& item : fs::directory_iterator(root / "lib64")) {
    static const std::regex kSoname(R"(libcudnn\.so\.([0-9]+))");
    std::smatch match;
    const auto name = item.path().filename().string();
    if (std::regex_match(name, match, kSoname)) sonames.insert(match[1].str());
  }
  REQUIRE_FALSE(cudnn.front().library);
  CHECK(sonames.contains(std::to_string(cudnn.front().version.major())));
  CHECK_FALSE(project::contradiction(cudnn.front().version, cudnn));
}

}  // namespace
