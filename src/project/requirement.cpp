#include "envkit/project/requirement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "envkit/core/text.hpp"
#include "envkit/specs/package_name.hpp"
#include "pip_lines.hpp"

namespace envkit::project {

namespace {

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
}

// Reads a PEP 508 requirement left to right, tracking the column for errors.
class Pep508Reader {
 public:
  Pep508Reader(std::string_view text, SourceLocation where)
      : text_(text), where_(std::move(where)) {}

  Result<Requirement> read() {
    Requirement requirement;
    requirement.written = std::string(text::trim(text_));
    requirement.where = where_;
    skip_spaces();
    requirement.name = std::string(take_while(is_name_char));
    if (requirement.name.empty() ||
        std::isalnum(static_cast<unsigned char>(requirement.name.front())) == 0) {
      return fail("expected a package name");
    }
    skip_spaces();
    if (peek('[')) {
      auto extras = read_extras();
      if (!extras) return std::move(extras).error();
      requirement.extras = std::move(extras).value();
      skip_spaces();
    }
    if (peek('@')) {
      ++position_;
      requirement.url = std::string(text::trim(take_until_marker()));
      if (requirement.url->empty()) return fail("expected a URL after `@`");
    } else {
      auto spec = read_spec();
      if (!spec) return std::move(spec).error();
      requirement.spec = std::move(spec).value();
    }
    skip_spaces();  // `name (==1.0) ; marker`: a space may follow `)`
    if (peek(';')) {
      ++position_;
      requirement.marker = std::string(text::trim(text_.substr(position_)));
      position_ = text_.size();
    }
    skip_spaces();
    if (position_ < text_.size()) {
      return fail(fmt::format("unexpected {}", text::quoted(text_.substr(position_, 1))));
    }
    return requirement;
  }

 private:
  bool peek(char c) const { return position_ < text_.size() && text_[position_] == c; }

  void skip_spaces() {
    while (position_ < text_.size() && is_blank(text_[position_]))
      ++position_;
  }

  template <class Predicate>
  std::string_view take_while(Predicate accept) {
    const auto start = position_;
    while (position_ < text_.size() && accept(text_[position_]))
      ++position_;
    return text_.substr(start, position_ - start);
  }

  // A URL runs to a `;` that follows whitespace (PEP 508: URLs may hold `;`).
  std::string_view take_until_marker() {
    const auto start = position_;
    while (position_ < text_.size() &&
           !(text_[position_] == ';' && position_ > start && is_blank(text_[position_ - 1]))) {
      ++position_;
    }
    return text_.substr(start, position_ - start);
  }

  Result<std::vector<std::string>> read_extras() {
    const auto open = position_++;
    const auto close = text_.find(']', position_);
    if (close == std::string_view::npos) {
      position_ = open;
      return fail("`[` without a closing `]`");
    }
    std::vector<std::string> extras;
    for (auto extra : text::split(text_.substr(position_, close - position_), ',')) {
      extra = text::trim(extra);
      if (!extra.empty()) extras.emplace_back(extra);
    }
    position_ = close + 1;
    return extras;
  }

  // `>=2.1,<2.2` or `(>=2.1,<2.2)`; checked for its characters only, parsed later.
  Result<std::string> read_spec() {
    const bool parenthesized = peek('(');
    if (parenthesized) ++position_;
    skip_spaces();
    // `torch 2.1`: pip wants an operator; envkit's own bare-version shorthand is no PEP 508.
    if (position_ < text_.size() && std::isalnum(static_cast<unsigned char>(text_[position_]))) {
      return fail("expected a version specifier such as `>=2.1`");
    }
    const auto start = position_;
    take_while([](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
             std::string_view("<>=!~.*+-_, \t").find(c) != std::string_view::npos;
    });
    std::string spec(text::trim(text_.substr(start, position_ - start)));
    if (parenthesized) {
      if (!peek(')')) return fail("`(` without a closing `)`");
      ++position_;
    }
    return spec;
  }

  Error fail(std::string message) const {
    SourceLocation at = where_;
    if (at.line > 0) at.column = std::max(at.column, 1) + static_cast<int>(position_);
    return Error::input(
               fmt::format("{} in requirement {}", message, text::quoted(text::trim(text_))))
        .at(std::move(at));
  }

  std::string_view text_;
  SourceLocation where_;
  std::size_t position_ = 0;
};

}  // namespace

std::optional<std::string> Requirement::known_package() const {
  return specs::known_package(name);
}

Result<specs::VersionSpec> Requirement::version_spec() const {
  if (url) return specs::VersionSpec();
  auto pep440 = [&]() -> Result<std::string> {
    switch (dialect) {
      case SpecDialect::poetry:
        return poetry_to_pep440(spec);
      case SpecDialect::conda:
        return conda_to_pep440(spec);
      case SpecDialect::pep440:
        break;
    }
    return spec;
  }();
  const auto unreadable = [&](const Error& cause) {
    Error error = Error::input(fmt::format("cannot read the version constraint {} of {}",
                                           text::quoted(spec), text::quoted(name)));
    error.at(where).because(cause.message());
    for (const auto& hint : cause.hints())
      error.hint(hint);
    return error;
  };
  if (!pep440) return unreadable(pep440.error());
  auto parsed = specs::VersionSpec::parse(*pep440, specs::SpecSyntax::pep440);
  if (!parsed) return unreadable(parsed.error());
  return parsed;
}

Result<Requirement> parse_pep508(std::string_view text, SourceLocation where) {
  return Pep508Reader(text, std::move(where)).read();
}

Result<Requirement> parse_conda_spec(std::string_view text, SourceLocation where) {
  Requirement requirement;
  requirement.written = std::string(text::trim(text));
  requirement.where = std::move(where);
  requirement.dialect = SpecDialect::conda;
  std::string_view rest = requirement.written;
  // `conda-forge::pytorch`, `pytorch/linux-64::pytorch`: the channel does not matter here.
  if (const auto channel_end = rest.find("::"); channel_end != std::string_view::npos) {
    rest.remove_prefix(channel_end + 2);
  }
  const auto name_end = std::find_if_not(rest.begin(), rest.end(), is_name_char);
  requirement.name = std::string(rest.begin(), name_end);
  requirement.spec = std::string(text::trim(std::string_view(name_end, rest.end())));
  if (requirement.name.empty()) {
    return Error::input(
               fmt::format("expected a conda package in {}", text::quoted(requirement.written)))
        .at(requirement.where);
  }
  return requirement;
}

}  // namespace envkit::project
