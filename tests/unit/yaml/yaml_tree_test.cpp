// envkit's YAML tree: what a document reads as, and where each node is written.

#include <catch2/catch.hpp>
#include <string>

#include "yaml_source.hpp"

namespace envkit::yaml {
namespace {

Node tree_of(std::string_view text) {
  auto document = load_document(Source(text, "t.yaml"));
  INFO((document ? std::string() : document.error().to_string()));
  REQUIRE(document);
  return *std::move(document);
}

TEST_CASE("a document reads as nulls, scalars, sequences and mappings with 1-based marks",
          "[yaml]") {
  const Node root = tree_of("a: 1\nb:\n  - x\n  - \"y\"\nc: {d: ~, e: null, f: ''}\ng:\n");
  REQUIRE(root.is_mapping());
  REQUIRE(root.size() == 4);
  CHECK(root.mark().line == 1);
  CHECK(root.mark().column == 1);
  CHECK(root.key(0).text() == "a");
  CHECK(root.value(0).is_scalar());
  CHECK_FALSE(root.value(0).quoted());
  CHECK(root.value(0).mark().column == 4);

  const Node& list = root.value(1);
  REQUIRE(list.is_sequence());
  REQUIRE(list.size() == 2);
  CHECK(list.mark().line == 3);
  CHECK(list.mark().column == 3);
  CHECK(list.items()[1].text() == "y");
  CHECK(list.items()[1].quoted());
  CHECK(list.items()[1].mark().column == 5);

  const Node* flow = root.find("c");
  REQUIRE(flow != nullptr);
  CHECK(flow->is_mapping());
  CHECK(flow->mark().column == 4);
  // `~`, `null` and nothing are null, as yaml-cpp read them; a quoted empty string is not.
  CHECK(flow->value(0).is_null());
  CHECK(flow->value(1).is_null());
  CHECK(flow->value(2).is_scalar());
  CHECK(flow->value(2).text().empty());
  CHECK(root.find("g")->is_null());
  CHECK(root.find("missing") == nullptr);
  CHECK(describe(*root.find("b")) == "a list");
  CHECK(describe(*root.find("g")) == "nothing");
}

TEST_CASE("a scalar envkit writes reads back as the same text", "[yaml]") {
  // A name folded over blank lines holds newlines; written raw between double quotes
  // they read back as other text (the `recipe` fuzz target's fixpoint finding).
  const std::string texts[] = {"aaaa[\n\n%2s $ss9\"$",
                               "tab\there",
                               std::string("bell\x07", 5),
                               "del\x7f",
                               "quote\" back\\slash",
                               "12.4",
                               "yes",
                               "über",
                               "torch <2.2,>=2.1",
                               ">=3.8",
                               "a: b",
                               "trailing "};
  for (const auto& text : texts) {
    CAPTURE(text, scalar(text));
    const Node root = tree_of("v: " + scalar(text) + "\n");
    CHECK(root.value(0).text() == text);
  }
}

TEST_CASE("an empty file, only comments or `---` alone is a null document", "[yaml]") {
  const auto text = GENERATE(as<std::string>{}, "", "# comment\n", "---\n", "~\n", "---\n...\n");
  CAPTURE(text);
  CHECK(tree_of(text).is_null());
}

TEST_CASE("columns count characters, and find_on_line finds text after a non-ASCII one", "[yaml]") {
  const std::string text = "name: \"é\"\nframework: \"torch >=2.1\"\nnote: über x\n";
  const Source source(text, "t.yaml");
  const Node root = tree_of(text);
  CHECK(root.find("framework")->mark().column == 12);
  const Node& note = *root.find("note");
  CHECK(note.mark().column == 7);
  const auto x = source.find_on_line(note, "x");
  REQUIRE(x);
  CHECK(x->column == 12);  // ü is one character, two bytes
  const auto spec = source.find_on_line(*root.find("framework"), ">=", 5);
  REQUIRE(spec);
  CHECK(spec->to_string() == "t.yaml:2:19");
}

}  // namespace
}  // namespace envkit::yaml
