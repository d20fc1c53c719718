// The fatbin reader: real CUDA libraries (checked against NVIDIA's cuobjdump
// where tests/.tools/cuobjdump is), hand-made fatbinaries, hostile ones, and
// which GPU runs what.
#include "envkit/elf/fatbin.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "envkit/sys/process.hpp"
#include "fatbin_fixtures.hpp"
#include "support/envkit_runner.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

namespace envkit::elf {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using test::FakeEntry;
using test::FakeSection;
using test::fatbin_bytes;
using test::tiny_elf;

const fs::path kCudaLibs = "/usr/local/cuda/lib64";

bool cuda_missing(const fs::path& library) {
  if (fs::exists(library)) return false;
  test::skip_test(test::SkipKind::expected, "no " + library.string() + " (no CUDA 13 toolkit)");
  return true;
}

std::string error_text(const Result<std::vector<EmbeddedFatbin>>& read) {
  REQUIRE_FALSE(read);
  return read.error().to_string();
}

// Each target as cuobjdump 13 names it in `--list-elf` / `--list-ptx`:
// `sm_90a` for arch-specific SASS, but plain `sm_100` for family-specific
// SASS; PTX keeps both suffixes (`sm_100f.ptx`).
std::string cuobjdump_name(const FatbinEntry& entry) {
  const bool ptx = entry.kind == FatbinEntry::Kind::ptx;
  std::string name = "sm_" + std::to_string(entry.arch);
  if (entry.arch_specific) name += 'a';
  if (entry.family_specific && ptx) name += 'f';
  return name + (ptx ? ".ptx" : ".cubin");
}

TEST_CASE("fatbin reader lists exactly what cuobjdump lists for CUDA's libraries", "[fatbin]") {
  const fs::path cuobjdump = test::source_dir() / "tests/.tools/cuobjdump";
  if (!fs::exists(cuobjdump)) {
    test::skip_test(test::SkipKind::setup_should_provide,
                    "no tests/.tools/cuobjdump (scripts/fetch-test-tools downloads it)");
    return;
  }
  // cuBLASLt's arch-specific sm_90a and sm_100a, cuDNN's, NCCL's relocatable
  // fatbinaries beside its .nv_fatbin, cuSPARSE's PTX of four archs.
  for (const char* name :
       {"libcublasLt.so.13", "libcublas.so.13", "libcudnn_ops.so.9",
        "libcudnn_engines_precompiled.so.9", "libnccl.so.2", "libcusparse.so.12"}) {
    const fs::path library = kCudaLibs / name;
    if (cuda_missing(library)) continue;
    INFO(library);
    auto listed =
        sys::run_process({cuobjdump.string(), "--list-elf", "--list-ptx", library.string()},
                         {.timeout = std::chrono::minutes(2)});
    REQUIRE(listed);
    REQUIRE(listed->exit_code == 0);
    // "ELF file   12: libcublasLt.so.12.sm_120.cubin", "PTX file    3: ....sm_120.ptx"
    std::map<std::string, int> theirs;
    const std::regex line(R"(^(ELF|PTX) file +\d+: .*\.(sm_\d+[af]?\.(cubin|ptx))$)");
    std::istringstream lines(listed->out);
    for (std::string text; std::getline(lines, text);) {
      std::smatch match;
      if (std::regex_match(text, match, line)) ++theirs[match[2]];
    }
    REQUIRE_FALSE(theirs.empty());

    auto read = read_fatbins(library);
    REQUIRE(read);
    // cuobjdump lists the .nv_fatbin section, the fatbinaries the runtime registers.
    std::map<std::string, int> ours;
    for (const auto& fatbin : *read) {
      if (fatbin.section != ".nv_fatbin") continue;
      for (const auto& entry : fatbin.entries)
        ++ours[cuobjdump_name(entry)];
    }
    CHECK(ours == theirs);
  }
}

TEST_CASE("fatbin reader reads cuBLASLt's SASS, PTX and embedded fatbinaries", "[fatbin]") {
  const fs::path library = kCudaLibs / "libcublasLt.so.13";
  if (cuda_missing(library)) return;
  auto read = read_fatbins(library);
  REQUIRE(read);
  std::size_t in_section = 0, embedded = 0;
  for (const auto& fatbin : *read) {
    REQUIRE_FALSE(fatbin.entries.empty());
    (fatbin.section == ".nv_fatbin" ? in_section : embedded) += 1;
  }
  CHECK(in_section > 1000);
  CHECK(embedded > 0);  // .cask_resource's kernels, which cuobjdump does not list
  const KernelCoverage coverage = coverage_of(*read);
  // CUDA 13 dropped everything before Turing (7.5); 12.0 ships as PTX for later GPUs.
  CHECK(coverage.sass.front() == 75);
  CHECK(std::find(coverage.sass.begin(), coverage.sass.end(), 90) != coverage.sass.end());
  CHECK(std::find(coverage.ptx.begin(), coverage.ptx.end(), 120) != coverage.ptx.end());
  CHECK_FALSE(coverage.newest_ptx_isa.empty());
  CHECK(runs_on(coverage, arch_of(6, 1)) == Runs::no_kernel);
  CHECK(runs_on(coverage, arch_of(8, 6)) == Runs::sass);
}

TEST_CASE("fatbin reader reads a hand-made library's sections and flags", "[fatbin]") {
  const std::string first =
      fatbin_bytes({{.kind = 2, .arch = 80},
                    {.kind = 2, .arch = 90, .flags = 0x100011},  // sm_90a
                    {.kind = 1,
                     .arch = 100,
                     .flags = 0x208011,
                     .isa_major = 8,
                     .isa_minor = 7,
                     .compressed_size = 10},    // compute_100f, zstd
                    {.kind = 8, .arch = 90}});  // LTO IR: not loaded by the driver
  const std::string second =
      fatbin_bytes({{.kind = 1, .arch = 75, .isa_major = 9, .isa_minor = 0}});
  const std::string nv_fatbin = first + std::string(8, '\0') + second;
  // .rodata: a fatbinary embedded as data, after bytes that merely hold the magic.
  std::string rodata = "\x50\xED\x55\xBA" + std::string(12, '\xff');
  rodata += fatbin_bytes({{.kind = 2, .arch = 120}});
  const std::vector<FakeSection> sections{{".nv_fatbin", nv_fatbin}, {".rodata", rodata}};
  const std::string bytes = tiny_elf(sections);

  auto read = read_fatbins_bytes(bytes, "libhand.so");
  INFO((read ? std::string() : read.error().to_string()));
  REQUIRE(read);
  REQUIRE(read->size() == 3);
  const auto nv = test::section_offset(sections, 0);
  CHECK((*read)[0].offset == nv);
  CHECK((*read)[0].section == ".nv_fatbin");
  CHECK((*read)[1].offset == nv + first.size() + 8);
  CHECK((*read)[2].offset == test::section_offset(sections, 1) + 16);
  CHECK((*read)[2].section == ".rodata");

  const auto& entries = (*read)[0].entries;
  REQUIRE(entries.size() == 3);
  CHECK((*read)[0].other_entries == 1);
  CHECK(target_name(entries[0]) == "sm_80");
  CHECK(target_name(entries[1]) == "sm_90a");
  CHECK(entries[1].arch_specific);
  CHECK(target_name(entries[2]) == "compute_100f");
  CHECK(entries[2].ptx_isa == "8.7");
  CHECK(entries[2].compressed);
  CHECK_FALSE(entries[0].compressed);

  const KernelCoverage coverage = coverage_of(*read);
  CHECK(coverage.sass == std::vector<Arch>{80, 90, 120});
  CHECK(coverage.sass_arch_specific == std::vector<Arch>{90});
  CHECK(coverage.ptx == std::vector<Arch>{75, 100});
  CHECK(coverage.ptx_family_specific == std::vector<Arch>{100});
  CHECK(coverage.newest_ptx_isa == "9.0");

  // The same from the file, read with pread.
  test::TempDir tmp;
  const fs::path path = tmp.path() / "libhand.so";
  std::ofstream(path, std::ios::binary) << bytes;
  auto from_file = read_fatbins(path);
  REQUIRE(from_file);
  CHECK(coverage_of(*from_file) == coverage);
}

TEST_CASE("fatbin reader finds the fatbinary a .nvFatBinSegment wrapper points to", "[fatbin]") {
  // Outside .nv_fatbin and not 8-byte aligned: only the wrapper tells where it is.
  std::string data = "abcd" + fatbin_bytes({{.kind = 2, .arch = 86}});
  const std::vector<FakeSection> layout{{".data", data, SHF_ALLOC | SHF_WRITE},
                                        {".nvFatBinSegment", std::string(24, '\0')}};
  std::string wrapper;
  test::put_le(wrapper, 0x466243B1, 4);
  test::put_le(wrapper, 1, 4);
  test::put_le(wrapper, test::section_offset(layout, 0) + 4, 8);  // address = offset here
  test::put_le(wrapper, 0, 8);
  const std::vector<FakeSection> sections{layout[0], {".nvFatBinSegment", wrapper}};
  auto read = read_fatbins_bytes(tiny_elf(sections), "libwrapped.so");
  REQUIRE(read);
  REQUIRE(read->size() == 1);
  CHECK((*read)[0].section == ".data");
  CHECK(target_name((*read)[0].entries.at(0)) == "sm_86");
}

TEST_CASE("fatbin reader refuses hostile fatbinaries, naming the file, offset and fault",
          "[fatbin]") {
  const auto read_section = [](const std::string& nv_fatbin) {
    return read_fatbins_bytes(tiny_elf({{".nv_fatbin", nv_fatbin}}), "libhostile.so");
  };
  const std::string good = fatbin_bytes({{.kind = 2, .arch = 80}});

  SECTION("a fatbinary size past the section's end") {
    std::string bytes = good;
    test::set_le(bytes, 8, 1ULL << 40, 8);
    const auto text = error_text(read_section(bytes));
    CHECK_THAT(text, Contains("libhostile.so holds a malformed fatbinary") &&
                         Contains("the fatbinary at offset 0x40 (section .nv_fatbin)") &&
                         Contains("run past the end of the section"));
  }
  SECTION("an entry's payload past the fatbinary's end") {
    std::string bytes = good;
    test::set_le(bytes, 16 + 8, 1ULL << 62, 8);
    CHECK_THAT(error_text(read_section(bytes)), Contains("the entry at offset 0x50") &&
                                                    Contains("run past the end of the fatbinary"));
  }
  SECTION("a zero-size entry header") {
    std::string bytes = good;
    test::set_le(bytes, 16 + 4, 0, 4);
    test::set_le(bytes, 16 + 8, 0, 8);
    CHECK_THAT(error_text(read_section(bytes)),
               Contains("its header size is 0 bytes, fewer than the 48"));
  }
  SECTION("an entry header cut short by the fatbinary's size") {
    std::string bytes = fatbin_bytes({{.kind = 2, .arch = 80, .payload = ""}});
    test::set_le(bytes, 8, 20, 8);
    CHECK_THAT(error_text(read_section(bytes.substr(0, 36))),
               Contains("its header needs 48 bytes"));
  }
  SECTION("a version envkit does not know") {
    std::string bytes = good;
    test::set_le(bytes, 4, 2, 2);
    CHECK_THAT(error_text(read_section(bytes)), Contains("its version is 2"));
  }
  SECTION("bytes that are neither a fatbinary nor padding") {
    CHECK_THAT(error_text(read_section(good + "garbage!garbage!")),
               Contains("not the fatbinary magic 0xba55ed50"));
  }
  SECTION("an arch that is no compute capability") {
    CHECK_THAT(error_text(read_section(fatbin_bytes({{.kind = 2, .arch = 0}}))),
               Contains("its arch 0 is no compute capability"));
    CHECK_THAT(error_text(read_section(fatbin_bytes({{.kind = 1, .arch = 5}}))),
               Contains("its arch 5 is no compute capability"));
  }
  SECTION("a compressed entry larger than its payload") {
    CHECK_THAT(error_text(read_section(fatbin_bytes(
                   {{.kind = 2, .arch = 80, .flags = 0x8011, .compressed_size = 4096}}))),
               Contains("it is compressed to 4096 bytes, more than its payload of 16"));
  }
  SECTION("a wrapper that points back into its own section") {
    const std::vector<FakeSection> layout{{".nvFatBinSegment", std::string(24, '\0')}};
    std::string wrapper;
    test::put_le(wrapper, 0x466243B1, 4);
    test::put_le(wrapper, 1, 4);
    test::put_le(wrapper, test::section_offset(layout, 0), 8);
    test::put_le(wrapper, 0, 8);
    CHECK_THAT(
        error_text(read_fatbins_bytes(tiny_elf({{".nvFatBinSegment", wrapper}}), "libhostile.so")),
        Contains("not the fatbinary magic"));
  }
  SECTION("a file cut short") {
    const std::string whole = tiny_elf({{".nv_fatbin", good}});
    std::string cut = whole.substr(0, 64 + 40);
    CHECK_THAT(
        error_text(read_fatbins_bytes(cut, "libcut.so")),
        Contains("libcut.so is not a valid ELF file") && Contains("past the end of the file"));
  }
  SECTION("a file that is not ELF at all") {
    CHECK_THAT(error_text(read_fatbins_bytes("#!/bin/sh\necho hello\n", "script.so")),
               Contains("script.so is not an ELF file"));
  }
}

TEST_CASE("fatbin reader bounds the entries it reads", "[fatbin]") {
  // 1.1 million empty 48-byte entries in one fatbinary: refused, not read on and on.
  FakeEntry tiny{.kind = 8, .arch = 80, .payload = "", .header_size = 48};
  const std::string one = test::entry_bytes(tiny);
  std::string body;
  body.reserve(one.size() * 1'100'000);
  for (int i = 0; i < 1'100'000; ++i)
    body += one;
  std::string fatbin;
  test::put_le(fatbin, 0xBA55ED50, 4);
  test::put_le(fatbin, 1, 2);
  test::put_le(fatbin, 16, 2);
  test::put_le(fatbin, body.size(), 8);
  CHECK_THAT(
      error_text(read_fatbins_bytes(tiny_elf({{".nv_fatbin", fatbin + body}}), "libmany.so")),
      Contains("libmany.so holds too many fatbinary entries"));
}

TEST_CASE("an ELF file without fatbinaries has an empty coverage", "[fatbin]") {
  auto read = read_fatbins_bytes(tiny_elf({{".rodata", "hello"}}), "libplain.so");
  REQUIRE(read);
  CHECK(read->empty());
  CHECK(coverage_of(*read).empty());
}

KernelCoverage coverage(std::vector<Arch> sass, std::vector<Arch> ptx = {}, std::string isa = {}) {
  KernelCoverage c;
  c.sass = std::move(sass);
  c.ptx = std::move(ptx);
  c.newest_ptx_isa = isa.empty() && !c.ptx.empty() ? "8.5" : isa;
  return c;
}

TEST_CASE("runs_on follows CUDA's rules for SASS and PTX", "[fatbin]") {
  // PyPI's torch 2.8.0: SASS for 7.0 to 12.0, no PTX; a GTX 1080 Ti is 6.1.
  const auto torch28 = coverage({70, 75, 80, 86, 90, 100, 120});
  CHECK(runs_on(torch28, arch_of(6, 1)) == Runs::no_kernel);
  CHECK(runs_on(coverage({80}), arch_of(8, 6)) == Runs::sass);
  CHECK(runs_on(coverage({86}), arch_of(8, 0)) == Runs::no_kernel);
  CHECK(runs_on(coverage({90}), arch_of(10, 0)) == Runs::no_kernel);

  auto hopper_only = coverage({90});
  hopper_only.sass_arch_specific = {90};
  CHECK(runs_on(hopper_only, arch_of(9, 0)) == Runs::sass);
  CHECK(runs_on(hopper_only, arch_of(10, 0)) == Runs::no_kernel);
  auto blackwell = coverage({100});
  blackwell.sass_arch_specific = {100};
  CHECK(runs_on(blackwell, arch_of(10, 3)) == Runs::no_kernel);   // sm_100a: exactly 10.0
  CHECK(runs_on(coverage({100}), arch_of(10, 3)) == Runs::sass);  // sm_100 / sm_100f: 10.x

  CHECK(runs_on(coverage({}, {90}, "8.5"), arch_of(12, 0)) == Runs::ptx_jit);
  CHECK(runs_on(coverage({}, {90}, "8.5"), arch_of(8, 6)) == Runs::no_kernel);
  CHECK(runs_on(coverage({}, {90}, "8.5"), arch_of(12, 0), "8.4") == Runs::ptx_too_new);
  CHECK(runs_on(coverage({}, {90}, "8.5"), arch_of(12, 0), "8.5") == Runs::ptx_jit);
  CHECK(runs_on(coverage({}, {90}, "9.0"), arch_of(12, 0), "8.10") == Runs::ptx_too_new);
  CHECK(runs_on(coverage({120}, {90}, "9.0"), arch_of(12, 0), "8.0") == Runs::sass);

  auto family = coverage({}, {100}, "8.8");
  family.ptx_family_specific = {100};
  CHECK(runs_on(family, arch_of(10, 3)) == Runs::ptx_jit);
  CHECK(runs_on(family, arch_of(12, 0)) == Runs::no_kernel);
  auto specific = coverage({}, {90}, "8.0");
  specific.ptx_arch_specific = {90};
  CHECK(runs_on(specific, arch_of(9, 0)) == Runs::ptx_jit);
  CHECK(runs_on(specific, arch_of(10, 0)) == Runs::no_kernel);
}

TEST_CASE("coverage merges keep each arch's widest reach", "[fatbin]") {
  auto a = coverage({80, 90}, {90}, "8.4");
  a.sass_arch_specific = {90};
  a.ptx_arch_specific = {90};
  auto b = coverage({90, 120}, {100}, "8.7");
  a.merge(b);
  CHECK(a.sass == std::vector<Arch>{80, 90, 120});
  CHECK(a.sass_arch_specific.empty());  // b's plain sm_90 reaches further
  CHECK(a.ptx == std::vector<Arch>{90, 100});
  CHECK(a.ptx_arch_specific == std::vector<Arch>{90});
  CHECK(a.newest_ptx_isa == "8.7");
  a.merge(KernelCoverage{});
  CHECK(a.newest_ptx_isa == "8.7");
}

TEST_CASE("capabilities read and print as CUDA writes them", "[fatbin]") {
  CHECK(capability_text(61) == "6.1");
  CHECK(capability_text(100) == "10.0");
  CHECK(capability_text(arch_of(12, 0)) == "12.0");
  CHECK(parse_capability("6.1") == Arch{61});
  CHECK(parse_capability("10.0") == Arch{100});
  CHECK(parse_capability("12.1") == Arch{121});
  for (const char* bad : {"", "6", "6.", ".1", "6.10", "a.b", "9.0a", "-1.0", "6.1 "}) {
    INFO(bad);
    CHECK_FALSE(parse_capability(bad));
  }
  CHECK(ptx_isa_newer("8.10", "8.9"));
  CHECK(ptx_isa_newer("9.0", "8.8"));
  CHECK_FALSE(ptx_isa_newer("8.5", "8.5"));
}

}  // namespace
}  // namespace envkit::elf
