#include "yaml_source.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

#include "envkit/core/text.hpp"

namespace envkit::yaml {

namespace {

constexpr std::size_t kMaxShownScalar = 40;

std::string_view without_trailing_space(std::string_view text) {
  const auto end = text.find_last_not_of(" \t\r\n");
  return end == std::string_view::npos ? std::string_view{} : text.substr(0, end + 1);
}

std::string_view line_at(std::string_view text, int line) {
  std::size_t start = 0;
  for (int i = 0; i < line; ++i) {
    const auto newline = text.find('\n', start);
    if (newline == std::string_view::npos) return {};
    start = newline + 1;
  }
  const auto end = text.find('\n', start);
  return text.substr(start, end == std::string_view::npos ? text.size() - start : end - start);
}

bool mark_before(const YAML::Mark& a, const YAML::Mark& b) {
  return a.line < b.line || (a.line == b.line && a.column < b.column);
}

// Calls `visit(node)` on every node, keys included, in document order, until it
// returns true. Aliases can make a small file a huge tree (one node shared a
// billion times), so the walk gives up after `budget` nodes.
template <class Visit>
bool walk(const YAML::Node& node, Visit& visit, int& budget) {
  if (--budget < 0) return true;
  if (visit(node)) return true;
  if (node.IsMap()) {
    for (const auto& pair : node) {
      if (walk(pair.first, visit, budget) || walk(pair.second, visit, budget)) return true;
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node) {
      if (walk(item, visit, budget)) return true;
    }
  }
  return false;
}

constexpr int kWalkBudget = 100'000;

// The node that starts last in the file. (Marks, not nodes, are kept:
// assigning a YAML::Node overwrites the node it refers to.)
struct LastNode {
  YAML::Mark mark = YAML::Mark::null_mark();
  bool is_quoted_scalar = false;
};

// yaml-cpp 0.7 accepts a quoted string left open until the end of the file when
// the file ends with a newline, so load_document() parses the text without its
// trailing newlines, which makes yaml-cpp report the error, at the end of the
// file. This finds where the string began: parsed the lenient way, the open
// string swallows the rest of the file, so it is the last node.
std::optional<YAML::Mark> find_unclosed_quote(std::string_view text) {
  try {
    LastNode last;
    auto keep_last = [&](const YAML::Node& node) {
      if (last.mark.is_null() || mark_before(last.mark, node.Mark())) {
        last = {node.Mark(), node.IsScalar() && node.Tag() == "!"};
      }
      return false;
    };
    int budget = kWalkBudget;
    for (const auto& document : YAML::LoadAll(std::string(text) + "\n")) {
      walk(document, keep_last, budget);
    }
    if (last.is_quoted_scalar) return last.mark;
  } catch (const YAML::Exception&) {
    // Malformed in another way too: keep yaml-cpp's location.
  }
  return std::nullopt;
}

// The first line indented with a tab, 1-based; 0 when none is.
int first_tab_indented_line(std::string_view text) {
  int number = 1;
  for (const auto line : text::split(text, '\n')) {
    const auto indent = line.substr(0, line.find_first_not_of(" \t"));
    if (indent.find('\t') != std::string_view::npos) return number;
    ++number;
  }
  return 0;
}

// YAML gives these a meaning at the start of a plain value, and a specifier
// written without quotes falls into them: `>=12.1` is a folded text block,
// `!=12.0` a tag.
constexpr std::string_view kIndicators = "!>|@`%";

Error must_be_quoted(std::string_view value, SourceLocation location) {
  const char first = value.front();
  const std::string_view meaning = first == '!'                   ? "is a YAML tag"
                                   : first == '>' || first == '|' ? "starts a YAML text block"
                                                                  : "is reserved in YAML";
  return Error::input(fmt::format("{} must be quoted", text::quoted(value)))
      .at(std::move(location))
      .hint(fmt::format("unquoted, a leading `{}` {}; write `\"{}\"`", first, meaning, value));
}

// Where the value of `key: value` or `- value` starts on `line`, when it
// starts with an indicator.
std::optional<std::size_t> indicator_value_start(std::string_view line) {
  std::size_t start = line.find(": ");
  if (start != std::string_view::npos) {
    start += 2;
  } else {
    start = line.find_first_not_of(' ');
    if (start == std::string_view::npos || line.substr(start, 2) != "- ") return std::nullopt;
    start += 2;
  }
  start = line.find_first_not_of(' ', start);
  if (start == std::string_view::npos || kIndicators.find(line[start]) == std::string_view::npos) {
    return std::nullopt;
  }
  return start;
}

// A value that yaml-cpp choked on because it starts with an indicator.
std::optional<Error> unquoted_indicator(const Source& source, const YAML::Mark& mark) {
  if (mark.line < 0) return std::nullopt;
  const std::string_view line = line_at(source.text(), mark.line);
  const auto start = indicator_value_start(line);
  if (!start) return std::nullopt;
  std::string_view value = line.substr(*start);
  value = text::trim(value.substr(0, value.find(" #")));
  return must_be_quoted(value, {source.file(), mark.line + 1, static_cast<int>(*start) + 1});
}

// A node with a tag of the file's own (`!=12.0` is read as the tag `!=12.0` on
// an empty value); the manifest has no use for tags, so these are mistakes.
std::optional<Error> local_tag(const Source& source, const YAML::Node& document) {
  std::optional<Error> found;
  auto check = [&](const YAML::Node& node) {
    const std::string& tag = node.Tag();
    if (tag.size() < 2 || tag.front() != '!') return false;
    const bool has_text = node.IsScalar() && !node.Scalar().empty();
    found = must_be_quoted(has_text ? tag + " " + node.Scalar() : tag, source.at(node));
    return true;
  };
  int budget = kWalkBudget;
  walk(document, check, budget);
  return found;
}

// yaml-cpp's wording, in words a user knows where it has jargon.
std::string syntax_problem(const std::string& message) {
  if (message == YAML::ErrorMsg::END_OF_SEQ_FLOW) return "`[` is not closed by `]`";
  if (message == YAML::ErrorMsg::END_OF_MAP_FLOW) return "`{` is not closed by `}`";
  if (message == YAML::ErrorMsg::EOF_IN_SCALAR) return "quoted string is not closed";
  return message;
}

std::optional<std::string> syntax_hint(const std::string& message) {
  if (message == YAML::ErrorMsg::END_OF_MAP || message == YAML::ErrorMsg::END_OF_SEQ ||
      message == YAML::ErrorMsg::BLOCK_ENTRY) {
    return "check the indentation: the keys of one mapping, and the `-` items of one list, "
           "start in the same column";
  }
  if (message == YAML::ErrorMsg::MAP_VALUE) {
    return "check the indentation, and quote values that contain `: `";
  }
  if (message == YAML::ErrorMsg::EOF_IN_SCALAR) {
    return "end the string with the quote it starts with";
  }
  return std::nullopt;
}

Error syntax_error(const Source& source, const YAML::ParserException& exception) {
  YAML::Mark where = exception.mark;
  if (exception.msg == YAML::ErrorMsg::EOF_IN_SCALAR) {
    where = find_unclosed_quote(source.text()).value_or(where);
  }
  if (auto unquoted = unquoted_indicator(source, exception.mark)) return *std::move(unquoted);
  Error error = Error::input("invalid YAML: " + syntax_problem(exception.msg));
  error.at(source.at(where));
  // A tab in the indentation confuses yaml-cpp into many different messages;
  // when there is one, it is the likeliest cause whatever the message says.
  if (const int line = first_tab_indented_line(source.text()); line > 0) {
    return error.hint(fmt::format("line {} is indented with a tab; YAML allows only spaces", line));
  }
  if (const auto hint = syntax_hint(exception.msg)) error.hint(*hint);
  return error;
}

std::string shortened(const std::string& text) {
  if (text.size() <= kMaxShownScalar) return text;
  return text.substr(0, kMaxShownScalar) + "...";
}

}  // namespace

SourceLocation Source::at(const YAML::Mark& mark) const {
  if (mark.line < 0 || mark.column < 0) return whole_file();
  return {file_, mark.line + 1, mark.column + 1};
}

std::optional<SourceLocation> Source::find_on_line(const YAML::Node& node, std::string_view needle,
                                                   std::size_t skip) const {
  const YAML::Mark mark = node.Mark();
  if (mark.line < 0 || mark.column < 0 || needle.empty()) return std::nullopt;
  const std::string_view line = line_at(text_, mark.line);
  const auto found = line.find(needle, static_cast<std::size_t>(mark.column) + skip);
  if (found == std::string_view::npos) return std::nullopt;
  return SourceLocation{file_, mark.line + 1, static_cast<int>(found) + 1};
}

Result<YAML::Node> load_document(const Source& source) {
  std::vector<YAML::Node> parsed;
  try {
    parsed = YAML::LoadAll(std::string(without_trailing_space(source.text())));
  } catch (const YAML::DeepRecursion& exception) {
    // yaml-cpp words this one "bad file".
    return Error::input("invalid YAML: nested too deeply").at(source.at(exception.mark));
  } catch (const YAML::ParserException& exception) {
    return syntax_error(source, exception);
  }
  // `---` alone, or a comment, makes an empty document: it does not count.
  // (Copied, not erased: erasing would assign nodes, which rewrites them.)
  std::vector<YAML::Node> documents;
  for (const auto& document : parsed) {
    if (!document.IsNull()) documents.push_back(document);
  }
  if (documents.empty()) return YAML::Node(YAML::NodeType::Null);
  if (documents.size() > 1) {
    return Error::input("expected one YAML document, found a second one")
        .at(source.at(documents[1]))
        .hint("remove the `---` line and merge the documents");
  }
  if (auto tagged = local_tag(source, documents.front())) return *std::move(tagged);
  return documents.front();
}

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Sequence:
      return node.size() == 0 ? "an empty list" : "a list";
    case YAML::NodeType::Map:
      return node.size() == 0 ? "an empty mapping" : "a mapping";
    case YAML::NodeType::Scalar:
      return node.Scalar().empty() ? "an empty string" : text::quoted(shortened(node.Scalar()));
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      break;
  }
  return "nothing";
}

Result<std::vector<Entry>> entries_of(const YAML::Node& mapping, const Source& source,
                                      std::string_view section) {
  const std::string in_section = section.empty() ? "" : " in " + text::quoted(section);
  std::vector<Entry> entries;
  std::map<std::string, int> first_line;
  for (const auto& pair : mapping) {
    const YAML::Node& key = pair.first;
    if (!key.IsScalar()) {
      return Error::input(fmt::format("expected a key name{}, found {}", in_section, describe(key)))
          .at(source.at(key));
    }
    const SourceLocation where = source.at(key);
    const auto [previous, inserted] = first_line.emplace(key.Scalar(), where.line);
    if (!inserted) {
      return Error::input(fmt::format("duplicate key {}{} (first on line {})",
                                      text::quoted(key.Scalar()), in_section, previous->second))
          .at(where)
          .hint(fmt::format("keep one of the two `{}:` entries", key.Scalar()));
    }
    entries.push_back({key.Scalar(), key, pair.second});
  }
  return entries;
}

namespace {
bool is_yaml_keyword(std::string_view text) {
  for (std::string_view word : {"null", "true", "false", "yes", "no", "on", "off", "y", "n"}) {
    if (text::iequals(text, word)) return true;
  }
  return false;
}
}  // namespace

std::string scalar(std::string_view text) {
  const bool plain =
      !text.empty() && std::isalpha(static_cast<unsigned char>(text.front())) &&
      text.find(": ") == std::string_view::npos && text.find(" #") == std::string_view::npos &&
      text.back() != ':' && text.back() != ' ' && !is_yaml_keyword(text) &&
      std::all_of(text.begin(), text.end(), [](char c) {
        return std::isprint(static_cast<unsigned char>(c)) != 0 && c != '"' && c != '\\';
      });
  if (plain) return std::string(text);
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return quoted + '"';
}

std::string quoted_list(std::span<const std::string_view> names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " and " : ", ";
    out += text::quoted(names[i]);
  }
  return out;
}

}  // namespace envkit::yaml
