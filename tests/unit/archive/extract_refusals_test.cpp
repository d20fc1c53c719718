// Hostile and broken archives: each is refused, the error names the archive
// and the entry, and nothing lands outside the destination.
#include <catch2/catch.hpp>
#include <filesystem>

#include "archive_maker.hpp"
#include "envkit/archive/extract.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using envkit::archive::ExtractOptions;
using envkit::archive::ExtractResult;
using envkit::test::Entry;
using envkit::test::Format;
using envkit::test::Kind;
using envkit::test::make_archive;
using envkit::test::MemorySource;
using envkit::test::TempDir;
using envkit::test::tree;

namespace {

// Unpacks `bytes` from tmp/evil.tar into tmp/dest, from the file and from a
// stream, and checks both fail the same way, leaving tmp holding nothing but
// the archive and the destination. `same`: both ways give the same error
// (not so for a zip: a stream sees its local headers, a file its central
// directory).
envkit::Error refused(const std::string& bytes, const ExtractOptions& options = {},
                      bool same = true) {
  TempDir tmp;
  const auto file = tmp.path() / "evil.tar";
  envkit::test::write_bytes(file, bytes);
  auto from_file = envkit::archive::extract_file(file, tmp.path() / "dest", options);
  REQUIRE_FALSE(from_file.ok());
  MemorySource source(bytes, 7000, file.string());
  auto streamed = envkit::archive::extract(source, tmp.path() / "dest2", options);
  REQUIRE_FALSE(streamed.ok());
  if (same) CHECK(streamed.error().to_string() == from_file.error().to_string());
  std::vector<std::string> names;
  for (const auto& item : fs::directory_iterator(tmp.path()))
    names.push_back(item.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"dest", "dest2", "evil.tar"});
  CHECK(from_file.error().code() == envkit::ErrorCode::failed);
  CHECK_THAT(from_file.error().headline(), Contains("`" + file.string() + "`"));
  return std::move(from_file).error();
}

// The error's text: headline, causes and hints.
std::string text(const envkit::Error& error) {
  return error.to_string();
}

std::string tar(std::vector<Entry> entries) {
  return make_archive(Format::tar, entries);
}

}  // namespace

TEST_CASE("absolute paths and `..` are refused", "[archive][refusal]") {
  TempDir outside;
  const auto absolute = (outside.path() / "planted").string();
  auto error = refused(tar({Entry::file("ok", "fine"), Entry::file(absolute, "evil")}));
  CHECK_THAT(error.headline(), Contains("refused to unpack"));
  CHECK_THAT(text(error), Contains("entry `" + absolute + "`: absolute paths are not allowed"));
  CHECK_FALSE(fs::exists(outside.path() / "planted"));

  CHECK_THAT(text(refused(tar({Entry::file("../x", "evil")}))),
             Contains("entry `../x`: `..` in a path is not allowed"));
  CHECK_THAT(text(refused(tar({Entry::file("a/../../x", "evil")}))), Contains("entry `a/../../x`"));
  CHECK_THAT(text(refused(tar({Entry::file("a/..", "evil")}))), Contains("entry `a/..`"));
  CHECK_THAT(text(refused(tar({Entry::dir("../up/")}))), Contains("entry `../up/`"));
}

TEST_CASE("an entry without a name is refused", "[archive][refusal]") {
  CHECK_THAT(text(refused(tar({Entry::file("./", "x")}))), Contains("the entry has no name"));
}

TEST_CASE("paths past PATH_MAX are refused", "[archive][refusal]") {
  std::string deep;
  while (deep.size() < 5000)
    deep += "d/";
  CHECK_THAT(text(refused(tar({Entry::file(deep + "x", "x")}))),
             Contains("paths of 4096 bytes or more are not allowed"));
}

TEST_CASE("symlinks that leave the destination are refused", "[archive][refusal]") {
  CHECK_THAT(text(refused(tar({Entry::symlink("passwd", "/etc/passwd")}))),
             Contains("entry `passwd`: the symlink points to the absolute path `/etc/passwd`"));
  CHECK_THAT(text(refused(tar({Entry::symlink("l", "..")}))),
             Contains("entry `l`: the symlink target `..` leaves the destination"));
  CHECK_THAT(text(refused(tar({Entry::symlink("a/b/l", "../../../etc")}))),
             Contains("entry `a/b/l`"));
  CHECK_THAT(text(refused(tar({Entry::symlink("a/l", "b/../../..")}))),
             Contains("`..` after a name"));
  CHECK_THAT(text(refused(tar({Entry::symlink("empty", "")}))), Contains("empty target"));
}

TEST_CASE("nothing is written through a symlink", "[archive][refusal]") {
  // `d/up` points back at the root (allowed); writing through it is not.
  auto error = refused(tar({Entry::symlink("d/up", ".."), Entry::file("d/up/x", "evil")}));
  CHECK_THAT(
      text(error),
      Contains("entry `d/up/x`: `d/up` is a symlink, and nothing is written through a link"));
  CHECK_THAT(text(refused(tar(
                 {Entry::dir("real/"), Entry::symlink("l", "real"), Entry::file("l/x", "evil")}))),
             Contains("entry `l/x`"));
  CHECK_THAT(text(refused(tar({Entry::symlink("l", "real"), Entry::dir("l/")}))),
             Contains("entry `l/`"));
  // A file where a folder is needed, and a link over a file.
  CHECK_THAT(text(refused(tar({Entry::file("f", "x"), Entry::file("f/g", "y")}))),
             Contains("`f` is a file, not a folder"));
  CHECK_THAT(text(refused(tar({Entry::file("f", "x"), Entry::symlink("f", "y")}))),
             Contains("entry `f`: `f` is already a file"));
  CHECK_THAT(text(refused(tar({Entry::symlink("l", "a"), Entry::symlink("l", "b")}))),
             Contains("`l` is already a symlink"));
}

TEST_CASE("a file does not replace a folder or a symlink", "[archive][refusal]") {
  CHECK_THAT(text(refused(tar({Entry::dir("d/"), Entry::file("d", "x")}))),
             Contains("entry `d`: `d` is already a folder"));
  CHECK_THAT(text(refused(tar({Entry::symlink("l", "target"), Entry::file("l", "x")}))),
             Contains("entry `l`: `l` is already a symlink"));
}

TEST_CASE("hard links must point to a file unpacked before them", "[archive][refusal]") {
  CHECK_THAT(text(refused(tar({Entry::hardlink("h", "../outside")}))),
             Contains("entry `h`: hard link to `../outside`"));
  CHECK_THAT(text(refused(tar({Entry::hardlink("h", "/etc/passwd")}))),
             Contains("entry `h`: hard link to `/etc/passwd`"));
  CHECK_THAT(text(refused(tar({Entry::hardlink("h", "later"), Entry::file("later", "x")}))),
             Contains("hard link to `later`, which is not a file unpacked before it"));
  CHECK_THAT(text(refused(tar({Entry::dir("d/"), Entry::hardlink("h", "d")}))),
             Contains("entry `h`"));
  CHECK_THAT(text(refused(tar(
                 {Entry::file("f", "x"), Entry::symlink("l", "f"), Entry::hardlink("h", "l")}))),
             Contains("hard link to `l`"));
}

TEST_CASE("device files and fifos are refused", "[archive][refusal]") {
  CHECK_THAT(text(refused(tar({{.path = "dev/null", .kind = Kind::char_device}}))),
             Contains("entry `dev/null`: device files are not allowed"));
  CHECK_THAT(text(refused(tar({{.path = "pipe", .kind = Kind::fifo}}))),
             Contains("entry `pipe`: fifos are not allowed"));
}

TEST_CASE("decompression bombs stop at the limits", "[archive][refusal][limits]") {
  ExtractOptions options;
  options.max_bytes = 1 << 20;
  SECTION("one file of zeros, compressed to almost nothing") {
    const auto bomb = make_archive(Format::tar_xz, {{.path = "zeros", .zeros = 64 << 20}});
    CHECK(bomb.size() < 64 * 1024);
    CHECK_THAT(
        text(refused(bomb, options)),
        Contains("entry `zeros`: the archive unpacks to more than 1048576 bytes, the limit"));
  }
  SECTION("many files that add up") {
    std::vector<Entry> entries;
    for (int i = 0; i < 5; ++i)
      entries.push_back({.path = "f" + std::to_string(i), .zeros = 300'000});
    CHECK_THAT(text(refused(make_archive(Format::tar_gz, entries), options)),
               Contains("entry `f3`: the archive unpacks to more than 1048576 bytes"));
  }
  SECTION("a zip whose sizes are known only after the data") {
    // A streamed zip entry announces its size after its data; the limit is
    // then enforced while writing.
    TempDir tmp;
    MemorySource source(
        make_archive(Format::zip, {{.path = "zeros", .zeros = 8 << 20, .size_unknown = true}}),
        7000, "bomb.zip");
    auto result = envkit::archive::extract(source, tmp.path() / "dest", options);
    REQUIRE_FALSE(result.ok());
    CHECK_THAT(text(result.error()), Contains("entry `zeros`: the archive unpacks to more than"));
    CHECK(fs::file_size(tmp.path() / "dest/zeros") <= options.max_bytes);
  }
  SECTION("a flood of tiny entries") {
    std::vector<Entry> entries;
    for (int i = 0; i < 50; ++i)
      entries.push_back(Entry::file("f" + std::to_string(i), "x"));
    ExtractOptions few;
    few.max_entries = 10;
    CHECK_THAT(text(refused(make_archive(Format::tar, entries), few)),
               Contains("entry `f10`: the archive has more than 10 entries, the limit"));
  }
  SECTION("folders made on the way count as entries") {
    ExtractOptions few;
    few.max_entries = 10;
    CHECK_THAT(text(refused(tar({Entry::file("a/b/c/d/e/f/g/h/i/j/k", "x")}), few)),
               Contains("entry `a/b/c/d/e/f/g/h/i/j/k`: the archive has more than 10 entries"));
  }
}

TEST_CASE("truncated and corrupt archives fail, never half succeed", "[archive][refusal]") {
  std::string data(200'000, '\0');
  unsigned seed = 5;
  for (auto& c : data) {
    seed = seed * 1103515245 + 12345;
    c = static_cast<char>(seed >> 16);
  }
  const std::vector<Entry> entries{Entry::file("first", "1"), Entry::file("big", data),
                                   Entry::file("last", "3")};
  SECTION("a tar.xz cut in half") {
    auto bytes = make_archive(Format::tar_xz, entries);
    bytes.resize(bytes.size() / 2);
    const auto error = refused(bytes);
    CHECK_THAT(error.headline(), Contains("cannot unpack"));
    CHECK_THAT(text(error), Contains("big"));
    CHECK_THAT(text(error), Contains("truncated"));
  }
  SECTION("a plain tar cut in the middle of a file") {
    auto bytes = make_archive(Format::tar, entries);
    bytes.resize(bytes.size() / 2);
    CHECK_THAT(text(refused(bytes)), Contains("entry `big`"));
  }
  SECTION("a gzip with flipped bytes") {
    // Compressible text, so the flipped bytes break Huffman codes, or
    // decode to other bytes that the gzip CRC then refuses.
    std::string words;
    for (int i = 0; words.size() < 200'000; ++i)
      words += "cudaMalloc" + std::to_string(i * 7919 % 1000) + " ";
    auto bytes =
        make_archive(Format::tar_gz, {Entry::file("first", "1"), Entry::file("big", words)});
    for (std::size_t i = bytes.size() / 2; i < bytes.size() / 2 + 16; ++i)
      bytes[i] = static_cast<char>(~bytes[i]);
    const auto error = refused(bytes, {}, false);
    CHECK_THAT(error.headline(), Contains("cannot unpack"));
    CHECK_THAT(text(error), Contains("corrupt gzip data") || Contains("gzip CRC mismatch"));
  }
  SECTION("a zip cut in its data") {
    auto bytes = make_archive(Format::zip, entries);
    bytes.resize(bytes.size() / 2);
    CHECK_THAT(refused(bytes, {}, false).headline(), Contains("cannot unpack"));
  }
  SECTION("a zip file cut in its central directory") {
    // Streamed, the entries before the cut are all there is to see; from a
    // file the missing end of the central directory is noticed.
    TempDir tmp;
    auto bytes = make_archive(Format::zip, entries);
    bytes.resize(bytes.size() - 40);
    envkit::test::write_bytes(tmp.path() / "cut.zip", bytes);
    auto result = envkit::archive::extract_file(tmp.path() / "cut.zip", tmp.path() / "dest");
    REQUIRE_FALSE(result.ok());
    CHECK_THAT(result.error().headline(), Contains("cannot unpack"));
    CHECK_THAT(result.error().headline(), Contains("cut.zip`"));
  }
  SECTION("not an archive at all") {
    CHECK_THAT(text(refused(std::string(5000, 'x'))), Contains("cannot unpack"));
    CHECK_THAT(text(refused(std::string())), Contains("cannot unpack"));
  }
}

TEST_CASE("a missing archive file is an input error", "[archive]") {
  TempDir tmp;
  auto result = envkit::archive::extract_file(tmp.path() / "missing.tar.xz", tmp.path() / "dest");
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().code() == envkit::ErrorCode::input);
  CHECK_THAT(result.error().headline(), Contains("missing.tar.xz` does not exist"));
}

TEST_CASE("a failing source's error comes through", "[archive]") {
  class Failing : public envkit::archive::Source {
   public:
    envkit::Result<std::size_t> read(std::span<std::byte>) override {
      return envkit::Error::failed("connection reset by `mirror`");
    }
    [[nodiscard]] std::string name() const override { return "https://mirror/x.tar.xz"; }
  };
  TempDir tmp;
  Failing source;
  auto result = envkit::archive::extract(source, tmp.path() / "dest");
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().headline() == "connection reset by `mirror`");
  CHECK_THAT(text(result.error()), Contains("https://mirror/x.tar.xz"));
}
