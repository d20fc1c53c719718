// Poetry's and conda's version constraints, rewritten in PEP 440.
#include <fmt/format.h>

#include <cctype>

#include "envkit/core/text.hpp"
#include "envkit/project/requirement.hpp"
#include "envkit/specs/version.hpp"

namespace envkit::project {

namespace {

constexpr std::string_view kOperators[] = {"===", "==", "!=", "<=", ">=", "~=", "<", ">"};

bool starts_with_operator(std::string_view clause) {
  for (auto op : kOperators) {
    if (clause.starts_with(op)) return true;
  }
  return false;
}

bool starts_with_digit(std::string_view text) {
  return !text.empty() && std::isdigit(static_cast<unsigned char>(text.front())) != 0;
}

Error cannot_express_either_or(std::string_view constraint) {
  return Error::input(fmt::format("envkit cannot read either-or constraints such as {}",
                                  text::quoted(constraint)))
      .hint("pin one range, or pass `--framework` / `--python` to `envkit init`");
}

// `2.1.*` or conda's `2.1*`: a prefix match, PEP 440's `==2.1.*`.
std::optional<std::string_view> prefix_of(std::string_view version) {
  if (version.ends_with(".*")) return version.substr(0, version.size() - 2);
  if (version.ends_with('*')) return version.substr(0, version.size() - 1);
  return std::nullopt;
}

std::string equal_to(std::string_view version) {
  if (const auto prefix = prefix_of(version)) return fmt::format("=={}.*", *prefix);
  return fmt::format("=={}", version);
}

// The release numbers up to `index`, the last one raised by one: the exclusive
// upper bound of Poetry's caret and tilde ranges.
std::string bumped(const std::vector<std::uint64_t>& release, std::size_t index) {
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < index; ++i)
    parts.push_back(std::to_string(release[i]));
  parts.push_back(std::to_string(release[index] + 1));
  return text::join(parts, ".");
}

// `^1.2.3` -> `>=1.2.3,<2`, `^0.2.3` -> `>=0.2.3,<0.3`, `^0.0.3` -> `>=0.0.3,<0.0.4`:
// the first non-zero number may not change. `~1.2.3` -> `>=1.2.3,<1.3`, `~1` -> `>=1,<2`.
Result<std::string> poetry_range(std::string_view version_text, bool caret) {
  auto version = specs::Version::parse(version_text);
  if (!version) return std::move(version).error();
  const auto& release = version->release();
  std::size_t index = 0;
  if (caret) {
    while (index + 1 < release.size() && release[index] == 0)
      ++index;
  } else if (release.size() > 1) {
    index = 1;
  }
  return fmt::format(">={},<{}", version_text, bumped(release, index));
}

Result<std::string> poetry_clause(std::string_view clause) {
  if (clause == "*") return std::string();
  if (clause.starts_with('^')) return poetry_range(text::trim(clause.substr(1)), true);
  if (clause.starts_with('~') && !clause.starts_with("~=")) {
    return poetry_range(text::trim(clause.substr(1)), false);
  }
  if (clause.starts_with("==")) return equal_to(text::trim(clause.substr(2)));
  if (clause.starts_with('=')) return equal_to(text::trim(clause.substr(1)));
  if (starts_with_operator(clause)) return std::string(clause);
  return equal_to(clause);  // `2.1.0` is exactly that; `2.1.*` a prefix
}

// Poetry separates clauses with commas or spaces, and allows a space after the
// operator (`>= 2.1, < 3`): operators are glued back to their versions.
std::vector<std::string> poetry_clauses(std::string_view constraint) {
  std::vector<std::string> clauses;
  bool operator_pending = false;
  for (auto comma_part : text::split(constraint, ',')) {
    for (auto word : text::split(comma_part, ' ')) {
      word = text::trim(word);
      if (word.empty()) continue;
      if (operator_pending) {
        clauses.back() += word;
      } else {
        clauses.emplace_back(word);
      }
      operator_pending = word.find_first_not_of("<>=!~^") == std::string_view::npos;
    }
  }
  return clauses;
}

// `==1.6.0`, `!=2.1*`, `>=2.1`: conda's clauses are PEP 440's, but for its `*`.
std::string conda_clause(std::string_view clause) {
  for (auto op : {std::string_view("=="), std::string_view("!=")}) {
    if (!clause.starts_with(op)) continue;
    const auto version = text::trim(clause.substr(op.size()));
    if (const auto prefix = prefix_of(version)) return fmt::format("{}{}.*", op, *prefix);
  }
  return std::string(clause);
}

}  // namespace

Result<std::string> poetry_to_pep440(std::string_view constraint) {
  const auto text = text::trim(constraint);
  if (text.find('|') != std::string_view::npos) return cannot_express_either_or(text);
  std::vector<std::string> clauses;
  for (const auto& clause : poetry_clauses(text)) {
    auto pep440 = poetry_clause(clause);
    if (!pep440) return std::move(pep440).error();
    if (!pep440->empty()) clauses.push_back(std::move(pep440).value());
  }
  return text::join(clauses, ",");
}

Result<std::string> conda_to_pep440(std::string_view constraint) {
  const auto text = text::trim(constraint);
  if (text.empty()) return std::string();
  if (text.find('|') != std::string_view::npos) return cannot_express_either_or(text);
  if (text.starts_with('=') && !text.starts_with("==")) {
    const auto body = text.substr(1);
    const auto build = body.find('=');
    // `=2.1.0=py3.10_cuda12.1_0` names one build of exactly 2.1.0.
    if (build != std::string_view::npos) return equal_to(text::trim(body.substr(0, build)));
    // `=2.1` is conda's fuzzy match: any 2.1.x.
    const auto version = text::trim(body);
    // `=3.8.5` matches 3.8.5.*: a full release, and only the post-releases
    // these packages do not publish besides, so it is written as the exact pin it is.
    if (!prefix_of(version)) {
      const auto full = specs::Version::parse(version);
      if (full && full->release().size() >= 3) return fmt::format("=={}", version);
    }
    return fmt::format("=={}.*", prefix_of(version).value_or(version));
  }
  if (starts_with_digit(text)) {
    // `2.1.0` or `2.1.0 py310_0` (version, then build): exactly that version.
    return equal_to(text.substr(0, text.find_first_of(" =")));
  }
  std::vector<std::string> clauses;
  for (auto clause : text::split(text, ','))
    clauses.push_back(conda_clause(text::trim(clause)));
  return text::join(clauses, ",");
}

}  // namespace envkit::project
