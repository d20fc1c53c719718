#include "envkit/project/marker.hpp"

#include <cctype>
#include <optional>
#include <set>
#include <vector>

#include "envkit/specs/version_spec.hpp"

namespace envkit::project {

namespace {

// Variables compared as PEP 440 versions (PEP 508: "version_cmp" applies when
// both sides parse as versions; these always do in a real environment).
const std::set<std::string, std::less<>> kVersionVariables = {
    "python_version", "python_full_version", "implementation_version"};

const std::set<std::string, std::less<>> kVariables = {"python_version",
                                                       "python_full_version",
                                                       "os_name",
                                                       "sys_platform",
                                                       "platform_release",
                                                       "platform_system",
                                                       "platform_version",
                                                       "platform_machine",
                                                       "platform_python_implementation",
                                                       "implementation_name",
                                                       "implementation_version",
                                                       "extra",
                                                       "os.name",
                                                       "sys.platform",
                                                       "platform.version",
                                                       "platform.machine",
                                                       "platform.python_implementation",
                                                       "python_implementation"};

// A side of a comparison: a quoted literal or a variable (value if known).
struct Operand {
  bool variable = false;
  std::string name;                  // the variable's name
  std::optional<std::string> value;  // literal text, or the variable's known value
};

Truth both(Truth a, Truth b) {
  if (a == Truth::no || b == Truth::no) return Truth::no;
  if (a == Truth::yes && b == Truth::yes) return Truth::yes;
  return Truth::unknown;
}

Truth either(Truth a, Truth b) {
  if (a == Truth::yes || b == Truth::yes) return Truth::yes;
  if (a == Truth::no && b == Truth::no) return Truth::no;
  return Truth::unknown;
}

Truth truth(bool value) {
  return value ? Truth::yes : Truth::no;
}

// `<` written with its operands swapped (`"3.9" > python_version`).
std::string mirrored(const std::string& op) {
  if (op == "<") return ">";
  if (op == ">") return "<";
  if (op == "<=") return ">=";
  if (op == ">=") return "<=";
  return op;
}

class Parser {
 public:
  Parser(std::string_view text, const MarkerEnvironment& environment)
      : text_(text), environment_(environment) {}

  std::optional<Truth> parse() {
    auto value = parse_or();
    skip_space();
    if (!value || position_ != text_.size()) return std::nullopt;
    return value;
  }

 private:
  std::optional<Truth> parse_or() {
    auto value = parse_and();
    while (value && keyword("or")) {
      auto next = parse_and();
      if (!next) return std::nullopt;
      value = either(*value, *next);
    }
    return value;
  }

  std::optional<Truth> parse_and() {
    auto value = parse_expression();
    while (value && keyword("and")) {
      auto next = parse_expression();
      if (!next) return std::nullopt;
      value = both(*value, *next);
    }
    return value;
  }

  std::optional<Truth> parse_expression() {
    skip_space();
    if (take('(')) {
      auto value = parse_or();
      skip_space();
      if (!value || !take(')')) return std::nullopt;
      return value;
    }
    auto left = operand();
    if (!left) return std::nullopt;
    auto op = comparison();
    if (!op) return std::nullopt;
    auto right = operand();
    if (!right) return std::nullopt;
    return compare(*left, *op, *right);
  }

  Truth compare(const Operand& left, const std::string& op, const Operand& right) const {
    if (!left.value || !right.value) return Truth::unknown;
    if (op == "in") return truth(right.value->find(*left.value) != std::string::npos);
    if (op == "not in") return truth(right.value->find(*left.value) == std::string::npos);
    const bool versions = (left.variable && kVersionVariables.contains(left.name)) ||
                          (right.variable && kVersionVariables.contains(right.name));
    if (versions) {
      // The variable's version against the literal's specifier.
      const bool variable_left = left.variable;
      const auto& version_text = variable_left ? *left.value : *right.value;
      const auto& bound = variable_left ? *right.value : *left.value;
      auto version = specs::Version::parse(version_text);
      auto spec = specs::VersionSpec::parse((variable_left ? op : mirrored(op)) + bound);
      if (version && spec) return truth(spec->contains(*version));
    }
    if (op == "==" || op == "===") return truth(*left.value == *right.value);
    if (op == "!=") return truth(*left.value != *right.value);
    return Truth::unknown;  // ordering of non-versions: PEP 508 leaves it to the tool
  }

  std::optional<Operand> operand() {
    skip_space();
    if (position_ >= text_.size()) return std::nullopt;
    const char quote = text_[position_];
    if (quote == '"' || quote == '\'') {
      const auto end = text_.find(quote, position_ + 1);
      if (end == std::string_view::npos) return std::nullopt;
      Operand literal{.value = std::string(text_.substr(position_ + 1, end - position_ - 1))};
      position_ = end + 1;
      return literal;
    }
    const auto start = position_;
    while (position_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[position_])) != 0 ||
            text_[position_] == '_' || text_[position_] == '.')) {
      ++position_;
    }
    std::string name(text_.substr(start, position_ - start));
    if (!kVariables.contains(name)) return std::nullopt;
    Operand variable{.variable = true, .name = name};
    if (const auto known = environment_.find(name); known != environment_.end())
      variable.value = known->second;
    return variable;
  }

  std::optional<std::string> comparison() {
    skip_space();
    for (std::string_view op : {"===", "<=", ">=", "==", "!=", "~=", "<", ">"}) {
      if (text_.substr(position_).starts_with(op)) {
        position_ += op.size();
        return std::string(op);
      }
    }
    if (keyword("in")) return "in";
    if (keyword("not")) {
      if (keyword("in")) return "not in";
    }
    return std::nullopt;
  }

  // `word` followed by a non-identifier character.
  bool keyword(std::string_view word) {
    skip_space();
    if (!text_.substr(position_).starts_with(word)) return false;
    const auto after = position_ + word.size();
    if (after < text_.size() &&
        (std::isalnum(static_cast<unsigned char>(text_[after])) != 0 || text_[after] == '_'))
      return false;
    position_ = after;
    return true;
  }

  bool take(char c) {
    if (position_ < text_.size() && text_[position_] == c) {
      ++position_;
      return true;
    }
    return false;
  }

  void skip_space() {
    while (position_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[position_])))
      ++position_;
  }

  std::string_view text_;
  const MarkerEnvironment& environment_;
  std::size_t position_ = 0;
};

}  // namespace

MarkerEnvironment linux_cpython_environment() {
  return {{"os_name", "posix"},
          {"os.name", "posix"},
          {"sys_platform", "linux"},
          {"sys.platform", "linux"},
          {"platform_system", "Linux"},
          {"platform_python_implementation", "CPython"},
          {"platform.python_implementation", "CPython"},
          {"python_implementation", "CPython"},
          {"implementation_name", "cpython"}};
}

MarkerEnvironment cpython_environment(specs::Platform platform) {
  if (platform == specs::Platform::windows_x86_64) {
    return {{"os_name", "nt"},
            {"os.name", "nt"},
            {"sys_platform", "win32"},
            {"sys.platform", "win32"},
            {"platform_system", "Windows"},
            {"platform_machine", "AMD64"},
            {"platform.machine", "AMD64"},
            {"platform_python_implementation", "CPython"},
            {"platform.python_implementation", "CPython"},
            {"python_implementation", "CPython"},
            {"implementation_name", "cpython"}};
  }
  auto environment = linux_cpython_environment();
  const auto* machine = platform == specs::Platform::linux_aarch64 ? "aarch64" : "x86_64";
  environment.emplace("platform_machine", machine);
  environment.emplace("platform.machine", machine);
  return environment;
}

Truth evaluate_marker(std::string_view marker, const MarkerEnvironment& environment) {
  if (marker.find_first_not_of(" \t") == std::string_view::npos) return Truth::yes;
  return Parser(marker, environment).parse().value_or(Truth::unknown);
}

}  // namespace envkit::project
