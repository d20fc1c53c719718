#include "envkit/oci/tar_writer.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"

namespace envkit::oci {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

std::string tar_of(const std::vector<TarEntry>& entries, std::int64_t mtime = 0) {
  std::string out;
  const auto written = write_tar(entries, mtime, [&](std::string_view bytes) -> Result<void> {
    out.append(bytes);
    return {};
  });
  REQUIRE(written);
  return out;
}

// One ustar header as the tests read it back.
struct ReadHeader {
  std::string name;
  unsigned mode = 0;
  unsigned uid = 0;
  unsigned gid = 0;
  std::uint64_t size = 0;
  std::uint64_t mtime = 0;
  char type = 0;
  std::string link;
  std::string uname;
};

std::uint64_t octal(const std::string& tar, std::size_t at, std::size_t width) {
  return std::stoull(tar.substr(at, width - 1), nullptr, 8);
}

std::string field(const std::string& tar, std::size_t at, std::size_t width) {
  auto text = tar.substr(at, width);
  return text.substr(0, text.find('\0'));
}

std::vector<ReadHeader> headers_of(const std::string& tar) {
  std::vector<ReadHeader> out;
  for (std::size_t at = 0; at + 512 <= tar.size();) {
    if (tar[at] == '\0') break;
    ReadHeader header{.name = field(tar, at, 100),
                      .mode = static_cast<unsigned>(octal(tar, at + 100, 8)),
                      .uid = static_cast<unsigned>(octal(tar, at + 108, 8)),
                      .gid = static_cast<unsigned>(octal(tar, at + 116, 8)),
                      .size = octal(tar, at + 124, 12),
                      .mtime = octal(tar, at + 136, 12),
                      .type = tar[at + 156],
                      .link = field(tar, at + 157, 100),
                      .uname = field(tar, at + 265, 32)};
    at += 512 + (header.size + 511) / 512 * 512;
    out.push_back(std::move(header));
  }
  return out;
}

TEST_CASE("tar writer: sorted entries, fixed owners, modes and mtime, the same bytes twice",
          "[oci][tar]") {
  const TempDir dir;
  const auto tool = dir.write("tool", "#!/bin/sh\n");
  const auto data = dir.write("data", "bytes\n");
  const std::vector<TarEntry> entries = {
      {.path = "opt/envkit/lib/libz.so",
       .type = TarEntry::Type::symlink,
       .link_target = "libz.so.1"},
      {.path = "opt/envkit/bin/tool", .executable = true, .source = tool},
      {.path = "opt/envkit", .type = TarEntry::Type::directory},
      {.path = "opt/envkit/share/data", .source = data},
      {.path = "opt/envkit/envkit.lock", .content = "lock\n"},
  };
  const auto tar = tar_of(entries, 1700000000);
  auto reversed = entries;
  std::reverse(reversed.begin(), reversed.end());
  CHECK(tar_of(reversed, 1700000000) == tar);
  CHECK(tar.size() % 512 == 0);
  CHECK(tar.substr(tar.size() - 1024) == std::string(1024, '\0'));

  const auto headers = headers_of(tar);
  REQUIRE(headers.size() == 5);
  CHECK(headers[0].name == "opt/envkit/");
  CHECK(headers[0].type == '5');
  CHECK(headers[0].mode == 0755);
  CHECK(headers[1].name == "opt/envkit/bin/tool");
  CHECK(headers[1].mode == 0755);
  CHECK(headers[1].size == 10);
  CHECK(headers[2].name == "opt/envkit/envkit.lock");
  CHECK(headers[2].mode == 0644);
  CHECK(headers[3].name == "opt/envkit/lib/libz.so");
  CHECK(headers[3].type == '2');
  CHECK(headers[3].link == "libz.so.1");
  CHECK(headers[4].name == "opt/envkit/share/data");
  CHECK(headers[4].mode == 0644);
  for (const auto& header : headers) {
    CHECK(header.uid == 0);
    CHECK(header.gid == 0);
    CHECK(header.uname.empty());
    CHECK(header.mtime == 1700000000);
  }
  CHECK(tar_of(entries, 0) != tar);  // the epoch is in every header
}

TEST_CASE("tar writer: two paths of one inode are a file and a hard link", "[oci][tar]") {
  const TempDir dir;
  const auto file = dir.write("libcudnn.so.9", "cudnn\n");
  fs::create_hard_link(file, dir.path() / "view");
  const auto tar = tar_of({{.path = "b/libcudnn.so.9", .source = file},
                           {.path = "a/libcudnn.so.9", .source = dir.path() / "view"}});
  const auto headers = headers_of(tar);
  REQUIRE(headers.size() == 2);
  CHECK(headers[0].name == "a/libcudnn.so.9");
  CHECK(headers[0].type == '0');
  CHECK(headers[0].size == 6);
  CHECK(headers[1].name == "b/libcudnn.so.9");
  CHECK(headers[1].type == '1');
  CHECK(headers[1].link == "a/libcudnn.so.9");
  CHECK(headers[1].size == 0);
}

TEST_CASE("tar writer: a long path gets a PAX header", "[oci][tar]") {
  const std::string path = "opt/envkit/" + std::string(150, 'x');
  const auto headers = headers_of(tar_of({{.path = path, .content = "x"}}));
  REQUIRE(headers.size() == 2);
  CHECK(headers[0].type == 'x');
  CHECK(headers[1].type == '0');
  const auto tar = tar_of({{.path = path, .content = "x"}});
  CHECK(tar.find(" path=" + path + "\n") != std::string::npos);
}

TEST_CASE("tar writer: whiteout names and one path with two contents are refused", "[oci][tar]") {
  const auto sink = [](std::string_view) -> Result<void> { return {}; };
  auto whiteout = write_tar(
      {{.path = "opt/envkit/lib/.wh.libfoo.so", .content = "", .owner = "foo 1.0"}}, 0, sink);
  REQUIRE_FALSE(whiteout);
  CHECK(whiteout.error().code() == ErrorCode::input);
  CHECK_THAT(whiteout.error().message(),
             Catch::Contains("opt/envkit/lib/.wh.libfoo.so") && Catch::Contains("foo 1.0"));

  auto twice = write_tar({{.path = "a", .content = "1", .owner = "one 1"},
                          {.path = "a", .content = "2", .owner = "two 2"}},
                         0, sink);
  REQUIRE_FALSE(twice);
  CHECK_THAT(twice.error().message(), Catch::Contains("one 1 and two 2"));
  // The same folder from two packages is one entry.
  CHECK(headers_of(tar_of({{.path = "d", .type = TarEntry::Type::directory},
                           {.path = "d", .type = TarEntry::Type::directory}}))
            .size() == 1);
}

}  // namespace
}  // namespace envkit::oci
