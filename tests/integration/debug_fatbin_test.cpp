// `envkit debug fatbin`: the kernels an ELF file holds, for bug reports.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/envkit_runner.hpp"
#include "support/temp_dir.hpp"
#include "unit/elf/fatbin_fixtures.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using envkit::test::fatbin_bytes;
using envkit::test::run_envkit;
using envkit::test::TempDir;
using envkit::test::tiny_elf;
using nlohmann::json;

namespace {

void write(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Two fatbinaries: SASS for 8.0 and 9.0a, then PTX for compute_90 (ISA 8.5).
std::string two_fatbins() {
  return tiny_elf({{".nv_fatbin", fatbin_bytes({{.kind = 2, .arch = 80},
                                                {.kind = 2, .arch = 90, .flags = 0x100011}}) +
                                      fatbin_bytes({{.kind = 1,
                                                     .arch = 90,
                                                     .flags = 0x8011,
                                                     .isa_major = 8,
                                                     .isa_minor = 5,
                                                     .compressed_size = 8}})}});
}

}  // namespace

TEST_CASE("debug fatbin lists each fatbinary's SASS and PTX and sums them up", "[cli][debug]") {
  TempDir tmp;
  write(tmp.path() / "libkernels.so", two_fatbins());
  const auto r = run_envkit({.args = {"debug", "fatbin", "libkernels.so"}, .cwd = tmp.path()});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out ==
        "fatbin at 0x40 (.nv_fatbin): sm_80 sm_90a\n"
        "fatbin at 0xf0 (.nv_fatbin): compute_90 (PTX 8.5)\n"
        "libkernels.so: 2 fatbinaries, 3 entries (1 compressed); SASS: sm_80 sm_90a; "
        "PTX: compute_90 (newest PTX ISA 8.5)\n");
}

TEST_CASE("debug fatbin --json gives the same as JSON", "[cli][debug]") {
  TempDir tmp;
  write(tmp.path() / "libkernels.so", two_fatbins());
  const auto r =
      run_envkit({.args = {"debug", "fatbin", "libkernels.so", "--json"}, .cwd = tmp.path()});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto answer = json::parse(r.out);
  CHECK(answer["file"] == "libkernels.so");
  REQUIRE(answer["fatbins"].size() == 2);
  CHECK(answer["fatbins"][0]["offset"] == 0x40);
  CHECK(answer["fatbins"][0]["section"] == ".nv_fatbin");
  CHECK(answer["fatbins"][0]["entries"][1]["target"] == "sm_90a");
  CHECK(answer["fatbins"][0]["entries"][1]["arch_specific"] == true);
  const auto& ptx = answer["fatbins"][1]["entries"][0];
  CHECK(ptx["kind"] == "ptx");
  CHECK(ptx["capability"] == "9.0");
  CHECK(ptx["ptx_isa"] == "8.5");
  CHECK(ptx["compressed"] == true);
  CHECK(answer["sass"] == json{"8.0", "9.0"});
  CHECK(answer["sass_arch_specific"] == json{"9.0"});
  CHECK(answer["ptx"] == json{"9.0"});
  CHECK(answer["newest_ptx_isa"] == "8.5");
}

TEST_CASE("debug fatbin names the file and the fault of a malformed one", "[cli][debug]") {
  TempDir tmp;
  std::string bytes = fatbin_bytes({{.kind = 2, .arch = 80}});
  envkit::test::set_le(bytes, 8, 1ULL << 40, 8);  // a size past the section's end
  write(tmp.path() / "libbad.so", tiny_elf({{".nv_fatbin", bytes}}));
  const auto r = run_envkit({.args = {"debug", "fatbin", "libbad.so"}, .cwd = tmp.path()});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Contains("error: libbad.so holds a malformed fatbinary") &&
                        Contains("the fatbinary at offset 0x40 (section .nv_fatbin)"));

  const auto missing = run_envkit({.args = {"debug", "fatbin", "nothere.so"}, .cwd = tmp.path()});
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.err, Contains("cannot read nothere.so"));
}
