// Kernel coverage cached by artifact sha256 (<cache>/kernels/<sha256>.json).
#include "envkit/store/kernel_cache.hpp"

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "envkit/sys/fs.hpp"
#include "support/temp_dir.hpp"

namespace envkit::store {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

const std::string kSha(64, 'c');

elf::KernelCoverage sample() {
  elf::KernelCoverage coverage;
  coverage.sass = {70, 80, 90, 100};
  coverage.sass_arch_specific = {100};
  coverage.ptx = {90, 120};
  coverage.ptx_family_specific = {120};
  coverage.newest_ptx_isa = "8.7";
  return coverage;
}

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

TEST_CASE("kernel cache remembers a coverage by sha256 and reads it back", "[kernel_cache]") {
  TempDir cache;
  CHECK_FALSE(cached_coverage(cache.path(), kSha));
  REQUIRE(remember_coverage(cache.path(), kSha, sample()));
  CHECK(cached_coverage(cache.path(), kSha) == sample());
  CHECK_FALSE(cached_coverage(cache.path(), std::string(64, 'd')));

  // The documented shape (docs/doctor.md), readable by other tools.
  const auto record =
      nlohmann::json::parse(sys::read_file(cache.path() / "kernels" / (kSha + ".json")).value());
  CHECK(record["format"] == 1);
  CHECK(record["sass"] == nlohmann::json{"7.0", "8.0", "9.0", "10.0a"});
  CHECK(record["ptx"] == nlohmann::json{"9.0", "12.0f"});
  CHECK(record["newest_ptx_isa"] == "8.7");
  // Written by rename: nothing else is left in the folder.
  CHECK(std::distance(fs::directory_iterator(cache.path() / "kernels"), {}) == 1);

  // A second record replaces the first.
  elf::KernelCoverage sass_only;
  sass_only.sass = {61};
  REQUIRE(remember_coverage(cache.path(), kSha, sass_only));
  CHECK(cached_coverage(cache.path(), kSha) == sass_only);
}

TEST_CASE("kernel cache reads a damaged record as none", "[kernel_cache]") {
  TempDir cache;
  const fs::path path = cache.path() / "kernels" / (kSha + ".json");
  for (const char* damaged :
       {"", "{", "[]", R"({"format":2,"sass":[],"ptx":[],"newest_ptx_isa":""})",
        R"({"format":1,"sass":["7.0"],"ptx":[]})",
        R"({"format":1,"sass":["seven"],"ptx":[],"newest_ptx_isa":""})",
        R"({"format":1,"sass":["8.0","7.0"],"ptx":[],"newest_ptx_isa":""})",
        R"({"format":1,"sass":["7.0","7.0"],"ptx":[],"newest_ptx_isa":""})",
        R"({"format":1,"sass":[70],"ptx":[],"newest_ptx_isa":""})",
        R"({"format":1,"sass":[],"ptx":["9.0"],"newest_ptx_isa":""})",
        R"({"format":1,"sass":["9.0f"],"ptx":[],"newest_ptx_isa":""})"}) {
    INFO(damaged);
    write(path, damaged);
    CHECK_FALSE(cached_coverage(cache.path(), kSha));
  }
  write(path, R"({"format":1,"sass":["7.0"],"ptx":[],"newest_ptx_isa":""})");
  CHECK(cached_coverage(cache.path(), kSha));
}

TEST_CASE("kernel cache refuses what is not a sha256", "[kernel_cache]") {
  TempDir cache;
  CHECK_FALSE(remember_coverage(cache.path(), "../../etc/passwd", sample()));
  CHECK_FALSE(remember_coverage(cache.path(), std::string(64, 'C'), sample()));
  CHECK_FALSE(cached_coverage(cache.path(), "../x"));
  CHECK_FALSE(fs::exists(cache.path() / "kernels"));
}

}  // namespace
}  // namespace envkit::store
