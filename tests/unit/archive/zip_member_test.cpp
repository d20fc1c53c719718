#include "envkit/archive/zip_member.hpp"

#include <catch2/catch.hpp>

#include "archive_maker.hpp"

using namespace envkit::archive;
using envkit::test::Entry;
using envkit::test::Format;
using envkit::test::make_archive;

namespace {

// A wheel-like zip: METADATA deflated (compressible text) between two other members.
std::string metadata_text() {
  std::string text = "Metadata-Version: 2.1\nName: jax\nVersion: 0.4.26\n";
  for (int i = 0; i < 200; ++i)
    text += "Requires-Dist: nvidia-cudnn-cu12 <9.0,>=8.9.2.26 ; extra == 'cuda12'\n";
  return text;
}

// Reads the member `path` of `zip` the way the importer does, from pieces: the last
// `tail` bytes, the central directory, the member's local header and data.
std::string read_member_from_pieces(const std::string& zip, std::size_t tail,
                                    std::string_view path) {
  const std::string_view bytes(zip);
  const auto end = bytes.substr(bytes.size() - std::min(tail, bytes.size()));
  auto where = zip_directory_location(end, "w.whl");
  REQUIRE(where);
  CHECK(where->tail_offset == bytes.size() - end.size());
  auto members = zip_directory_members(bytes.substr(where->offset, where->size), "w.whl");
  REQUIRE(members);
  for (const auto& member : *members) {
    if (member.path != path) continue;
    auto span = zip_member_span(bytes.substr(member.offset, 30), member, "w.whl");
    REQUIRE(span);
    auto content = zip_member_content(bytes.substr(member.offset, *span), member, "w.whl");
    INFO((content ? "" : content.error().to_string()));
    REQUIRE(content);
    return *content;
  }
  FAIL("no member " << path);
  return {};
}

}  // namespace

TEST_CASE("a zip member is read from the end record, the directory and its own bytes",
          "[archive][zip-member]") {
  const auto format = GENERATE(Format::zip, Format::zip_stored);
  const bool size_unknown = GENERATE(false, true);
  CAPTURE(envkit::test::format_name(format), size_unknown);
  Entry metadata = Entry::file("jax-0.4.26.dist-info/METADATA", metadata_text());
  metadata.size_unknown = size_unknown;
  const auto zip = make_archive(format, {Entry::file("jax/__init__.py", "x = 1\n"), metadata,
                                         Entry::file("jax-0.4.26.dist-info/RECORD", "r\n")});
  CHECK(read_member_from_pieces(zip, 64 * 1024, "jax-0.4.26.dist-info/METADATA") ==
        metadata_text());
  // A tail of only the end record still locates the directory.
  CHECK(read_member_from_pieces(zip, 22, "jax-0.4.26.dist-info/RECORD") == "r\n");
}

TEST_CASE("zip pieces that are not a zip's are refused, naming the zip", "[archive][zip-member]") {
  auto none = zip_directory_location(std::string(100, 'x'), "w.whl");
  REQUIRE_FALSE(none);
  CHECK_THAT(none.error().to_string(),
             Catch::Contains("w.whl") && Catch::Contains("no end-of-central-directory record"));
  const auto zip =
      make_archive(Format::zip, {Entry::file("a.dist-info/METADATA", metadata_text())});
  auto where = zip_directory_location(zip, "w.whl");
  REQUIRE(where);
  auto members =
      zip_directory_members(std::string_view(zip).substr(where->offset, where->size), "w.whl");
  REQUIRE(members);
  REQUIRE(members->size() == 1);
  const auto& member = members->front();
  // Cut short: fewer bytes than the member's data.
  auto cut = zip_member_content(std::string_view(zip).substr(member.offset, 40), member, "w.whl");
  REQUIRE_FALSE(cut);
  CHECK_THAT(cut.error().to_string(), Catch::Contains("cut short"));
  // Not a local header where the directory says one is.
  auto wrong =
      zip_member_span(std::string_view(zip).substr(member.offset + 1, 30), member, "w.whl");
  REQUIRE_FALSE(wrong);
  CHECK_THAT(wrong.error().to_string(), Catch::Contains("no local header"));
}
