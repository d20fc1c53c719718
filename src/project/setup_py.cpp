// setup.py, read as text: envkit never runs a project's code to learn its pins.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <set>

#include "envkit/core/text.hpp"
#include "envkit/project/project_files.hpp"

namespace envkit::project {

namespace {

struct PythonToken {
  enum class Kind : std::uint8_t { name, string, op };
  Kind kind = Kind::op;
  std::string text;        // the name, the operator, or the string's value
  bool formatted = false;  // an f-string: its value is not known without running it
  SourceLocation where;    // the first character (of a string: past its opening quotes)
};

bool is_python_name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_';
}

bool is_python_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// `r`, `b`, `u`, `f`, `rb`, `Rb`, `fr`...: the prefixes a Python string literal may have.
bool is_string_prefix(std::string_view name) {
  if (name.size() > 2) return false;
  for (char c : name) {
    if (std::string_view("rRbBuUfF").find(c) == std::string_view::npos) return false;
  }
  return true;
}

// Python's tokens, as far as literals, names and operators go: comments and
// line breaks are dropped, strings decoded (escapes kept as the escaped character).
class PythonLexer {
 public:
  PythonLexer(std::string_view text, std::string_view file) : text_(text), file_(file) {}

  Result<std::vector<PythonToken>> tokens() {
    std::vector<PythonToken> out;
    while (position_ < text_.size()) {
      const char c = text_[position_];
      if (c == '#') {
        while (position_ < text_.size() && text_[position_] != '\n')
          advance();
      } else if (std::isspace(static_cast<unsigned char>(c)) != 0 || c == '\\') {
        advance();
      } else if (c == '"' || c == '\'') {
        auto string = read_string("");
        if (!string) return std::move(string).error();
        out.push_back(std::move(string).value());
      } else if (is_python_name_start(c)) {
        const SourceLocation where = here();
        std::string name;
        while (position_ < text_.size() && is_python_name_char(text_[position_])) {
          name += text_[position_];
          advance();
        }
        if (position_ < text_.size() && (text_[position_] == '"' || text_[position_] == '\'') &&
            is_string_prefix(name)) {
          auto string = read_string(name);
          if (!string) return std::move(string).error();
          out.push_back(std::move(string).value());
        } else {
          out.push_back({PythonToken::Kind::name, std::move(name), false, where});
        }
      } else {
        out.push_back(read_operator());
      }
    }
    return out;
  }

 private:
  SourceLocation here() const { return {std::string(file_), line_, column_}; }

  void advance() {
    if (text_[position_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++position_;
  }

  // `==`, `+=`, `<=`...: an operator with `=` is one token, so `x == [...]` is no assignment.
  PythonToken read_operator() {
    PythonToken token{PythonToken::Kind::op, std::string(1, text_[position_]), false, here()};
    advance();
    if (position_ < text_.size() && text_[position_] == '=' &&
        std::string_view("=<>!+-*/%&|^:@").find(token.text[0]) != std::string_view::npos) {
      token.text += '=';
      advance();
    }
    return token;
  }

  Result<PythonToken> read_string(std::string_view prefix) {
    const SourceLocation start = here();
    const char quote = text_[position_];
    const bool triple = text_.substr(position_, 3) == std::string(3, quote);
    const bool raw = prefix.find_first_of("rR") != std::string_view::npos;
    for (int i = 0; i < (triple ? 3 : 1); ++i)
      advance();
    PythonToken token{PythonToken::Kind::string, "",
                      prefix.find_first_of("fF") != std::string_view::npos, here()};
    while (position_ < text_.size()) {
      const char c = text_[position_];
      if (c == quote && (!triple || text_.substr(position_, 3) == std::string(3, quote))) {
        for (int i = 0; i < (triple ? 3 : 1); ++i)
          advance();
        return token;
      }
      if (c == '\n' && !triple) break;
      if (c == '\\' && position_ + 1 < text_.size()) {
        if (raw) token.text += c;
        advance();
        if (text_[position_] != '\n' || raw) token.text += text_[position_];
      } else {
        token.text += c;
      }
      advance();
    }
    return Error::input("a string literal that does not end").at(start);
  }

  std::string_view text_;
  std::string_view file_;
  std::size_t position_ = 0;
  int line_ = 1;
  int column_ = 1;
};

bool is_op(const std::vector<PythonToken>& tokens, std::size_t i, std::string_view op) {
  return i < tokens.size() && tokens[i].kind == PythonToken::Kind::op && tokens[i].text == op;
}

bool is_literal(const std::vector<PythonToken>& tokens, std::size_t i) {
  return i < tokens.size() && tokens[i].kind == PythonToken::Kind::string && !tokens[i].formatted;
}

// A string literal at `i`, with the literals written right after it joined
// (`"torch" ">=2.1"`, as Python does); `i` moves past them.
PythonToken joined_literal(const std::vector<PythonToken>& tokens, std::size_t& i) {
  PythonToken joined = tokens[i++];
  while (is_literal(tokens, i))
    joined.text += tokens[i++].text;
  return joined;
}

// Where `key` is given a value: `key=` (a keyword or an assignment) or `"key":`
// (a dict passed as `**kwargs`); the indexes of the values.
std::vector<std::size_t> values_of(const std::vector<PythonToken>& tokens, std::string_view key) {
  std::vector<std::size_t> values;
  for (std::size_t i = 0; i + 2 < tokens.size(); ++i) {
    if (tokens[i].text != key) continue;
    const bool keyword = tokens[i].kind == PythonToken::Kind::name && is_op(tokens, i + 1, "=");
    const bool dict_key = tokens[i].kind == PythonToken::Kind::string && is_op(tokens, i + 1, ":");
    if (keyword || dict_key) values.push_back(i + 2);
  }
  return values;
}

// The strings of a literal list or tuple at `i`: `["torch>=2.1", 'numpy',]`;
// nullopt for anything else, or a literal with more to it (`[...] + extra`).
std::optional<std::vector<PythonToken>> literal_list(const std::vector<PythonToken>& tokens,
                                                     std::size_t i) {
  std::string_view close;
  if (is_op(tokens, i, "[")) close = "]";
  if (is_op(tokens, i, "(")) close = ")";
  if (close.empty()) return std::nullopt;
  std::vector<PythonToken> items;
  ++i;
  while (!is_op(tokens, i, close)) {
    if (!is_literal(tokens, i)) return std::nullopt;
    items.push_back(joined_literal(tokens, i));
    if (is_op(tokens, i, ",")) {
      ++i;
    } else if (!is_op(tokens, i, close)) {
      return std::nullopt;
    }
  }
  ++i;
  for (std::string_view more : {"+", "*", ".", "[", "if"}) {
    if (i < tokens.size() && tokens[i].kind != PythonToken::Kind::string &&
        tokens[i].text == more) {
      return std::nullopt;
    }
  }
  return items;
}

// `install_requires=REQUIRED` where the file says `REQUIRED = [...]`: the index
// of that literal list, or nullopt.
std::optional<std::size_t> assigned_list(const std::vector<PythonToken>& tokens,
                                         std::size_t value) {
  if (tokens[value].kind != PythonToken::Kind::name) return std::nullopt;
  const std::size_t after = value + 1;
  if (is_op(tokens, after, "(") || is_op(tokens, after, ".") || is_op(tokens, after, "[")) {
    return std::nullopt;
  }
  for (const auto list : values_of(tokens, tokens[value].text)) {
    if (literal_list(tokens, list)) return list;
  }
  return std::nullopt;
}

Error not_literal(const PythonToken& value, std::string_view key, std::string_view expected) {
  return Error::input(fmt::format("`{}` is not {}: envkit reads setup.py without running it, "
                                  "so the value is not read",
                                  key, expected))
      .at(value.where);
}

Result<void> read_literal_install_requires(const std::vector<PythonToken>& tokens,
                                           FileRequirements& out) {
  std::set<std::size_t>
      lists_read;  // `install_requires = [...]` then `install_requires=install_requires`
  for (const auto value : values_of(tokens, "install_requires")) {
    std::optional<std::size_t> list =
        literal_list(tokens, value) ? value : assigned_list(tokens, value);
    if (!list) {
      out.warnings.push_back(not_literal(tokens[value], "install_requires", "a literal list"));
      continue;
    }
    if (!lists_read.insert(*list).second) continue;
    const auto items = literal_list(tokens, *list);
    for (const auto& item : *items) {
      if (text::trim(item.text).empty()) continue;
      auto requirement = parse_pep508(item.text, item.where);
      if (!requirement) return std::move(requirement).error();
      out.requirements.push_back(std::move(requirement).value());
    }
  }
  return {};
}

void read_literal_python_requires(const std::vector<PythonToken>& tokens, FileRequirements& out) {
  for (auto value : values_of(tokens, "python_requires")) {
    if (!is_literal(tokens, value)) {
      out.warnings.push_back(not_literal(tokens[value], "python_requires", "a literal string"));
      continue;
    }
    const PythonToken spec = joined_literal(tokens, value);
    Requirement python;
    python.name = "python";
    python.spec = std::string(text::trim(spec.text));
    python.written = fmt::format("python_requires=\"{}\"", python.spec);
    python.where = spec.where;
    out.requirements.push_back(std::move(python));
  }
}

}  // namespace

Result<FileRequirements> parse_setup_py(std::string_view text, std::string_view file) {
  auto tokens = PythonLexer(text, file).tokens();
  if (!tokens) return std::move(tokens).error();
  FileRequirements out;
  read_literal_python_requires(*tokens, out);
  if (auto read = read_literal_install_requires(*tokens, out); !read)
    return std::move(read).error();
  // The first place a pin is written is the one reported.
  sort_in_file_order(out.requirements);
  return out;
}

}  // namespace envkit::project
