#pragma once

// Internal to envkit (manifest, recipes, lock, config, environment.yml): envkit's own YAML tree,
// built from libyaml's events, with every error a located envkit::Error. Nothing here may appear
// in a public header.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/error.hpp"
#include "envkit/core/result.hpp"

namespace envkit::yaml {

// What any input may cost: the biggest real file is a ~50 KB recipe and a big project's lock a few
// MB, so these bound memory (about 100 bytes a node) and time without refusing real files.
inline constexpr std::size_t kMaxFileBytes = 16 * 1024 * 1024;
inline constexpr std::size_t kMaxNodes = 1'000'000;
inline constexpr int kMaxDepth = 64;

// Where a node starts: 1-based line and column (in characters); 0 when unknown.
struct Mark {
  int line = 0;
  int column = 0;
};

// One YAML value: null (`~`, `null`, or nothing), a scalar, a sequence or a mapping.
class Node {
 public:
  enum class Kind : std::uint8_t { null, scalar, sequence, mapping };

  [[nodiscard]] Kind kind() const { return kind_; }
  [[nodiscard]] bool is_null() const { return kind_ == Kind::null; }
  [[nodiscard]] bool is_scalar() const { return kind_ == Kind::scalar; }
  [[nodiscard]] bool is_sequence() const { return kind_ == Kind::sequence; }
  [[nodiscard]] bool is_mapping() const { return kind_ == Kind::mapping; }
  [[nodiscard]] Mark mark() const { return mark_; }

  // A scalar's text ("" for other nodes), and whether it was written quoted
  // or as a block (`"12.4"`, `|`) rather than plain.
  [[nodiscard]] const std::string& text() const { return text_; }
  [[nodiscard]] bool quoted() const { return quoted_; }

  // The items of a sequence, or the pairs of a mapping; 0 for a scalar or null.
  [[nodiscard]] std::size_t size() const {
    return kind_ == Kind::mapping ? children_.size() / 2 : children_.size();
  }
  // A sequence's items (empty for other nodes).
  [[nodiscard]] std::span<const Node> items() const {
    return kind_ == Kind::sequence ? std::span<const Node>(children_) : std::span<const Node>();
  }
  [[nodiscard]] auto begin() const { return items().begin(); }
  [[nodiscard]] auto end() const { return items().end(); }
  // A mapping's i-th key and value, in file order.
  [[nodiscard]] const Node& key(std::size_t i) const { return children_[2 * i]; }
  [[nodiscard]] const Node& value(std::size_t i) const { return children_[2 * i + 1]; }
  // The value of the first scalar key `name` of a mapping; nullptr when there is none.
  [[nodiscard]] const Node* find(std::string_view name) const;

 private:
  friend class TreeBuilder;
  Kind kind_ = Kind::null;
  bool quoted_ = false;
  Mark mark_;
  std::string text_;
  std::vector<Node> children_;  // a mapping's keys and values, alternating
};

// The text being parsed and the name the user knows it by.
class Source {
 public:
  Source(std::string_view text, std::string_view file) : text_(text), file_(file) {}

  [[nodiscard]] const std::string& file() const { return file_; }
  [[nodiscard]] std::string_view text() const { return text_; }

  [[nodiscard]] SourceLocation at(const Mark& mark) const;
  [[nodiscard]] SourceLocation at(const Node& node) const { return at(node.mark()); }
  // The whole file, without a line.
  [[nodiscard]] SourceLocation whole_file() const { return {file_, 0, 0}; }

  // Where `needle` is written on the line of `node`, searching from `skip`
  // characters after the node's start (where a needle `skip` characters into
  // the scalar's text is written at the earliest: quotes and escapes only push
  // it right); nullopt when it is not found there (a scalar folded over lines).
  [[nodiscard]] std::optional<SourceLocation> find_on_line(const Node& node,
                                                           std::string_view needle,
                                                           std::size_t skip = 0) const;

 private:
  std::string_view text_;
  std::string file_;
};

// The one document of `source`, parsed. A file with no document (empty, or only
// comments) gives a null node; malformed YAML, a second document, text that is
// not UTF-8 or holds control characters, aliases (`*name`), nesting deeper than
// kMaxDepth, more than kMaxNodes nodes and text over kMaxFileBytes are errors.
[[nodiscard]] Result<Node> load_document(const Source& source);

// The text of a YAML file: sys::read_file with the YAML cap, kMaxFileBytes (a file
// over it, or not a regular file, is refused before it is all read).
[[nodiscard]] Result<std::string> read_file(const std::filesystem::path& path);

// How a node reads in "expected X, found Y": `a list`, `a mapping`, `nothing`,
// `an empty string`, or the scalar itself in backticks.
[[nodiscard]] std::string describe(const Node& node);

// One `key: value` pair of a mapping; it refers into the document's tree.
struct Entry {
  std::string key;
  const Node& key_node;
  const Node& value;
};

// The entries of `mapping` in file order. Keys must be scalars and appear once.
// `section` names the enclosing key in messages ("" at the top level).
[[nodiscard]] Result<std::vector<Entry>> entries_of(const Node& mapping, const Source& source,
                                                    std::string_view section);

// A scalar as envkit writes YAML: plain where YAML reads it back as the same
// string in block context (`torch <2.2,>=2.1`, `https://...`), double-quoted
// otherwise (versions such as `12.4` that YAML would read as numbers, specs
// starting with `>` or `!`, `yes`/`no`, text with `: ` or ` #`).
[[nodiscard]] std::string scalar(std::string_view text);

// A flow sequence, `[a, b, c]`, of `format(item)` for each item.
template <class Range, class Format>
[[nodiscard]] std::string flow_list(const Range& items, Format format) {
  std::string out = "[";
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += ", ";
    out += format(item);
    first = false;
  }
  return out + "]";
}

// `a`, `b` and `c`, each in backticks: for hints that list the choices.
[[nodiscard]] std::string quoted_list(std::span<const std::string_view> names);

}  // namespace envkit::yaml
