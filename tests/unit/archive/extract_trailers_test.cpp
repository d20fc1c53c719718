// Every compressed stream is read to its end and its trailer checked: a
// corrupt CRC, a wrong length, a cut stream or bytes after the last member
// are refused, from a file and from a stream, naming the archive.
#include <catch2/catch.hpp>
#include <filesystem>

#include "archive_maker.hpp"
#include "envkit/archive/extract.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using envkit::archive::ExtractOptions;
using envkit::test::Entry;
using envkit::test::Format;
using envkit::test::make_archive;
using envkit::test::MemorySource;
using envkit::test::pseudo_random;
using envkit::test::TempDir;

std::vector<Entry> small_tree() {
  return {Entry::dir("pkg/"), Entry::file("pkg/lib.so", pseudo_random(100'000), 0755),
          Entry::file("pkg/LICENSE", "licence\n")};
}

// The error unpacking `bytes` gives, from the file tmp/`file_name` and from a
// stream of the same name; both must refuse with the same message.
std::string trailer_refusal(const std::string& bytes, const std::string& file_name,
                            const ExtractOptions& options = {}) {
  TempDir tmp;
  const auto file = tmp.path() / file_name;
  envkit::test::write_bytes(file, bytes);
  auto from_file = envkit::archive::extract_file(file, tmp.path() / "dest", options);
  REQUIRE_FALSE(from_file.ok());
  MemorySource source(bytes, 7000, file.string());
  auto streamed = envkit::archive::extract(source, tmp.path() / "dest2", options);
  REQUIRE_FALSE(streamed.ok());
  CHECK(from_file.error().code() == envkit::ErrorCode::failed);
  CHECK_THAT(from_file.error().headline(), Contains("`" + file.string() + "`"));
  // The entry being read when the error shows depends on the read sizes.
  CHECK(streamed.error().headline() == from_file.error().headline());
  REQUIRE_FALSE(streamed.error().causes().empty());
  CHECK(streamed.error().causes().front() == from_file.error().causes().front());
  return from_file.error().to_string();
}

std::string with_byte(std::string bytes, std::size_t at_from_end, char value) {
  bytes[bytes.size() - at_from_end] = value;
  return bytes;
}

void unpacks_whole(const std::string& bytes) {
  TempDir tmp;
  MemorySource source(bytes);
  auto result = envkit::archive::extract(source, tmp.path() / "dest");
  REQUIRE(result.ok());
  CHECK(envkit::test::read_bytes(tmp.path() / "dest/pkg/LICENSE") == "licence\n");
  CHECK(envkit::test::read_bytes(tmp.path() / "dest/pkg/lib.so") == pseudo_random(100'000));
}

}  // namespace

TEST_CASE("a gzip CRC mismatch is refused", "[archive][trailer]") {
  const auto good = make_archive(Format::tar_gz, small_tree());
  unpacks_whole(good);
  // The trailer: CRC32 (4 bytes), then ISIZE (4 bytes).
  const auto bad = with_byte(good, 8, static_cast<char>(good[good.size() - 8] ^ 0x5a));
  const auto text = trailer_refusal(bad, "cudart.tar.gz");
  CHECK_THAT(text, Contains("gzip CRC mismatch: the download is corrupt"));
}

TEST_CASE("a wrong gzip ISIZE is refused", "[archive][trailer]") {
  const auto good = make_archive(Format::tar_gz, small_tree());
  const auto bad = with_byte(good, 1, static_cast<char>(good.back() ^ 0x01));
  CHECK_THAT(trailer_refusal(bad, "cudart.tar.gz"), Contains("gzip length mismatch (ISIZE"));
}

TEST_CASE("a cut compressed stream is refused even when the tar inside is whole",
          "[archive][trailer]") {
  // Each loses only its trailer (xz: the index and stream footer; gzip: CRC
  // and ISIZE); libarchive alone unpacked all of them without a word.
  const auto xz = make_archive(Format::tar_xz, small_tree());
  CHECK_THAT(trailer_refusal(xz.substr(0, xz.size() - 12), "cudart.tar.xz"),
             Contains("the xz data is cut short") && Contains("truncated"));
  const auto gz = make_archive(Format::tar_gz, small_tree());
  CHECK_THAT(trailer_refusal(gz.substr(0, gz.size() - 4), "cudart.tar.gz"),
             Contains("the gzip data is cut short"));
  const auto bz2 = make_archive(Format::tar_bz2, small_tree());
  CHECK_THAT(trailer_refusal(bz2.substr(0, bz2.size() - 6), "cudart.tar.bz2"),
             Contains("the bzip2 data is cut short"));
  const auto zst = make_archive(Format::tar_zst, small_tree());
  CHECK_THAT(trailer_refusal(zst.substr(0, zst.size() - 3), "cudart.tar.zst"),
             Contains("the zstd data is cut short"));
  const auto lz4 = make_archive(Format::tar_lz4, small_tree());
  unpacks_whole(lz4);
  CHECK_THAT(trailer_refusal(lz4.substr(0, lz4.size() - 2), "cudart.tar.lz4"),
             Contains("the lz4 data is cut short"));
}

TEST_CASE("bytes after the last compressed member are refused", "[archive][trailer]") {
  const std::string garbage = "this is not a compressed member";
  CHECK_THAT(trailer_refusal(make_archive(Format::tar_gz, small_tree()) + garbage, "a.tar.gz"),
             Contains("bytes follow the end of the gzip data") && Contains("trailing garbage"));
  CHECK_THAT(trailer_refusal(make_archive(Format::tar_bz2, small_tree()) + garbage, "a.tar.bz2"),
             Contains("bytes follow the end of the bzip2 data"));
  CHECK_THAT(trailer_refusal(make_archive(Format::tar_zst, small_tree()) + garbage, "a.tar.zst"),
             Contains("bytes follow the end of the zstd data"));
  CHECK_THAT(trailer_refusal(make_archive(Format::tar_lz4, small_tree()) + garbage, "a.tar.lz4"),
             Contains("bytes follow the end of the lz4 data"));
  CHECK_THAT(trailer_refusal(make_archive(Format::tar_xz, small_tree()) + garbage, "a.tar.xz"),
             Contains("bytes after the stream are not another xz stream"));
  // Zeros too: they are not a member either (xz's own 4-byte padding aside).
  CHECK_THAT(trailer_refusal(make_archive(Format::tar_gz, small_tree()) + std::string(512, '\0'),
                             "z.tar.gz"),
             Contains("trailing garbage"));
}

TEST_CASE("corrupt compressed data is refused with its library's reason", "[archive][trailer]") {
  for (const auto format : {Format::tar_gz, Format::tar_xz, Format::tar_bz2}) {
    INFO(envkit::test::format_name(format));
    auto bytes = make_archive(format, small_tree());
    // A byte in the middle of the compressed data.
    bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x10);
    CHECK_THAT(trailer_refusal(bytes, "broken.tar"), Contains("corrupt") || Contains("mismatch"));
  }
}

TEST_CASE("concatenated members unpack as one stream", "[archive][trailer]") {
  // gzip -c a b, pbzip2 and zstd's multi-frame output: one tar in several members.
  const auto tar = make_archive(Format::tar, small_tree());
  const auto half = tar.size() / 2;
  for (const auto format :
       {Format::tar_gz, Format::tar_bz2, Format::tar_zst, Format::tar_xz, Format::tar_lz4}) {
    INFO(envkit::test::format_name(format));
    unpacks_whole(envkit::test::compress(format, tar.substr(0, half)) +
                  envkit::test::compress(format, tar.substr(half)));
  }
}

TEST_CASE("data hidden after the tar's end counts against the byte limit", "[archive][trailer]") {
  // A bomb behind the end-of-archive blocks: libarchive never reads it, but
  // the decoder must, to reach the trailer.
  const auto tar = make_archive(Format::tar, {Entry::file("a", "small")});
  const auto bomb = envkit::test::compress(Format::tar_zst, tar + std::string(8 << 20, '\0'));
  ExtractOptions options;
  options.max_bytes = 1 << 20;
  CHECK_THAT(trailer_refusal(bomb, "bomb.tar.zst", options),
             Contains("unpacks to more than 1048576 bytes, the limit"));
  // Within the limit, padding after the end is fine.
  TempDir tmp;
  MemorySource source(bomb);
  CHECK(envkit::archive::extract(source, tmp.path() / "dest").ok());
}
