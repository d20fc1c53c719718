// envkit's own zip reader (zip_unpack.cpp): a wheel's files checked against its
// RECORD as they are written, local headers against the central directory,
// CRC-32 and sizes against the data; each refusal names the wheel and the entry.
#include <sys/resource.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "archive_maker.hpp"
#include "envkit/archive/extract.hpp"
#include "envkit/archive/wheel_record.hpp"
#include "envkit/core/sha256.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using envkit::archive::ExtractOptions;
using envkit::test::record_hash;
using envkit::test::record_row;
using envkit::test::TempDir;
using envkit::test::ZipBuilder;

const std::string kInit = "print('demo')\n";
const std::string kLib = "def f():\n    return 1\n";

// A small wheel, stored entries; `record` is its RECORD's text.
std::string wheel_with_record(const std::string& record) {
  ZipBuilder zip;
  zip.add("demo/__init__.py", kInit);
  zip.add("demo/lib.py", kLib);
  zip.add("demo-1.0.dist-info/RECORD", record);
  return zip.finish();
}

std::string good_record() {
  return record_row("demo/__init__.py", kInit) + record_row("demo/lib.py", kLib) +
         "demo-1.0.dist-info/RECORD,,\n";
}

struct Unpacked {
  envkit::Result<envkit::archive::ExtractResult> result;
  fs::path destination;
};

Unpacked unpack(const TempDir& tmp, const std::string& bytes, unsigned threads = 1) {
  const auto file = tmp.path() / "demo-1.0-py3-none-any.whl";
  envkit::test::write_bytes(file, bytes);
  ExtractOptions options;
  options.hash_files = true;
  options.threads = threads;
  const auto destination = tmp.path() / ("dest" + std::to_string(threads));
  return {envkit::archive::extract_file(file, destination, options), destination};
}

std::string refusal(const TempDir& tmp, const std::string& bytes) {
  auto unpacked = unpack(tmp, bytes);
  REQUIRE_FALSE(unpacked.result.ok());
  const auto text = unpacked.result.error().to_string();
  CHECK_THAT(text, Contains("demo-1.0-py3-none-any.whl`"));
  return text;
}

}  // namespace

TEST_CASE("a wheel whose files match its RECORD unpacks with RECORD's hashes", "[archive][zip]") {
  TempDir tmp;
  auto unpacked = unpack(tmp, wheel_with_record(good_record()));
  REQUIRE(unpacked.result.ok());
  for (const auto& entry : unpacked.result->entries) {
    if (entry.path == "demo/lib.py") CHECK(entry.sha256 == envkit::core::sha256_hex(kLib));
    if (entry.path == "demo-1.0.dist-info/RECORD") {
      CHECK(entry.sha256 == envkit::core::sha256_hex(good_record()));
    }
  }
  CHECK(envkit::test::read_bytes(unpacked.destination / "demo/lib.py") == kLib);
}

TEST_CASE(
    "a RECORD row that disagrees with a file of the package is refused naming the wheel "
    "and entry",
    "[archive][zip]") {
  TempDir tmp;
  std::string record;
  std::string expected;
  SECTION("a hash") {
    record = record_row("demo/__init__.py", kInit) +
             record_row("demo/lib.py", "def f():\n    return 2\n") +
             "demo-1.0.dist-info/RECORD,,\n";
    expected =
        "entry `demo/lib.py`: its sha256 is " + envkit::core::sha256_hex(kLib) + ", RECORD says ";
  }
  SECTION("a size") {
    record = record_row("demo/__init__.py", kInit) + "demo/lib.py," + record_hash(kLib) + ",999\n";
    expected = "entry `demo/lib.py`: it holds 22 bytes, RECORD says 999";
  }
  CHECK_THAT(refusal(tmp, wheel_with_record(record)),
             Contains(expected) && Contains("changed after it was built"));
}

TEST_CASE(
    "a RECORD row that disagrees with the wheel's own METADATA is a warning naming the "
    "wheel and entry",
    "[archive][zip]") {
  // PyPI's torch 1.10.2, 1.11.0 and 1.12.1 list their METADATA with the hash
  // and size it had before a rewrite; pip and uv install them. The file is
  // kept as the wheel holds it, with its own hash.
  TempDir tmp;
  const std::string metadata = "Name: demo\nVersion: 1.0\n";
  ZipBuilder zip;
  zip.add("demo/__init__.py", kInit);
  zip.add("demo-1.0.dist-info/METADATA", metadata);
  zip.add("demo-1.0.dist-info/RECORD",
          record_row("demo/__init__.py", kInit) +
              record_row("demo-1.0.dist-info/METADATA", "Name: demo\nVersion: 1.0rc1\n") +
              "demo-1.0.dist-info/RECORD,,\n");
  auto unpacked = unpack(tmp, zip.finish());
  REQUIRE(unpacked.result.ok());
  REQUIRE(unpacked.result->warnings.size() == 1);
  CHECK_THAT(unpacked.result->warnings[0],
             Contains("demo-1.0-py3-none-any.whl`") &&
                 Contains("entry `demo-1.0.dist-info/METADATA` (it holds 24 bytes, RECORD says "
                          "27)"));
  std::map<std::string, std::string> hashes;
  for (const auto& entry : unpacked.result->entries)
    hashes[entry.path] = entry.sha256;
  CHECK(hashes["demo-1.0.dist-info/METADATA"] == envkit::core::sha256_hex(metadata));
  CHECK(envkit::test::read_bytes(unpacked.destination / "demo-1.0.dist-info/METADATA") == metadata);
}

TEST_CASE("a wheel whose RECORD lists a path outside the package is refused", "[archive][zip]") {
  TempDir tmp;
  SECTION("absolute") {
    CHECK_THAT(refusal(tmp, wheel_with_record(good_record() + "/etc/passwd,,\n")),
               Contains("entry `/etc/passwd` (line 4 of its RECORD)") &&
                   Contains("absolute paths are not allowed"));
  }
  SECTION("climbing with ..") {
    CHECK_THAT(refusal(tmp, wheel_with_record(good_record() + "demo/../../x.pth,,\n")),
               Contains("entry `demo/../../x.pth`") && Contains("`..` in a path is not allowed"));
  }
  CHECK_FALSE(fs::exists(tmp.path() / "dest1/demo/lib.py"));
}

TEST_CASE("a wheel whose RECORD lists a path twice is refused", "[archive][zip]") {
  TempDir tmp;
  CHECK_THAT(refusal(tmp, wheel_with_record(good_record() + record_row("demo/lib.py", kLib))),
             Contains("entry `demo/lib.py` (line 4 of its RECORD): RECORD lists it twice"));
}

TEST_CASE("a wheel without RECORD or a file RECORD omits keeps the computed hashes",
          "[archive][zip]") {
  TempDir tmp;
  ZipBuilder zip;
  zip.add("demo/lib.py", kLib);
  SECTION("no RECORD") {}
  SECTION("a RECORD that does not list the file") {
    zip.add("demo-1.0.dist-info/RECORD", "demo-1.0.dist-info/RECORD,,\n");
  }
  auto unpacked = unpack(tmp, zip.finish());
  REQUIRE(unpacked.result.ok());
  CHECK(unpacked.result->entries.at(1).path == "demo/lib.py");
  CHECK(unpacked.result->entries.at(1).sha256 == envkit::core::sha256_hex(kLib));
}

TEST_CASE("a zip whose local header disagrees with its central directory is refused",
          "[archive][zip]") {
  TempDir tmp;
  ZipBuilder zip;
  zip.add("demo/__init__.py", kInit);
  zip.add("demo/lib.py", kLib);
  auto& lib = zip.records().back();
  std::string expected;
  SECTION("the name") {
    lib.name = "demo/lic.py";
    expected =
        "entry `demo/lic.py`: its central directory says name demo/lic.py, its local "
        "header demo/lib.py";
  }
  SECTION("the CRC-32") {
    lib.crc ^= 1U;
    expected = "entry `demo/lib.py`: its central directory says CRC-32";
  }
  SECTION("the size") {
    lib.size -= 1;
    expected = "entry `demo/lib.py`: its central directory says size 21, its local header 22";
  }
  SECTION("the method") {
    // Bytes 8-9 of the local header: 8 (deflate) where the directory says stored.
    auto bytes = zip.finish();
    bytes[lib.offset + 8] = 8;
    CHECK_THAT(refusal(tmp, bytes),
               Contains("entry `demo/lib.py`: its central directory says method 0, its local "
                        "header 8"));
    return;
  }
  CHECK_THAT(refusal(tmp, zip.finish()), Contains(expected));
  CHECK_FALSE(fs::exists(tmp.path() / "dest1/demo/__init__.py"));
}

TEST_CASE("damaged data in a zip entry names the entry", "[archive][zip]") {
  TempDir tmp;
  SECTION("stored: a byte changed, so the CRC-32 disagrees") {
    ZipBuilder zip;
    zip.add("demo/lib.py", kLib);
    auto bytes = zip.finish();
    bytes[30 + 11 + 3] ^= 0x20;  // in the data, after the header and name
    CHECK_THAT(refusal(tmp, bytes),
               Contains("entry `demo/lib.py`: CRC-32 mismatch: its data gives"));
  }
  SECTION("deflated: the data cut short inside the stream") {
    auto bytes = envkit::test::make_archive(
        envkit::test::Format::zip,
        {envkit::test::Entry::file("demo/big.bin", envkit::test::pseudo_random(300'000))});
    // Zero the second half of the entry's compressed data.
    const auto start = bytes.find("demo/big.bin") + 12;
    for (std::size_t i = start + 150'000; i < start + 250'000; ++i)
      bytes[i] = 0;
    CHECK_THAT(refusal(tmp, bytes), Contains("entry `demo/big.bin`: "));
  }
}

namespace {

// A wheel of one deflated entry of 12.5 MB: several of the threads' buffers.
const std::string& big_data() {
  static const std::string data =
      envkit::test::pseudo_random(9'500'000) + std::string(3 << 20, 'z');
  return data;
}

std::string big_wheel(const std::string& record) {
  return envkit::test::make_archive(
      envkit::test::Format::zip, {envkit::test::Entry::file("demo/big.so", big_data()),
                                  envkit::test::Entry::file("demo-1.0.dist-info/RECORD", record)});
}

}  // namespace

TEST_CASE("without trust_record a large entry is hashed and checked as a small one is",
          "[archive][zip]") {
  TempDir tmp;
  const unsigned threads = GENERATE(1U, 3U);
  SECTION("RECORD agrees") {
    auto unpacked = unpack(
        tmp, big_wheel(record_row("demo/big.so", big_data()) + "demo-1.0.dist-info/RECORD,,\n"),
        threads);
    REQUIRE(unpacked.result.ok());
    CHECK(unpacked.result->entries.at(1).path == "demo/big.so");
    CHECK(unpacked.result->entries.at(1).sha256 == envkit::core::sha256_hex(big_data()));
    CHECK(envkit::test::read_bytes(unpacked.destination / "demo/big.so") == big_data());
  }
  SECTION("RECORD disagrees") {
    auto other = big_data();
    other.back() = 'y';
    auto unpacked =
        unpack(tmp, big_wheel(record_row("demo/big.so", other) + "demo-1.0.dist-info/RECORD,,\n"),
               threads);
    REQUIRE_FALSE(unpacked.result.ok());
    CHECK_THAT(unpacked.result.error().to_string(), Contains("entry `demo/big.so`: its sha256 is " +
                                                             envkit::core::sha256_hex(big_data())));
  }
}

TEST_CASE("a large entry that cannot be written is refused naming it", "[archive][zip]") {
  // Files may not grow past 4 MiB: write() fails with EFBIG partway through
  // the entry, which must be reported, naming it, and stop the threads.
  TempDir tmp;
  const auto bytes = big_wheel("");
  const auto file = tmp.path() / "demo-1.0-py3-none-any.whl";
  envkit::test::write_bytes(file, bytes);
  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
  auto* const old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = saved;
  small.rlim_cur = 4 << 20;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  ExtractOptions options;
  options.hash_files = true;
  options.threads = 2;
  auto result = envkit::archive::extract_file(file, tmp.path() / "dest", options);
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);
  REQUIRE_FALSE(result.ok());
  CHECK_THAT(result.error().to_string(), Contains("demo-1.0-py3-none-any.whl`") &&
                                             Contains("entry `demo/big.so`") &&
                                             Contains("File too large"));
}

TEST_CASE("RECORD rows are read as CSV with paths normalized", "[archive][zip]") {
  auto rows = envkit::archive::parse_wheel_record(
      "\"demo/a,b.py\",sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n./demo/c.py,,\n", "w");
  REQUIRE(rows.ok());
  REQUIRE(rows->contains("demo/a,b.py"));
  CHECK(rows->at("demo/a,b.py").sha256 == envkit::core::sha256_hex(""));
  CHECK(rows->at("demo/a,b.py").size == 0U);
  REQUIRE(rows->contains("demo/c.py"));
  CHECK_FALSE(rows->at("demo/c.py").sha256.has_value());
  CHECK(envkit::archive::is_wheel_record("demo-1.0.dist-info/RECORD"));
  CHECK_FALSE(envkit::archive::is_wheel_record("demo/demo-1.0.dist-info/RECORD"));
}

TEST_CASE("RECORD rows are written as pip writes them and read back", "[archive][zip]") {
  const auto empty = envkit::core::sha256_hex("");
  // What pip writes for an empty __init__.py.
  CHECK(envkit::archive::record_hash_field(empty) ==
        "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU");
  const auto hex = envkit::core::sha256_hex("import os\n");
  CHECK(envkit::archive::record_hash_hex(envkit::archive::record_hash_field(hex)) == hex);
  CHECK(envkit::archive::csv_field("demo/a.py") == "demo/a.py");
  CHECK(envkit::archive::csv_field("demo/a,b.py") == "\"demo/a,b.py\"");
  CHECK(envkit::archive::csv_fields(envkit::archive::csv_field("say \"hi\",now")) ==
        std::vector<std::string>{"say \"hi\",now"});
}

namespace {

// The peak resident memory since the last reset, in KiB (nullopt off Linux).
std::optional<long> zip_peak_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("VmHWM:")) return std::stol(line.substr(6));
  }
  return std::nullopt;
}

bool zip_reset_peak() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

}  // namespace

TEST_CASE("a zip's memory stays flat however big its entries are", "[archive][memory]") {
  // Three entries of 256 MiB (deflated zeros: a small file), on four threads.
  constexpr std::uint64_t kSize = std::uint64_t{256} << 20;
  std::vector<envkit::test::Entry> entries;
  for (int i = 0; i < 3; ++i)
    entries.push_back({.path = "zeros" + std::to_string(i), .zeros = kSize});
  TempDir tmp;
  const auto file = tmp.path() / "big.whl";
  envkit::test::write_bytes(file, envkit::test::make_archive(envkit::test::Format::zip, entries));
  if (!zip_reset_peak() || !zip_peak_kib()) {
    envkit::test::skip_test(envkit::test::SkipKind::expected,
                            "no /proc/self/clear_refs to measure peak memory with");
    return;
  }
  const auto before = *zip_peak_kib();
  ExtractOptions options;
  options.hash_files = true;
  options.threads = 4;
  auto result = envkit::archive::extract_file(file, tmp.path() / "dest", options);
  REQUIRE(result.ok());
  CHECK(fs::file_size(tmp.path() / "dest/zeros2") == kSize);
  // Per thread two 1 MiB buffers and ISA-L's state, nowhere near an entry.
  CHECK(*zip_peak_kib() - before < 32 * 1024);
}
