// Check 7: one CUDA per environment. Prefixes made of plain files in a temp
// dir: a CUDA library present twice (NVIDIA's archive and a wheel pinned by
// the framework) is an error; links, hard links and identical copies are not.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "envkit/doctor/prefix_checks.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using envkit::doctor::Findings;
using envkit::doctor::Severity;
using envkit::test::TempDir;

const fs::path kWheelLib = "lib/python3.11/site-packages/nvidia/cuda_runtime/lib";

void write(const fs::path& file, const std::string& content) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << content;
}

Findings check(const TempDir& prefix) {
  return envkit::doctor::check_duplicate_libraries(prefix.path());
}

std::vector<const envkit::doctor::Finding*> errors(const Findings& findings) {
  std::vector<const envkit::doctor::Finding*> found;
  for (const auto& finding : findings) {
    if (finding.severity == Severity::error) found.push_back(&finding);
  }
  return found;
}

}  // namespace

TEST_CASE("a CUDA library from an archive and from a wheel is reported", "[doctor]") {
  const TempDir prefix;
  write(prefix.path() / "lib/libcudart.so.12.4.127", "cudart from NVIDIA's archive");
  fs::create_symlink("libcudart.so.12.4.127", prefix.path() / "lib/libcudart.so.12");
  write(prefix.path() / kWheelLib / "libcudart.so.12", "cudart from the wheel torch pins");

  const auto findings = check(prefix);
  const auto found = errors(findings);
  REQUIRE(found.size() == 1);
  CHECK(found[0]->id == "cuda-duplicate-library");
  CHECK(found[0]->message ==
        "libcudart is in the prefix as 2 different files: `lib/libcudart.so.12.4.127` (12.4.127) "
        "and `lib/python3.11/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12` (12); a "
        "program that loads both has two copies of one CUDA library");
  CHECK_THAT(found[0]->fix,
             Contains("run `envkit lock` and `envkit install`: the lock must take cuda's "
                      "components from one source"));
}

TEST_CASE("each duplicated library is its own finding, other libraries stay apart", "[doctor]") {
  const TempDir prefix;
  write(prefix.path() / "lib/libnvJitLink.so.12.4.127", "nvJitLink 12.4");
  write(prefix.path() / "lib/python3.11/site-packages/nvidia/nvjitlink/lib/libnvJitLink.so.12",
        "nvJitLink 12.6, a longer file");
  write(prefix.path() / "lib/libcublas.so.12.4.5.8", "cublas");
  write(prefix.path() / "lib/libcublasLt.so.12.4.5.8", "cublasLt");  // another library
  write(prefix.path() / "lib64/libcudnn_ops.so.9", "cudnn ops");
  write(prefix.path() / "lib/libcudnn.so.9", "cudnn");  // libcudnn_ops is not libcudnn

  const auto findings = check(prefix);
  const auto found = errors(findings);
  REQUIRE(found.size() == 1);
  CHECK_THAT(found[0]->message, Contains("libnvJitLink is in the prefix as 2 different files"));
}

TEST_CASE("hard links, identical copies and symlinks are one file", "[doctor]") {
  const TempDir prefix;
  // The NVIDIA wheel view: lib/ and site-packages share one inode.
  const auto in_wheel =
      prefix.path() / "lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9";
  write(in_wheel, "cudnn 9.1");
  REQUIRE(::link(in_wheel.c_str(), (prefix.path() / "lib/libcudnn.so.9").c_str()) == 0);
  // A copy with the same bytes (link mode copy).
  write(prefix.path() / "lib/libnccl.so.2.21.5", "nccl 2.21.5");
  write(prefix.path() / "lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2", "nccl 2.21.5");
  // lib64 -> lib is lib seen again.
  fs::create_directory_symlink("lib", prefix.path() / "lib64");
  // Not CUDA libraries at all.
  write(prefix.path() / "lib/libz.so.1", "zlib");
  write(prefix.path() / "lib/python3.11/site-packages/nvidia/libcudart.so.12.txt", "notes");

  const auto findings = check(prefix);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].severity == Severity::ok);
  CHECK(findings[0].id == "cuda-duplicate-library");
  CHECK(findings[0].message == "each of the prefix's 2 CUDA libraries is one file");
}

TEST_CASE("a prefix without CUDA libraries is fine", "[doctor]") {
  const TempDir prefix;
  fs::create_directories(prefix.path() / "lib");
  const auto findings = check(prefix);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].severity == Severity::ok);
  CHECK(findings[0].message == "the prefix holds no CUDA library");
}
