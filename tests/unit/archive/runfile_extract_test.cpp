// extract_runfile on runfiles made by Debian's makeself in NVIDIA's three
// shapes (support/runfile_fixture.hpp), and on hostile ones.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>

#include "envkit/archive/runfile.hpp"
#include "envkit/sys/fs.hpp"
#include "support/runfile_fixture.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using envkit::archive::extract_runfile_file;
using envkit::archive::ExtractOptions;
using envkit::test::FixtureFile;
using envkit::test::RunfileCompression;
using envkit::test::RunfileFixture;
using envkit::test::TempDir;

namespace {

// Real ELF libraries where /usr/local/cuda has them (up to 24 MiB), else small stand-ins.
std::vector<FixtureFile> toolkit_files() {
  auto files = envkit::test::real_cuda_libraries(std::uint64_t{24} << 20);
  if (files.empty()) {
    files.push_back({.path = "lib64/libcudart.so.9.0.176",
                     .content = "\x7f"
                                "ELF cudart"});
  }
  files.push_back({.path = "bin/nvcc",
                   .content = "\x7f"
                              "ELF nvcc",
                   .executable = true});
  files.push_back({.path = "include/cuda_runtime.h", .content = "#pragma once\n"});
  files.push_back({.path = "nvvm/libdevice/libdevice.10.bc", .content = "BC"});
  files.push_back({.path = "extras/CUPTI/lib64/libcupti.so.9.0.176",
                   .content = "\x7f"
                              "ELF cupti"});
  files.push_back({.path = "extras/CUPTI/include/cupti.h", .content = "#pragma once\n"});
  files.push_back({.path = "lib64/libcudart.so.9.0", .symlink_target = "libcudart.so.9.0.176"});
  return files;
}

void check_same_file(const fs::path& unpacked, const FixtureFile& file) {
  INFO(unpacked.string());
  REQUIRE(fs::is_regular_file(unpacked));
  if (!file.source.empty()) {
    CHECK(fs::file_size(unpacked) == fs::file_size(file.source));
    auto bytes = envkit::sys::read_file(unpacked);
    REQUIRE(bytes);
    CHECK(bytes->substr(0, 4) ==
          "\x7f"
          "ELF");
  } else {
    CHECK(envkit::sys::read_file(unpacked).value() == file.content);
  }
}

ExtractOptions nested_runs() {
  ExtractOptions options;
  options.nested_runfile = [](std::string_view entry) { return entry.ends_with(".run"); };
  return options;
}

}  // namespace

TEST_CASE("runfiles in the nested 9.x form unpack with their inner runfiles",
          "[archive][runfile]") {
  for (const auto compression : {RunfileCompression::gzip, RunfileCompression::xz}) {
    const TempDir tmp;
    const RunfileFixture fixture(tmp.path() / "runs");
    const auto files = toolkit_files();
    const auto run = fixture.nested("9.0.176", "22781540", "384.81", files, compression);
    auto result = extract_runfile_file(run.path, tmp.path() / "out", nested_runs());
    REQUIRE(result);
    const auto toolkit = tmp.path() / "out/run_files/cuda-linux.9.0.176-22781540";
    for (const auto& file : files) {
      if (file.symlink_target.empty()) check_same_file(toolkit / file.path, file);
    }
    CHECK(fs::read_symlink(toolkit / "lib64/libcudart.so.9.0") == "libcudart.so.9.0.176");
    CHECK(envkit::sys::read_file(toolkit / "version.txt").value() == "CUDA Version 9.0.176\n");
    CHECK(fs::exists(tmp.path() / "out/cuda-installer.pl"));
    // The inner runfile itself is not written; its entries are listed once each.
    CHECK(!fs::exists(tmp.path() / "out/run_files/cuda-linux.9.0.176-22781540.run"));
    CHECK(fs::exists(tmp.path() / "out/run_files/NVIDIA-Linux-x86_64-384.81/nvidia-installer"));
    std::set<std::string> paths;
    for (const auto& entry : result->entries)
      CHECK(paths.insert(entry.path).second);
    CHECK(paths.contains("run_files/cuda-linux.9.0.176-22781540/bin/nvcc"));
  }
}

TEST_CASE("nested runfile entries go through the map and a runfile two deep stays a file",
          "[archive][runfile]") {
  const TempDir tmp;
  const RunfileFixture fixture(tmp.path() / "runs");
  const auto inner_inner = fixture.make("deep.run", {{.path = "x", .content = "x"}});
  const auto run = fixture.nested("10.0.130", "24818417", "410.48",
                                  {{.path = "lib64/libcublas.so.10.0.130",
                                    .content = "\x7f"
                                               "ELF cublas"},
                                   {.path = "lib64/deep.run", .source = inner_inner.path},
                                   {.path = "doc/manual.pdf", .content = "pdf"}});
  auto options = nested_runs();
  std::vector<std::string> seen;
  options.map = [&](std::string_view path) -> std::optional<std::string> {
    seen.emplace_back(path);
    constexpr std::string_view kToolkit = "run_files/cuda-linux.10.0.130-24818417/";
    if (!path.starts_with(kToolkit)) return std::nullopt;
    const auto rest = path.substr(kToolkit.size());
    if (rest.starts_with("doc/")) return std::nullopt;
    return "toolkit/" + std::string(rest);
  };
  auto result = extract_runfile_file(run.path, tmp.path() / "out", options);
  REQUIRE(result);
  CHECK(envkit::sys::read_file(tmp.path() / "out/toolkit/lib64/libcublas.so.10.0.130").value() ==
        "\x7f"
        "ELF cublas");
  CHECK(fs::file_size(tmp.path() / "out/toolkit/lib64/deep.run") == inner_inner.size);
  CHECK(!fs::exists(tmp.path() / "out/toolkit/doc"));
  CHECK(!fs::exists(tmp.path() / "out/run_files"));
  CHECK(std::find(seen.begin(), seen.end(),
                  "run_files/cuda-linux.10.0.130-24818417/lib64/libcublas.so.10.0.130") !=
        seen.end());
}

TEST_CASE("runfiles in the builds form and patch runfiles unpack", "[archive][runfile]") {
  const TempDir tmp;
  const RunfileFixture fixture(tmp.path() / "runs");
  const auto libs = toolkit_files();
  const std::vector<envkit::test::FixtureComponent> components{
      {.name = "cuda_cudart", .version = "11.1.74", .files = libs},
      {.name = "cuda_nvcc",
       .version = "11.1.74",
       .files = {{.path = "bin/nvcc", .content = "nvcc", .executable = true}}}};
  const auto run = fixture.builds("11.1.0_455.23.05", components, RunfileCompression::xz);
  auto result = extract_runfile_file(run.path, tmp.path() / "out");
  REQUIRE(result);
  for (const auto& file : libs) {
    if (file.symlink_target.empty()) {
      check_same_file(tmp.path() / "out/builds/cuda_cudart" / file.path, file);
    }
  }
  CHECK((fs::status(tmp.path() / "out/builds/cuda_nvcc/bin/nvcc").permissions() &
         fs::perms::owner_exec) != fs::perms::none);
  CHECK(fs::exists(tmp.path() / "out/builds/nsight_compute/ncu"));

  const auto patch = fixture.patch("9.0.176", 4,
                                   {{.path = "lib64/libcublas.so.9.0.480",
                                     .content = "\x7f"
                                                "ELF cublas patch"}});
  auto patched = extract_runfile_file(patch.path, tmp.path() / "patch");
  REQUIRE(patched);
  CHECK(fs::exists(tmp.path() / "patch/lib64/libcublas.so.9.0.480"));
  CHECK(fs::exists(tmp.path() / "patch/install.sh"));
}

TEST_CASE("hostile runfiles are refused with the runfile and what was expected",
          "[archive][runfile]") {
  const TempDir tmp;
  const RunfileFixture fixture(tmp.path() / "runs");
  // Incompressible, so the payload is larger than any cut below.
  std::string big(300000, '\0');
  std::mt19937 random(18);
  for (auto& c : big)
    c = static_cast<char>(random());
  const auto good = fixture.make("good.run", {{.path = "lib64/libx.so", .content = big}});
  REQUIRE(extract_runfile_file(good.path, tmp.path() / "good"));
  const auto refusal = [&](const envkit::test::BuiltRunfile& run) {
    auto result = extract_runfile_file(run.path, tmp.path() / run.path.filename());
    REQUIRE(!result);
    const auto text = result.error().to_string();
    CHECK_THAT(text, Contains(run.path.filename().string()));
    return text;
  };
  SECTION("a head -n count one line short") {
    CHECK_THAT(refusal(fixture.lying_line_count(good, "short.run", -1)),
               Contains("no gzip data at byte") && Contains("wrong line count"));
  }
  SECTION("a head -n count one line long") {
    CHECK_THAT(refusal(fixture.lying_line_count(good, "long.run", 1)), Contains("binary data"));
  }
  SECTION("filesizes larger than the payload") {
    CHECK_THAT(refusal(fixture.lying_filesizes(good, "larger.run", 100)), Contains("ends early"));
  }
  SECTION("filesizes smaller than the payload") {
    CHECK_THAT(refusal(fixture.lying_filesizes(good, "smaller.run", -100)),
               Contains("goes on past them"));
  }
  SECTION("bytes after the gzip data, inside the stated size") {
    const auto padded = fixture.lying_filesizes(good, "padded.run", 7);
    std::ofstream(padded.path, std::ios::binary | std::ios::app) << "garbage";
    const auto text = refusal(padded);
    CHECK_THAT(text,
               Contains("bytes follow the end of the gzip data") && Contains("trailing garbage"));
    CHECK_THAT(text, !Contains("goes on past them"));
  }
  SECTION("a truncated payload") {
    CHECK_THAT(refusal(fixture.truncated(good, "cut.run", 5000)),
               Contains("ends early") && Contains("its payload ends at byte"));
  }
  SECTION("an MD5 mismatch") {
    CHECK_THAT(refusal(fixture.wrong_md5(good, "md5.run")),
               Contains("MD5 is") && Contains("the header states aaaaaaaa"));
  }
  SECTION("a CRC mismatch") {
    CHECK_THAT(refusal(fixture.wrong_crc(good, "crc.run")), Contains("CRCsum (cksum) is"));
  }
  SECTION("a payload entry with ..") {
    const auto text =
        refusal(fixture.escaping("dotdot.run", {{.path = "a", .content = "a"}}, "evil"));
    CHECK_THAT(text, Contains("refused") && Contains("../evil"));
    CHECK(!fs::exists(tmp.path() / "evil"));
  }
  SECTION("a symlink out of the tree") {
    const auto run = fixture.make(
        "link.run", {{.path = "lib64/escape", .symlink_target = "../../../../etc/passwd"}});
    CHECK_THAT(refusal(run), Contains("refused") && Contains("lib64/escape"));
  }
  SECTION("a nested runfile with a bad checksum names both runfiles") {
    const auto inner_bad = fixture.wrong_md5(good, "cuda-linux.9.0.176-1.run");
    const auto outer = fixture.make(
        "outer.run", {{.path = "run_files/cuda-linux.9.0.176-1.run", .source = inner_bad.path}});
    auto result = extract_runfile_file(outer.path, tmp.path() / "outer", nested_runs());
    REQUIRE(!result);
    CHECK_THAT(result.error().to_string(),
               Contains("outer.run!/./run_files/cuda-linux.9.0.176-1.run") && Contains("MD5 is"));
  }
  SECTION("a file that is not a runfile") {
    std::ofstream(tmp.path() / "plain.run") << "#!/bin/sh\necho hello\n";
    auto result = extract_runfile_file(tmp.path() / "plain.run", tmp.path() / "plain");
    REQUIRE(!result);
    CHECK_THAT(result.error().to_string(),
               Contains("plain.run") && Contains("is not a makeself runfile"));
  }
}
