// Zips as envkit reads them before libarchive does: UTF-8 names whatever the
// locale, an empty zip, and entries that overlap one another refused.
#include <catch2/catch.hpp>
#include <clocale>
#include <filesystem>

#include "archive_maker.hpp"
#include "envkit/archive/extract.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using envkit::archive::ExtractOptions;
using envkit::test::read_bytes;
using envkit::test::TempDir;
using envkit::test::tree;
using envkit::test::ZipBuilder;

// "café/naïve.txt" and a CJK name, as UTF-8 bytes.
const std::string kCafe = "caf\xc3\xa9";
const std::string kNaive = "na\xc3\xafve.txt";
const std::string kCjk = "\xe6\x95\xb0\xe6\x8d\xae.py";

std::string utf8_zip(bool utf8_flag) {
  ZipBuilder zip;
  zip.add(kCafe + "/" + kNaive, "bonjour\n", 0100644, utf8_flag);
  zip.add("pkg/" + kCjk, "data = 1\n", 0100644, utf8_flag);
  return zip.finish();
}

// Sets LC_ALL for the test's length, as a user's shell would before envkit starts.
class ProcessLocale {
 public:
  explicit ProcessLocale(const char* name) : previous_(std::setlocale(LC_ALL, nullptr)) {
    std::setlocale(LC_ALL, name);
  }
  ~ProcessLocale() { std::setlocale(LC_ALL, previous_.c_str()); }
  ProcessLocale(const ProcessLocale&) = delete;
  ProcessLocale& operator=(const ProcessLocale&) = delete;

 private:
  std::string previous_;
};

}  // namespace

TEST_CASE("zip entries with UTF-8 names unpack whatever the locale", "[archive][zip]") {
  for (const char* locale : {"C", "C.UTF-8"}) {
    const ProcessLocale set(locale);
    for (const bool flag : {true, false}) {
      for (const unsigned threads : {1U, 4U}) {
        INFO(locale << " bit 11: " << flag << " threads: " << threads);
        TempDir tmp;
        const auto file = tmp.path() / "names.whl";
        envkit::test::write_bytes(file, utf8_zip(flag));
        ExtractOptions options;
        options.threads = threads;
        auto result = envkit::archive::extract_file(file, tmp.path() / "dest", options);
        REQUIRE(result.ok());
        CHECK(read_bytes(tmp.path() / "dest" / kCafe / kNaive) == "bonjour\n");
        CHECK(read_bytes(tmp.path() / "dest/pkg" / kCjk) == "data = 1\n");
        CHECK(tree(tmp.path() / "dest") ==
              std::vector<std::string>{kCafe + "/", kCafe + "/" + kNaive, "pkg/", "pkg/" + kCjk});
      }
    }
  }
}

TEST_CASE("tar entries with UTF-8 names unpack in the C locale", "[archive][zip]") {
  const ProcessLocale set("C");
  TempDir tmp;
  // GNU tar stores the bytes; pax as a UTF-8 path record.
  for (const auto format : {envkit::test::Format::gnutar, envkit::test::Format::tar_xz}) {
    envkit::test::MemorySource source(envkit::test::make_archive(
        format, {envkit::test::Entry::file(kCafe + "/" + kNaive, "bonjour\n")}));
    auto result = envkit::archive::extract(source, tmp.path() / "dest");
    REQUIRE(result.ok());
    CHECK(read_bytes(tmp.path() / "dest" / kCafe / kNaive) == "bonjour\n");
  }
}

TEST_CASE("an empty zip is an empty archive", "[archive][zip]") {
  TempDir tmp;
  const auto file = tmp.path() / "empty.zip";
  envkit::test::write_bytes(file, ZipBuilder().finish());
  REQUIRE(fs::file_size(file) == 22);
  auto result = envkit::archive::extract_file(file, tmp.path() / "dest");
  REQUIRE(result.ok());
  CHECK(result->entries.empty());
  CHECK(result->bytes_written == 0);
  CHECK(fs::is_directory(tmp.path() / "dest"));
  CHECK(tree(tmp.path() / "dest").empty());
}

TEST_CASE("zip entries that overlap one another are refused", "[archive][zip]") {
  TempDir tmp;
  const auto refusal = [&](const std::string& bytes) {
    const auto file = tmp.path() / "bomb.zip";
    envkit::test::write_bytes(file, bytes);
    for (const unsigned threads : {1U, 4U}) {
      ExtractOptions options;
      options.threads = threads;
      auto result = envkit::archive::extract_file(file, tmp.path() / "dest", options);
      REQUIRE_FALSE(result.ok());
      CHECK_THAT(result.error().headline(), Contains("refused to unpack `" + file.string() + "`"));
      CHECK_FALSE(fs::exists(tmp.path() / "dest/f0"));
    }
    auto result = envkit::archive::extract_file(file, tmp.path() / "dest");
    return result.error().to_string();
  };

  SECTION("100 directory records reading one entry's data") {
    ZipBuilder zip;
    const auto first = zip.add("f0", std::string(1000, 'x'));
    for (int i = 1; i < 100; ++i) {
      auto copy = first;
      copy.name = "f" + std::to_string(i);
      zip.records().push_back(copy);
    }
    CHECK_THAT(refusal(zip.finish()),
               Contains("entries `f0` and `f1` overlap in the file") && Contains("zip bomb"));
  }
  SECTION("an entry's data holding the next entry (A better zip bomb)") {
    // The outer entry's stored data is the inner entry, header and all.
    ZipBuilder inner;
    inner.add("f1", "inner data");
    const auto inner_bytes = inner.finish();
    const auto inner_entry = inner_bytes.substr(0, 30 + 2 + 10);  // its local header and data
    ZipBuilder zip;
    zip.add("f0", inner_entry);
    auto quoted = inner.records().front();
    quoted.offset = 30 + 2;  // inside f0's data
    zip.records().push_back(quoted);
    CHECK_THAT(refusal(zip.finish()), Contains("entries `f0` and `f1` overlap"));
  }
  SECTION("an entry's data running into the central directory") {
    ZipBuilder zip;
    zip.add("f0", "abc");
    zip.records().front().size = 1000;
    CHECK_THAT(refusal(zip.finish()), Contains("runs into the central directory"));
  }
}

TEST_CASE("zips written by zip tools pass the layout check", "[archive][zip]") {
  // libarchive's writer puts sizes in data descriptors after the data.
  TempDir tmp;
  const auto file = tmp.path() / "ok.whl";
  envkit::test::write_bytes(
      file, envkit::test::make_archive(
                envkit::test::Format::zip,
                {envkit::test::Entry::file("a/one", "1"),
                 {.path = "a/two", .content = "2", .size_unknown = true},
                 envkit::test::Entry::file("a/three", envkit::test::pseudo_random(70'000))}));
  auto result = envkit::archive::extract_file(file, tmp.path() / "dest");
  REQUIRE(result.ok());
  CHECK(read_bytes(tmp.path() / "dest/a/two") == "2");
}
