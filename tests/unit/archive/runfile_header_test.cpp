// The makeself header parser, on headers made by Debian's makeself 2.4.5 with
// every compression it offers, and on 2.1.x-style headers (the version in
// NVIDIA's CUDA 9/10 runfiles) reconstructed from makeself's own 2.1.5
// template (github.com/megastep/makeself, makeself-header.sh at commit
// 0da478c08ee775473c95a9c47be35cb8a00336fe), trimmed to the lines envkit reads.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "envkit/archive/runfile.hpp"
#include "envkit/sys/fs.hpp"
#include "envkit/sys/process.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using envkit::archive::MakeselfCompression;
using envkit::archive::parse_makeself_header;
using envkit::test::TempDir;

namespace {

// A 2.1.5-shaped header: the count is inline in every `head -n N "$0"`, there
// is no SHA and no skip= line. `decoder` is what makeself.sh put in
// GUNZIP_CMD. The header's own line count is filled in.
std::string header_21x(const std::string& decoder, const std::string& crc = "1612531478",
                       const std::string& md5 = "e02f357d6addf68924ad992a6aeaf780",
                       const std::string& filesizes = "157806") {
  std::string lines =
      "#!/bin/sh\n"
      "# This script was generated using Makeself 2.1.5\n"
      "\n"
      "CRCsum=\"" +
      crc +
      "\"\n"
      "MD5=\"" +
      md5 +
      "\"\n"
      "TMPROOT=${TMPDIR:=/tmp}\n"
      "\n"
      "label=\"cuda-linux64-rel-9.0.176-22781540\"\n"
      "script=\"./install-linux.pl\"\n"
      "scriptargs=\"\"\n"
      "targetdir=\"pkg\"\n"
      "filesizes=\"" +
      filesizes +
      "\"\n"
      "keep=y\n"
      "\n"
      "MS_Check()\n"
      "{\n"
      "    offset=`head -n @N@ \"$1\" | wc -c | tr -d \" \"`\n"
      "}\n"
      "--list)\n"
      "\toffset=`head -n @N@ \"$0\" | wc -c | tr -d \" \"`\n"
      "\t    MS_dd \"$0\" $offset $s | eval \"" +
      decoder +
      "\" | UnTAR t\n"
      "offset=`head -n @N@ \"$0\" | wc -c | tr -d \" \"`\n"
      "    if MS_dd \"$0\" $offset $s | eval \"" +
      decoder +
      "\" | ( cd \"$tmpdir\"; UnTAR x ) | MS_Progress; then\n"
      "eval $finish; exit $res\n";
  const auto count = std::to_string(std::count(lines.begin(), lines.end(), '\n'));
  for (auto at = lines.find("@N@"); at != std::string::npos; at = lines.find("@N@"))
    lines.replace(at, 3, count);
  return lines;
}

}  // namespace

TEST_CASE("makeself 2.1.x headers give their line count checksums and decoder",
          "[archive][runfile]") {
  const auto text = header_21x("gzip -cd") + std::string("\x1f\x8b\x08\x00payload", 11);
  auto header = parse_makeself_header(text, "cuda-linux.9.0.176-22781540.run");
  REQUIRE(header);
  CHECK(header->makeself_version == "2.1.5");
  CHECK(header->label == "cuda-linux64-rel-9.0.176-22781540");
  CHECK(header->line_count == 24);
  CHECK(header->header_bytes == text.size() - 11);
  CHECK(header->filesizes == std::vector<std::uint64_t>{157806});
  CHECK(header->compression == MakeselfCompression::gzip);
  CHECK(header->decompress_command == "gzip -cd");
  REQUIRE(header->crc.size() == 1);
  CHECK(header->crc[0] == 1612531478U);
  CHECK(header->md5 == std::vector<std::string>{"e02f357d6addf68924ad992a6aeaf780"});
  CHECK(header->sha256 == std::vector<std::string>{""});
}

TEST_CASE("makeself 2.1.x decoders name the compression and zero sums are not stated",
          "[archive][runfile]") {
  for (const auto& [decoder, compression] :
       std::vector<std::pair<std::string, MakeselfCompression>>{
           {"bzip2 -d", MakeselfCompression::bzip2}, {"cat", MakeselfCompression::none}}) {
    auto header = parse_makeself_header(
        header_21x(decoder, "0000000000", "00000000000000000000000000000000"), "x.run");
    REQUIRE(header);
    CHECK(header->compression == compression);
    CHECK(!header->crc[0]);
    CHECK(header->md5[0].empty());
  }
}

TEST_CASE("makeself headers with two payloads state a size and sums for each",
          "[archive][runfile]") {
  auto header = parse_makeself_header(
      header_21x("gzip -cd", "1 2", "e02f357d6addf68924ad992a6aeaf780", "10 20"), "x.run");
  REQUIRE(header);
  CHECK(header->filesizes == std::vector<std::uint64_t>{10, 20});
  CHECK(header->payload_bytes() == 30);
  CHECK(header->crc == std::vector<std::optional<std::uint32_t>>{1U, 2U});
  CHECK(header->md5 == std::vector<std::string>{"e02f357d6addf68924ad992a6aeaf780", ""});
}

TEST_CASE("makeself header errors name the file and line and what was expected",
          "[archive][runfile]") {
  SECTION("not a shell script") {
    auto header = parse_makeself_header(
        "\x7f"
        "ELF\x02\x01",
        "cuda_9.0.176_384.81_linux.run");
    REQUIRE(!header);
    CHECK_THAT(header.error().to_string(),
               Contains("cuda_9.0.176_384.81_linux.run") && Contains("expected a shell script"));
  }
  SECTION("head -n counts that disagree") {
    auto text = header_21x("gzip -cd");
    text.replace(text.rfind("head -n 24"), 10, "head -n 23");
    auto header = parse_makeself_header(text, "x.run");
    REQUIRE(!header);
    CHECK_THAT(header.error().to_string(),
               Contains("x.run:22:1") && Contains("`head -n 23` contradicts"));
  }
  SECTION("a line count past the end of the file") {
    auto text = header_21x("gzip -cd");
    text.erase(text.rfind("eval $finish"));
    auto header = parse_makeself_header(text, "x.run");
    REQUIRE(!header);
    CHECK_THAT(header.error().to_string(), Contains("states 24 lines") && Contains("after 23"));
  }
  SECTION("a line count that reaches into the payload") {
    auto text = header_21x("gzip -cd");
    for (auto at = text.find("head -n 24"); at != std::string::npos; at = text.find("head -n 24"))
      text.replace(at, 10, "head -n 25");
    text += std::string("\x1f\x8b\x08\x00\x00\n", 6);
    auto header = parse_makeself_header(text, "x.run");
    REQUIRE(!header);
    CHECK_THAT(header.error().to_string(), Contains("binary data"));
  }
  SECTION("a size that is not a number") {
    auto header = parse_makeself_header(header_21x("gzip -cd", "1", "0", "12x"), "x.run");
    REQUIRE(!header);
    CHECK_THAT(header.error().to_string(), Contains("`12x` is not a size in bytes"));
  }
  SECTION("a decoder envkit does not read") {
    auto header = parse_makeself_header(header_21x("gpg -d"), "x.run");
    REQUIRE(!header);
    CHECK_THAT(header.error().to_string(), Contains("decoded by `gpg -d`"));
  }
  SECTION("a malformed MD5") {
    auto header = parse_makeself_header(header_21x("gzip -cd", "1", "abc"), "x.run");
    REQUIRE(!header);
    CHECK_THAT(header.error().to_string(), Contains("x.run:5:1") && Contains("32 hex digits"));
  }
}

TEST_CASE("makeself 2.4.5 headers parse for every compression Debian's makeself offers",
          "[archive][runfile]") {
  if (!envkit::sys::find_on_path("makeself")) FAIL("makeself is not installed: run scripts/setup");
  const TempDir tmp;
  std::ofstream(tmp.path() / "src/install.sh") << "#!/bin/sh\n";
  fs::create_directories(tmp.path() / "src/lib64");
  std::ofstream(tmp.path() / "src/install.sh") << "#!/bin/sh\n";
  std::ofstream(tmp.path() / "src/lib64/libx.so") << std::string(10000, 'x');
  for (const auto& [flag, compression] : std::vector<std::pair<std::string, MakeselfCompression>>{
           {"--gzip", MakeselfCompression::gzip},
           {"--xz", MakeselfCompression::xz},
           {"--bzip2", MakeselfCompression::bzip2},
           {"--zstd", MakeselfCompression::zstd},
           {"--nocomp", MakeselfCompression::none}}) {
    INFO(flag);
    const auto run = tmp.path() / ("t" + flag + ".run");
    auto made = envkit::sys::run_process({"makeself", "--quiet", "--nox11", "--sha256", flag,
                                          (tmp.path() / "src").string(), run.string(), "label x",
                                          "./install.sh"});
    REQUIRE(made);
    REQUIRE(made->exit_code == 0);
    auto bytes = envkit::sys::read_file(run);
    REQUIRE(bytes);
    auto header = parse_makeself_header(*bytes, run.string());
    REQUIRE(header);
    CHECK(header->makeself_version == "2.4.5");
    CHECK(header->label == "label x");
    CHECK(header->compression == compression);
    CHECK(header->header_bytes + header->payload_bytes() == bytes->size());
    CHECK(header->crc[0].has_value());
    CHECK(header->md5[0].size() == 32);
    CHECK(header->sha256[0].size() == 64);
    // What the script itself would compute: `head -n $skip | wc -c`.
    auto head = envkit::sys::run_process(
        {"sh", "-c", "head -n " + std::to_string(header->line_count) + " \"$0\" | wc -c",
         run.string()});
    REQUIRE(head);
    CHECK(std::stoull(head->out) == header->header_bytes);
  }
}
