// A zip unpacked as it downloads (extract_zip_stream, what `install` does
// with a wheel) gives exactly what the whole file gives, and what it read
// early must agree with the central directory.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <thread>

#include "archive_maker.hpp"
#include "envkit/archive/extract.hpp"
#include "envkit/core/sha256.hpp"
#include "same_extract.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using envkit::archive::ExtractOptions;
using envkit::archive::ExtractResult;
using envkit::test::read_bytes;
using envkit::test::TempDir;
using envkit::test::tree;
using envkit::test::ZipBuilder;

// As `install` unpacks a wheel (store/fill.cpp).
ExtractOptions arriving_options() {
  ExtractOptions options;
  options.hash_files = true;
  options.trust_record = true;
  options.threads = 3;
  return options;
}

// A wheel as Python's zipfile writes pip's (deflated, sizes in the local
// headers, Unix modes): libraries, an executable, many small files, a folder
// of mode 0700, and a RECORD of them all.
std::string python_wheel(const TempDir& tmp) {
  const auto root = tmp.path() / "src";
  fs::create_directories(root / "demo/lib");
  fs::create_directories(root / "demo/private");
  for (int i = 0; i < 3; ++i) {
    std::ofstream(root / ("demo/lib/libpart" + std::to_string(i) + ".so"), std::ios::binary)
        << envkit::test::pseudo_random(400'000, static_cast<unsigned>(i + 7))
        << std::string(std::size_t{1} << 20, 'z');
  }
  for (int i = 0; i < 30; ++i)
    std::ofstream(root / ("demo/m" + std::to_string(i) + ".py")) << "x = " << i << "\n";
  std::ofstream(root / "demo/run.sh") << "#!/bin/sh\necho hi\n";
  fs::permissions(root / "demo/run.sh", fs::perms::owner_all | fs::perms::group_read |
                                            fs::perms::group_exec | fs::perms::others_read |
                                            fs::perms::others_exec);
  const auto out = tmp.path() / "made.whl";
  const std::string script =
      "import base64,hashlib,os,sys,zipfile\n"
      "root,out=sys.argv[1],sys.argv[2]\n"
      "rows=[]\n"
      "with zipfile.ZipFile(out,'w',zipfile.ZIP_DEFLATED,compresslevel=1) as z:\n"
      "  i=zipfile.ZipInfo('demo/private/'); i.external_attr=(0o40700<<16)|0x10\n"
      "  z.writestr(i,b'')\n"
      "  for d,_,fs in sorted(os.walk(root)):\n"
      "    for f in sorted(fs):\n"
      "      p=os.path.join(d,f); r=os.path.relpath(p,root); z.write(p,r)\n"
      "      b=open(p,'rb').read()\n"
      "      h=base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode()\n"
      "      rows.append('%s,sha256=%s,%d\\n'%(r,h,len(b)))\n"
      "  rows.append('demo-1.0.dist-info/RECORD,,\\n')\n"
      "  z.writestr('demo-1.0.dist-info/RECORD',''.join(rows))\n";
  std::ofstream(tmp.path() / "make_wheel.py") << script;
  const auto command = "python3 " + (tmp.path() / "make_wheel.py").string() + " " + root.string() +
                       " " + out.string();
  REQUIRE(std::system(command.c_str()) == 0);
  return read_bytes(out);
}

// The archive's bytes as a download gives them: a piece at a time. Before
// the central directory (at `hold_at`) it waits until `first_file` is
// unpacked (`early` says whether it was: the entries before it were read as
// they came). Ends after `whole` bytes.
class Dripping final : public envkit::archive::Source {
 public:
  Dripping(const std::string& bytes, std::size_t whole, fs::path first_file, std::size_t hold_at)
      : bytes_(bytes), whole_(whole), first_file_(std::move(first_file)), hold_at_(hold_at) {}

  envkit::Result<std::size_t> read(std::span<std::byte> buffer) override {
    constexpr std::size_t kPiece = 64 << 10;
    if (at_ >= whole_) return std::size_t{0};
    auto count = std::min({buffer.size(), kPiece, whole_ - at_});
    if (!first_file_.empty() && at_ == hold_at_) wait_for_first_file();
    if (!first_file_.empty() && at_ < hold_at_) count = std::min(count, hold_at_ - at_);
    std::memcpy(buffer.data(), bytes_.data() + at_, count);
    at_ += count;
    read_ = at_;
    return count;
  }
  [[nodiscard]] std::string name() const override { return "arriving.whl"; }
  [[nodiscard]] bool early() const { return early_; }
  [[nodiscard]] std::size_t bytes_read() const { return read_; }

 private:
  void wait_for_first_file() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!(early_ = fs::exists(first_file_)) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    first_file_.clear();
  }

  const std::string& bytes_;
  std::size_t whole_;
  fs::path first_file_;
  std::size_t hold_at_;
  std::size_t at_ = 0;
  std::size_t read_ = 0;
  bool early_ = false;
};

// Where a zip's central directory starts (the end record says).
std::size_t directory_offset(const std::string& zip) {
  const auto at = zip.rfind(std::string("PK\x05\x06", 4));
  REQUIRE(at != std::string::npos);
  std::uint32_t offset = 0;
  std::memcpy(&offset, zip.data() + at + 16, 4);
  return offset;
}

envkit::Result<std::optional<ExtractResult>> unpack_streamed(
    const std::string& bytes, const fs::path& destination, const std::string& first_file = {},
    std::size_t whole = std::string::npos, bool* early = nullptr, std::size_t* read = nullptr) {
  Dripping source(bytes, std::min(whole, bytes.size()),
                  first_file.empty() ? fs::path() : destination / first_file,
                  first_file.empty() ? 0 : directory_offset(bytes));
  auto result = envkit::archive::extract_zip_stream(source, destination, arriving_options());
  if (early != nullptr) *early = source.early();
  if (read != nullptr) *read = source.bytes_read();
  return result;
}

}  // namespace

TEST_CASE("a wheel unpacked as it downloads gives what the whole file gives", "[archive][zip]") {
  TempDir tmp;
  const auto bytes = python_wheel(tmp);
  envkit::test::write_bytes(tmp.path() / "whole.whl", bytes);
  auto whole = envkit::archive::extract_file(tmp.path() / "whole.whl", tmp.path() / "whole",
                                             arriving_options());
  REQUIRE(whole.ok());
  // The first library is unpacked before the central directory is read.
  bool early = false;
  std::size_t read = 0;
  auto arrived = unpack_streamed(bytes, tmp.path() / "arrived", "demo/lib/libpart0.so",
                                 std::string::npos, &early, &read);
  INFO((arrived.ok() ? "" : arrived.error().to_string()));
  REQUIRE(arrived.ok());
  REQUIRE(arrived->has_value());
  CHECK(early);
  CHECK(read == bytes.size());  // to the end, so the caller's hash covers it all
  envkit::test::check_same_extract(*whole, **arrived);
  CHECK(tree(tmp.path() / "arrived") == tree(tmp.path() / "whole"));
  CHECK(envkit::test::mode_of(tmp.path() / "arrived/demo/run.sh") == 0755);
  CHECK(envkit::test::mode_of(tmp.path() / "arrived/demo/private") == 0700);
  CHECK(read_bytes(tmp.path() / "arrived/demo/lib/libpart2.so") ==
        read_bytes(tmp.path() / "whole/demo/lib/libpart2.so"));
  CHECK_FALSE(fs::exists(tmp.path() / "arrived.download"));
}

TEST_CASE("a zip whose sizes follow its data is left to the whole file's reader",
          "[archive][zip]") {
  // libarchive's writer puts sizes in data descriptors: nothing can be read
  // as it comes, and the caller is told to unpack the whole file.
  TempDir tmp;
  const auto bytes = envkit::test::make_archive(
      envkit::test::Format::zip,
      {envkit::test::Entry::file("a/one", "1", 0755),
       envkit::test::Entry::file("a/big", envkit::test::pseudo_random(300'000)),
       envkit::test::Entry::symlink("a/link", "one")});
  auto arrived = unpack_streamed(bytes, tmp.path() / "arrived");
  REQUIRE(arrived.ok());
  CHECK_FALSE(arrived->has_value());
}

TEST_CASE("a zip with a symlink is left to the whole file's reader", "[archive][zip]") {
  // Its local header cannot say it is a link: the directory, read last, does.
  TempDir tmp;
  ZipBuilder zip;
  zip.add("demo/a.py", "a = 1\n");
  zip.add("demo/link.py", "a.py", 0120777);
  auto arrived = unpack_streamed(zip.finish(), tmp.path() / "arrived");
  REQUIRE(arrived.ok());
  CHECK_FALSE(arrived->has_value());
}

TEST_CASE("a zip unpacked as it downloads is refused where its directory disagrees",
          "[archive][zip]") {
  TempDir tmp;
  SECTION("a local header the central directory does not list") {
    ZipBuilder zip;
    zip.add("demo/a.py", "a = 1\n");
    zip.add("demo/hidden.py", "import os\n");
    zip.records().pop_back();
    auto arrived = unpack_streamed(zip.finish(), tmp.path() / "arrived");
    REQUIRE_FALSE(arrived.ok());
    CHECK_THAT(arrived.error().to_string(),
               Contains("arriving.whl`") &&
                   Contains("entry `demo/hidden.py`: its local header is one the central "
                            "directory does not list"));
  }
  SECTION("a local header whose size the central directory does not say") {
    ZipBuilder zip;
    zip.add("demo/a.py", "a = 1\n");
    zip.records().back().size += 1;
    auto arrived = unpack_streamed(zip.finish(), tmp.path() / "arrived");
    REQUIRE_FALSE(arrived.ok());
    CHECK_THAT(arrived.error().to_string(),
               Contains("entry `demo/a.py`: its central directory says size"));
  }
  SECTION("a CRC-32 in the local header the data does not give") {
    ZipBuilder zip;
    zip.add("demo/a.py", "a = 1\n");
    auto bytes = zip.finish();
    bytes[30 + 9] = 'b';  // the data, after the header and the name
    auto arrived = unpack_streamed(bytes, tmp.path() / "arrived");
    REQUIRE_FALSE(arrived.ok());
    CHECK_THAT(arrived.error().to_string(), Contains("entry `demo/a.py`: CRC-32 mismatch"));
  }
  SECTION("the download ends halfway") {
    const auto bytes = python_wheel(tmp);
    auto arrived = unpack_streamed(bytes, tmp.path() / "arrived", {}, bytes.size() / 2);
    REQUIRE_FALSE(arrived.ok());
    CHECK_THAT(arrived.error().to_string(), Contains("the download ended"));
  }
}

TEST_CASE(
    "a RECORD row that disagrees is refused for a package file and a warning for METADATA "
    "when streamed too",
    "[archive][zip]") {
  TempDir tmp;
  // A wheel of one file `path` holding "a = 1\n", its RECORD row another's hash.
  const auto stale_wheel = [](const std::string& path) {
    ZipBuilder zip;
    zip.add(path, "a = 1\n");
    zip.add("demo-1.0.dist-info/RECORD",
            path +
                ",sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,6\n"
                "demo-1.0.dist-info/RECORD,,\n");
    return zip.finish();
  };
  SECTION("a file of the package: refused, naming the wheel and entry") {
    auto arrived = unpack_streamed(stale_wheel("demo/a.py"), tmp.path() / "arrived");
    REQUIRE_FALSE(arrived.ok());
    CHECK_THAT(
        arrived.error().to_string(),
        Contains("arriving.whl`") && Contains("entry `demo/a.py`: its sha256 is " +
                                              envkit::core::sha256_hex(std::string("a = 1\n"))));
  }
  SECTION("the wheel's METADATA, as PyPI's torch 1.11.0 lists it: a warning") {
    auto arrived =
        unpack_streamed(stale_wheel("demo-1.0.dist-info/METADATA"), tmp.path() / "arrived");
    REQUIRE(arrived.ok());
    REQUIRE(arrived->has_value());
    const auto& result = **arrived;
    REQUIRE(result.warnings.size() == 1);
    CHECK_THAT(result.warnings[0],
               Contains("arriving.whl`") && Contains("entry `demo-1.0.dist-info/METADATA`") &&
                   Contains("its sha256 is " + envkit::core::sha256_hex(std::string("a = 1\n"))));
    std::map<std::string, std::string> hashes;
    for (const auto& entry : result.entries)
      hashes[entry.path] = entry.sha256;
    CHECK(hashes["demo-1.0.dist-info/METADATA"] ==
          envkit::core::sha256_hex(std::string("a = 1\n")));
    CHECK(read_bytes(tmp.path() / "arrived/demo-1.0.dist-info/METADATA") == "a = 1\n");
  }
}

TEST_CASE("a wheel's large file takes its hash from RECORD, else is hashed once written",
          "[archive][zip]") {
  // 2 MiB: over the 1 MiB from which `install` takes RECORD's hash (trust_record).
  const auto data = envkit::test::pseudo_random(2u << 20, 3);
  const auto actual = envkit::core::sha256_hex(data);
  const bool streamed = GENERATE(false, true);
  TempDir tmp;
  ZipBuilder zip;
  zip.add("demo/big.so", data);
  std::string expected = actual;
  std::string refusal;
  SECTION("a row whose size agrees: its hash is the one recorded, not computed again") {
    // A row naming other bytes of the same size shows which hash the result holds.
    const std::string other = data.substr(1) + "x";
    zip.add("demo-1.0.dist-info/RECORD", envkit::test::record_row("demo/big.so", other));
    expected = envkit::core::sha256_hex(other);
  }
  SECTION("a row whose size disagrees: hashed, and refused") {
    zip.add("demo-1.0.dist-info/RECORD",
            "demo/big.so," + envkit::test::record_hash(data) + ",12\n");
    refusal = "entry `demo/big.so`: it holds 2097152 bytes, RECORD says 12";
  }
  SECTION("no row for it: hashed once written") {
    zip.add("demo-1.0.dist-info/RECORD", "demo-1.0.dist-info/RECORD,,\n");
  }
  SECTION("no RECORD: hashed once written") {}
  const auto bytes = zip.finish();
  std::optional<ExtractResult> result;
  envkit::Result<ExtractResult> unpacked = envkit::Error::failed("not unpacked");
  if (streamed) {
    auto arrived = unpack_streamed(bytes, tmp.path() / "out");
    if (arrived.ok()) {
      REQUIRE(arrived->has_value());
      unpacked = **std::move(arrived);
    } else {
      unpacked = std::move(arrived).error();
    }
  } else {
    envkit::test::write_bytes(tmp.path() / "whole.whl", bytes);
    unpacked = envkit::archive::extract_file(tmp.path() / "whole.whl", tmp.path() / "out",
                                             arriving_options());
  }
  if (!refusal.empty()) {
    REQUIRE_FALSE(unpacked.ok());
    CHECK_THAT(unpacked.error().to_string(), Contains(refusal));
    return;
  }
  INFO((unpacked.ok() ? "" : unpacked.error().to_string()));
  REQUIRE(unpacked.ok());
  CHECK(unpacked->entries.at(1).path == "demo/big.so");
  CHECK(unpacked->entries.at(1).sha256 == expected);
  CHECK(read_bytes(tmp.path() / "out/demo/big.so") == data);
  CHECK(unpacked->warnings.empty());
}

TEST_CASE("wheels downloading together share the read-ahead and all unpack", "[archive][zip]") {
  // Three streams of 24 MB of incompressible data each: together more than
  // the 32 MiB read ahead of the inflating threads, so each waits for the
  // others' threads to catch up, and none waits forever.
  TempDir tmp;
  ZipBuilder zip;
  zip.add("demo/big.bin", envkit::test::pseudo_random(24u << 20, 5));
  zip.add("demo/small.py", "x = 1\n");
  const auto bytes = zip.finish();
  std::vector<std::optional<envkit::Result<std::optional<ExtractResult>>>> results(3);
  {
    std::vector<std::jthread> downloads;
    for (std::size_t i = 0; i < results.size(); ++i) {
      downloads.emplace_back([&, i] {
        results[i] = unpack_streamed(bytes, tmp.path() / ("arrived" + std::to_string(i)));
      });
    }
  }
  for (std::size_t i = 0; i < results.size(); ++i) {
    INFO(i);
    REQUIRE(results[i]->ok());
    REQUIRE((*results[i])->has_value());
    CHECK(read_bytes(tmp.path() / ("arrived" + std::to_string(i)) / "demo/big.bin").size() ==
          (24u << 20));
  }
}

TEST_CASE("a wheel of many more entries than read-ahead pieces unpacks as it downloads",
          "[archive][zip]") {
  // Each entry's last piece goes back to the pool once it is written, not
  // when the whole wheel is: torch has 11,000 entries, the pool 128 pieces.
  TempDir tmp;
  ZipBuilder zip;
  for (int i = 0; i < 1000; ++i)
    zip.add("demo/m" + std::to_string(i) + ".py", "x = " + std::to_string(i) + "\n");
  auto arrived = unpack_streamed(zip.finish(), tmp.path() / "arrived");
  REQUIRE(arrived.ok());
  REQUIRE(arrived->has_value());
  CHECK((*arrived)->entries.size() == 1001);  // demo/ and its 1000 files
  CHECK(read_bytes(tmp.path() / "arrived/demo/m999.py") == "x = 999\n");
}

TEST_CASE("downloads cut short give their read-ahead pieces back", "[archive][zip]") {
  // Found by fuzzing: a piece dropped by an error was lost to the pool, and
  // after 128 such downloads every later one waited forever.
  TempDir tmp;
  ZipBuilder zip;
  zip.add("demo/big.bin", envkit::test::pseudo_random(1u << 20, 3));
  const auto bytes = zip.finish();
  for (int i = 0; i < 200; ++i) {
    auto cut = unpack_streamed(bytes, tmp.path() / "cut", {}, bytes.size() / 2);
    REQUIRE_FALSE(cut.ok());
  }
  auto whole = unpack_streamed(bytes, tmp.path() / "whole");
  REQUIRE(whole.ok());
  CHECK(whole->has_value());
}
