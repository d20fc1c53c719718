#include "yaml_source.hpp"

#include <fmt/format.h>
#include <yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <optional>

#include "envkit/core/text.hpp"
#include "envkit/sys/fs.hpp"

namespace envkit::yaml {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxShownScalar = 40;

std::string_view line_at(std::string_view text, int line) {
  std::size_t start = 0;
  for (int i = 1; i < line; ++i) {
    const auto newline = text.find('\n', start);
    if (newline == std::string_view::npos) return {};
    start = newline + 1;
  }
  const auto end = text.find('\n', start);
  return text.substr(start, end == std::string_view::npos ? text.size() - start : end - start);
}

bool is_continuation_byte(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

// Marks count characters, not bytes: the byte where 0-based character `column` of `line` starts.
std::size_t byte_of_column(std::string_view line, int column) {
  std::size_t byte = 0;
  for (int seen = 0; byte < line.size(); ++byte) {
    if (is_continuation_byte(line[byte])) continue;
    if (seen++ == column) return byte;
  }
  return line.size();
}

// The 1-based character column of byte `byte` of `line`.
int column_of_byte(std::string_view line, std::size_t byte) {
  const auto head = line.substr(0, byte);
  return 1 + static_cast<int>(std::count_if(head.begin(), head.end(),
                                            [](char c) { return !is_continuation_byte(c); }));
}

Mark mark_of(const yaml_mark_t& mark) {
  return {static_cast<int>(mark.line) + 1, static_cast<int>(mark.column) + 1};
}

// The character a mark points at ('\0' past the end of its line).
char char_at(std::string_view text, Mark mark) {
  const std::string_view line = line_at(text, mark.line);
  const std::size_t byte = byte_of_column(line, mark.column - 1);
  return byte < line.size() ? line[byte] : '\0';
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

// ---------------------------------------------------------------- the text itself

// libyaml refuses what YAML does not allow in a file (invalid UTF-8, control
// characters), but locates it only roughly: this finds the exact place first.
std::optional<Error> unreadable_text(const Source& source) {
  const std::string_view text = source.text();
  if (text.size() > kMaxFileBytes) {
    return Error::input(fmt::format("YAML file is {} bytes, over the {} MiB envkit reads",
                                    text.size(), kMaxFileBytes >> 20))
        .at(source.whole_file());
  }
  int line = 1;
  int column = 1;
  for (std::size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const auto refuse = [&](std::string what) {
      return Error::input("invalid YAML: " + what).at({source.file(), line, column});
    };
    if (lead == '\n') {
      ++line, column = 1, ++i;
      continue;
    }
    std::size_t length = 1;
    char32_t code = lead;
    if (lead >= 0x80) {
      length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
      if (length == 0 || lead > 0xF4 || i + length > text.size()) {
        return refuse(fmt::format("byte 0x{:02X} is not UTF-8 text", lead))
            .hint("save the file as UTF-8");
      }
      code = lead & (0x7F >> length);
      for (std::size_t k = 1; k < length; ++k) {
        const auto next = static_cast<unsigned char>(text[i + k]);
        if ((next & 0xC0) != 0x80) {
          return refuse(fmt::format("byte 0x{:02X} is not UTF-8 text", lead))
              .hint("save the file as UTF-8");
        }
        code = (code << 6) | (next & 0x3F);
      }
      constexpr std::array<char32_t, 5> kSmallest = {0, 0, 0x80, 0x800, 0x10000};
      if (code < kSmallest[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
        return refuse(fmt::format("byte 0x{:02X} is not UTF-8 text", lead))
            .hint("save the file as UTF-8");
      }
    }
    // What YAML allows in a file: tab, line breaks and printable characters.
    const bool allowed = code == '\t' || code == '\r' || (code >= 0x20 && code <= 0x7E) ||
                         code == 0x85 || (code >= 0xA0 && code <= 0xD7FF) ||
                         (code >= 0xE000 && code <= 0xFFFD) || code >= 0x10000;
    if (!allowed) {
      return refuse(code == 0
                        ? std::string("a NUL byte")
                        : fmt::format("control character U+{:04X}", static_cast<unsigned>(code)))
          .hint(
              "YAML files are text; remove the character or write it as an escape in a "
              "double-quoted string");
    }
    i += length;
    ++column;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------- syntax errors

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

// A value starting with an indicator at `mark`, which libyaml choked on.
std::optional<Error> unquoted_indicator(const Source& source, Mark mark) {
  const std::string_view line = line_at(source.text(), mark.line);
  const std::size_t start = byte_of_column(line, mark.column - 1);
  if (start >= line.size() || kIndicators.find(line[start]) == std::string_view::npos) {
    return std::nullopt;
  }
  std::string_view value = line.substr(start);
  value = value.substr(0, value.find(" #"));
  // In a flow collection (`[!linux, ...]`) the value ends at the next `,`, `]` or `}`.
  const auto before = line.substr(0, start).find_last_not_of(' ');
  if (before != std::string_view::npos &&
      std::string_view("[{,").find(line[before]) != std::string_view::npos) {
    value = value.substr(0, value.find_first_of(",]}"));
  }
  value = text::trim(value);
  return must_be_quoted(value, source.at(mark));
}

struct Problem {
  std::string message;
  Mark where;
  std::optional<std::string> hint;
};

constexpr std::string_view kIndentationHint =
    "check the indentation: the keys of one mapping, and the `-` items of one list, start in the "
    "same column";

// libyaml's wording, in words a user knows where it has jargon, and the place
// that explains it best (the opening bracket or quote, not where the end was missed).
Problem problem_of(const Source& source, const yaml_parser_t& parser) {
  const std::string_view problem = parser.problem ? parser.problem : "invalid YAML";
  const std::string_view context = parser.context ? parser.context : "";
  const Mark at = mark_of(parser.problem_mark);
  const Mark opened = mark_of(parser.context_mark);
  if (problem == "did not find expected ',' or ']'")
    return {"`[` is not closed by `]`", opened, {}};
  if (problem == "did not find expected ',' or '}'")
    return {"`{` is not closed by `}`", opened, {}};
  if (context == "while scanning a quoted scalar" && problem == "found unexpected end of stream") {
    return {"quoted string is not closed", opened, "end the string with the quote it starts with"};
  }
  if (problem == "found a tab character that violates indentation" ||
      (problem == "found character that cannot start any token" &&
       char_at(source.text(), at) == '\t')) {
    return {"illegal tab when looking for indentation", at, {}};
  }
  if (problem == "did not find expected key") {
    return {"end of map not found", at, std::string(kIndentationHint)};
  }
  if (problem == "did not find expected '-' indicator") {
    return {"end of sequence not found", at, std::string(kIndentationHint)};
  }
  if (problem == "mapping values are not allowed in this context") {
    return {"illegal map value", at, "check the indentation, and quote values that contain `: `"};
  }
  if (problem == "did not find expected node content") {
    const char found = char_at(source.text(), at);
    if (std::isgraph(static_cast<unsigned char>(found)) != 0) {
      return {fmt::format("`{}` cannot start a value", found), at,
              fmt::format("quote a value that starts with `{}`", found)};
    }
    return {"a value is missing", at, {}};
  }
  return {std::string(problem), at, {}};
}

Error syntax_error(const Source& source, const yaml_parser_t& parser) {
  if (parser.error == YAML_MEMORY_ERROR) return Error::internal("out of memory reading YAML");
  const std::string_view problem = parser.problem ? parser.problem : "";
  const std::string_view context = parser.context ? parser.context : "";
  // `key: >=12.1` is a text block with a bad header, `key: !=12.0,<13` a bad
  // tag, `key: @x` a reserved character: all a value that wanted quotes.
  if ((context == "while scanning a block scalar" &&
       problem == "did not find expected comment or line break") ||
      context == "while scanning a tag") {
    if (auto unquoted = unquoted_indicator(source, mark_of(parser.context_mark))) return *unquoted;
  }
  if (problem == "found character that cannot start any token") {
    if (auto unquoted = unquoted_indicator(source, mark_of(parser.problem_mark))) return *unquoted;
  }
  Problem found = problem_of(source, parser);
  Error error = Error::input("invalid YAML: " + found.message);
  error.at(source.at(found.where));
  // A tab in the indentation leads to many different messages; when there is
  // one, it is the likeliest cause whatever the message says.
  if (const int line = first_tab_indented_line(source.text()); line > 0) {
    return error.hint(fmt::format("line {} is indented with a tab; YAML allows only spaces", line));
  }
  if (found.hint) error.hint(*found.hint);
  return error;
}

// ---------------------------------------------------------------- libyaml, owned

struct Parser {
  yaml_parser_t state{};
  bool ready = false;
  explicit Parser(std::string_view text) {
    ready = yaml_parser_initialize(&state) != 0;
    if (!ready) return;
    yaml_parser_set_encoding(&state, YAML_UTF8_ENCODING);
    yaml_parser_set_input_string(&state, reinterpret_cast<const unsigned char*>(text.data()),
                                 text.size());
  }
  ~Parser() {
    if (ready) yaml_parser_delete(&state);
  }
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;
};

struct Event {
  yaml_event_t event{};
  ~Event() { yaml_event_delete(&event); }
};

bool is_null_text(std::string_view text) {
  return text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL";
}

std::string_view tag_of(const yaml_event_t& event) {
  const yaml_char_t* tag = nullptr;
  if (event.type == YAML_SCALAR_EVENT) tag = event.data.scalar.tag;
  if (event.type == YAML_SEQUENCE_START_EVENT) tag = event.data.sequence_start.tag;
  if (event.type == YAML_MAPPING_START_EVENT) tag = event.data.mapping_start.tag;
  return tag ? std::string_view(reinterpret_cast<const char*>(tag)) : std::string_view();
}

std::string shortened(const std::string& text) {
  if (text.size() <= kMaxShownScalar) return text;
  return text.substr(0, kMaxShownScalar) + "...";
}

}  // namespace

// Builds the tree from libyaml's events, refusing what could make a small file
// cost without bound: aliases (a billion nodes from a kilobyte), nesting
// deeper than kMaxDepth and more than kMaxNodes nodes.
class TreeBuilder {
 public:
  explicit TreeBuilder(const Source& source) : source_(source) {}

  Result<Node> build() {
    Parser parser(source_.text());
    if (!parser.ready) return Error::internal("out of memory reading YAML");
    for (;;) {
      Event event;
      if (yaml_parser_parse(&parser.state, &event.event) == 0) {
        return syntax_error(source_, parser.state);
      }
      const yaml_event_t& e = event.event;
      switch (e.type) {
        case YAML_STREAM_END_EVENT:
          return document_ ? std::move(*document_) : Node{};
        case YAML_ALIAS_EVENT:
          return Error::input(fmt::format("invalid YAML: aliases (`*{}`) are not supported",
                                          reinterpret_cast<const char*>(e.data.alias.anchor)))
              .at(source_.at(mark_of(e.start_mark)))
              .hint("write the value out where the alias is");
        case YAML_SCALAR_EVENT:
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
          if (auto started = start(e); !started) return std::move(started).error();
          break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: {
          Node done = std::move(open_.back());
          open_.pop_back();
          if (auto added = add(std::move(done)); !added) return std::move(added).error();
          break;
        }
        default:
          break;
      }
    }
  }

 private:
  Result<void> start(const yaml_event_t& e) {
    Node node;
    node.mark_ = mark_of(e.start_mark);
    if (++nodes_ > kMaxNodes) {
      return Error::input(fmt::format("invalid YAML: more than {} values", kMaxNodes))
          .at(source_.at(node));
    }
    if (e.type == YAML_SCALAR_EVENT) {
      node.text_.assign(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length);
      node.quoted_ = e.data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
    }
    // A tag of the file's own (`!=12.0` is the tag `!=12.0` on an empty value):
    // envkit's files have no use for tags, so these are unquoted values.
    if (const auto tag = tag_of(e); tag.size() >= 2 && tag.front() == '!') {
      return must_be_quoted(
          node.text_.empty() ? std::string(tag) : fmt::format("{} {}", tag, node.text_),
          source_.at(node));
    }
    if (e.type == YAML_SCALAR_EVENT) {
      const bool null = !node.quoted_ && tag_of(e).empty() && is_null_text(node.text_);
      node.kind_ = null ? Node::Kind::null : Node::Kind::scalar;
      if (null) node.text_.clear();
      return add(std::move(node));
    }
    if (open_.empty() && document_) return second_document(node);
    if (static_cast<int>(open_.size()) >= kMaxDepth) {
      return Error::input(
                 fmt::format("invalid YAML: nested too deeply (over {} levels)", kMaxDepth))
          .at(source_.at(node));
    }
    node.kind_ = e.type == YAML_MAPPING_START_EVENT ? Node::Kind::mapping : Node::Kind::sequence;
    open_.push_back(std::move(node));
    return {};
  }

  Result<void> add(Node node) {
    if (!open_.empty()) {
      open_.back().children_.push_back(std::move(node));
      return {};
    }
    // A document's root. `---` alone, or a comment, makes an empty document: it does not count.
    if (node.is_null()) return {};
    if (document_) return second_document(node);
    document_ = std::move(node);
    return {};
  }

  Error second_document(const Node& root) const {
    return Error::input("expected one YAML document, found a second one")
        .at(source_.at(root))
        .hint("remove the `---` line and merge the documents");
  }

  const Source& source_;
  std::vector<Node> open_;  // the collections being read, outermost first
  std::optional<Node> document_;
  std::size_t nodes_ = 0;
};

const Node* Node::find(std::string_view name) const {
  if (kind_ != Kind::mapping) return nullptr;
  for (std::size_t i = 0; i < size(); ++i) {
    if (key(i).is_scalar() && key(i).text() == name) return &value(i);
  }
  return nullptr;
}

SourceLocation Source::at(const Mark& mark) const {
  if (mark.line <= 0 || mark.column <= 0) return whole_file();
  return {file_, mark.line, mark.column};
}

std::optional<SourceLocation> Source::find_on_line(const Node& node, std::string_view needle,
                                                   std::size_t skip) const {
  const Mark mark = node.mark();
  if (mark.line <= 0 || mark.column <= 0 || needle.empty()) return std::nullopt;
  const std::string_view line = line_at(text_, mark.line);
  const auto found = line.find(needle, byte_of_column(line, mark.column - 1) + skip);
  if (found == std::string_view::npos) return std::nullopt;
  return SourceLocation{file_, mark.line, column_of_byte(line, found)};
}

Result<Node> load_document(const Source& source) {
  if (auto unreadable = unreadable_text(source)) return *std::move(unreadable);
  return TreeBuilder(source).build();
}

Result<std::string> read_file(const fs::path& path) {
  return sys::read_file(path, kMaxFileBytes);
}

std::string describe(const Node& node) {
  switch (node.kind()) {
    case Node::Kind::sequence:
      return node.size() == 0 ? "an empty list" : "a list";
    case Node::Kind::mapping:
      return node.size() == 0 ? "an empty mapping" : "a mapping";
    case Node::Kind::scalar:
      return node.text().empty() ? "an empty string" : text::quoted(shortened(node.text()));
    case Node::Kind::null:
      break;
  }
  return "nothing";
}

Result<std::vector<Entry>> entries_of(const Node& mapping, const Source& source,
                                      std::string_view section) {
  const std::string in_section = section.empty() ? "" : " in " + text::quoted(section);
  std::vector<Entry> entries;
  entries.reserve(mapping.size());
  std::map<std::string, int, std::less<>> first_line;
  for (std::size_t i = 0; i < mapping.size(); ++i) {
    const Node& key = mapping.key(i);
    if (!key.is_scalar()) {
      return Error::input(fmt::format("expected a key name{}, found {}", in_section, describe(key)))
          .at(source.at(key));
    }
    const SourceLocation where = source.at(key);
    const auto [previous, inserted] = first_line.emplace(key.text(), where.line);
    if (!inserted) {
      return Error::input(fmt::format("duplicate key {}{} (first on line {})",
                                      text::quoted(key.text()), in_section, previous->second))
          .at(where)
          .hint(fmt::format("keep one of the two `{}:` entries", key.text()));
    }
    entries.push_back({key.text(), key, mapping.value(i)});
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
  // Control characters are escaped: raw between double quotes, a newline would be
  // folded into a space and a tab kept or not by the reader's rules (found by fuzzing).
  std::string quoted = "\"";
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += c;
    } else if (c == '\n') {
      quoted += "\\n";
    } else if (c == '\t') {
      quoted += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      quoted += fmt::format("\\x{:02x}", byte);
    } else {
      quoted += c;
    }
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
