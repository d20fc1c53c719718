#pragma once

// Internal to envkit (manifest, recipes, lock): reading a YAML document with yaml-cpp while keeping
// every error a located envkit::Error. Nothing here may appear in a public header.

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/error.hpp"
#include "envkit/core/result.hpp"

namespace envkit::yaml {

// The text being parsed and the name the user knows it by.
class Source {
 public:
  Source(std::string_view text, std::string_view file) : text_(text), file_(file) {}

  [[nodiscard]] const std::string& file() const { return file_; }
  [[nodiscard]] std::string_view text() const { return text_; }

  // yaml-cpp marks are 0-based (and -1 when unknown); envkit's are 1-based.
  [[nodiscard]] SourceLocation at(const YAML::Mark& mark) const;
  [[nodiscard]] SourceLocation at(const YAML::Node& node) const { return at(node.Mark()); }
  // The whole file, without a line.
  [[nodiscard]] SourceLocation whole_file() const { return {file_, 0, 0}; }

  // Where `needle` is written on the line of `node`, searching from `skip`
  // characters after the node's start (where a needle `skip` characters into
  // the scalar's text is written at the earliest: quotes and escapes only push
  // it right); nullopt when it is not found there (a scalar folded over lines).
  [[nodiscard]] std::optional<SourceLocation> find_on_line(const YAML::Node& node,
                                                           std::string_view needle,
                                                           std::size_t skip = 0) const;

 private:
  std::string_view text_;
  std::string file_;
};

// The one document of `source`, parsed. A file with no document (empty, or only
// comments) gives a null node; malformed YAML and a second document are errors.
[[nodiscard]] Result<YAML::Node> load_document(const Source& source);

// How a node reads in "expected X, found Y": `a list`, `a mapping`, `nothing`,
// `an empty string`, or the scalar itself in backticks.
[[nodiscard]] std::string describe(const YAML::Node& node);

// One `key: value` pair of a mapping.
struct Entry {
  std::string key;
  YAML::Node key_node;
  YAML::Node value;
};

// The entries of `mapping` in file order. Keys must be scalars and appear once.
// `section` names the enclosing key in messages ("" at the top level).
[[nodiscard]] Result<std::vector<Entry>> entries_of(const YAML::Node& mapping, const Source& source,
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
