#include "envkit/specs/version_spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <set>

#include "envkit/core/text.hpp"

namespace envkit::specs {

namespace {

using Op = Specifier::Op;

struct OpSpelling {
  std::string_view text;
  Op op;
};
// Longest first, so `===` is not read as `==`.
constexpr std::array<OpSpelling, 8> kOps = {{{"===", Op::arbitrary},
                                             {"~=", Op::compatible},
                                             {"==", Op::equal},
                                             {"!=", Op::not_equal},
                                             {"<=", Op::less_equal},
                                             {">=", Op::greater_equal},
                                             {"<", Op::less},
                                             {">", Op::greater}}};

bool is_release_only(const Version& v) {
  return !v.pre() && !v.post() && !v.dev() && !v.has_local();
}

// Written with the separators PEP 440 allows: `v`, an epoch, dots between numbers.
bool has_two_release_numbers(std::string_view version_text) {
  // `~=` needs `X.Y` as written (`~=1!2.0` counts the release after the epoch).
  const auto bang = version_text.find('!');
  const auto release =
      bang == std::string_view::npos ? version_text : version_text.substr(bang + 1);
  std::size_t i = 0;
  if (i < release.size() && (release[i] == 'v' || release[i] == 'V')) ++i;
  while (i < release.size() && release[i] >= '0' && release[i] <= '9')
    ++i;
  return i + 1 < release.size() && release[i] == '.' && release[i + 1] >= '0' &&
         release[i + 1] <= '9';
}

Error invalid_specifier(std::string_view text, std::string why) {
  return Error::input(fmt::format("{} is not a valid version specifier", text::quoted(text)))
      .because(std::move(why));
}

// The smallest release of the next series: 1.2 -> 1.3.dev0 (epoch kept).
Version next_series_dev0(const Version& v, std::size_t length) {
  std::vector<std::uint64_t> release(v.release().begin(),
                                     v.release().begin() + static_cast<std::ptrdiff_t>(length));
  release.back() += 1;
  return v.base_version().with_release(std::move(release)).with_dev(0);
}

// Same epoch and release (ignoring trailing zeros) and pre-release as `v`.
bool same_release_and_pre(const Version& a, const Version& b) {
  if (a.epoch() != b.epoch() || a.pre() != b.pre()) return false;
  const auto n = std::max(a.release().size(), b.release().size());
  for (std::size_t i = 0; i < n; ++i) {
    if (a.release_at(i) != b.release_at(i)) return false;
  }
  return true;
}

// `candidate` is `v` with some local segment (`v` itself has none).
bool is_local_of(const Version& candidate, const Version& v) {
  return same_release_and_pre(candidate, v) && candidate.post() == v.post() &&
         candidate.dev() == v.dev();
}

// `==V` without `.*`: V itself, and any V+local when V has no local part.
bool equal_matches(const Version& v, const Version& spec, bool spec_has_local) {
  if (v == spec) return true;
  return !spec_has_local && v > spec && is_local_of(v, spec);
}

bool wildcard_matches(const Version& v, const Version& base) {
  const Version lower = base.base_version().with_dev(0);
  const Version upper = next_series_dev0(base, base.release().size());
  return v >= lower && v < upper;
}

}  // namespace

std::string_view Specifier::op_text() const {
  for (const auto& spelling : kOps) {
    if (spelling.op == op_) return spelling.text;
  }
  return "==";
}

Result<Specifier> Specifier::parse(std::string_view text) {
  const std::string_view s = text::trim(text);
  Specifier spec;
  const OpSpelling* found = nullptr;
  for (const auto& spelling : kOps) {
    if (s.starts_with(spelling.text)) {
      found = &spelling;
      break;
    }
  }
  if (found == nullptr) {
    return invalid_specifier(s,
                             "it does not start with an operator (==, !=, <=, >=, <, >, ~=, ===)")
        .hint(fmt::format("to pin a version write {}", text::quoted("==" + std::string(s))));
  }
  spec.op_ = found->op;
  const std::string_view version_text = text::trim(s.substr(found->text.size()));

  if (spec.op_ == Op::arbitrary) {
    // `===` compares strings: anything without whitespace, `;` or `)`.
    if (version_text.find_first_of(" \t\n\r\f\v;)") != std::string_view::npos) {
      return invalid_specifier(s, "`===` takes one word without spaces, `;` or `)`");
    }
    spec.version_text_ = std::string(version_text);
    if (auto v = Version::parse(version_text)) spec.version_ = std::move(v).value();
    return spec;
  }

  std::string_view bare = version_text;
  if (bare.ends_with(".*")) {
    if (spec.op_ != Op::equal && spec.op_ != Op::not_equal) {
      return invalid_specifier(
          s, fmt::format("`.*` is only allowed with `==` and `!=`, not `{}`", found->text));
    }
    spec.wildcard_ = true;
    bare.remove_suffix(2);
  }
  if (bare.empty()) return invalid_specifier(s, fmt::format("`{}` has no version", found->text));
  auto version = Version::parse(bare);
  if (!version) {
    return invalid_specifier(
        s, fmt::format(
               "{} is not a PEP 440 version{}", text::quoted(bare),
               version.error().causes().empty() ? "" : ": " + version.error().causes().front()));
  }
  // The written form must be the PEP 440 grammar itself, without inner spaces.
  if (bare != text::trim(bare)) return invalid_specifier(s, "unexpected whitespace in the version");
  if (spec.wildcard_ && !is_release_only(*version)) {
    return invalid_specifier(s, "`.*` can only follow release numbers (`==1.6.*`)");
  }
  if (version->has_local() && spec.op_ != Op::equal && spec.op_ != Op::not_equal) {
    return invalid_specifier(
        s, fmt::format("a local version (`+{}`) is only allowed with `==` and `!=`",
                       version->to_string().substr(version->to_string().find('+') + 1)));
  }
  if (spec.op_ == Op::compatible && !has_two_release_numbers(bare)) {
    return invalid_specifier(s, "`~=` needs at least two release numbers")
        .hint(fmt::format("write {} (>= that version, same major)",
                          text::quoted(fmt::format("~={}.0", bare))));
  }
  spec.has_local_ = version->has_local();
  spec.version_text_ = std::string(bare);
  spec.version_ = std::move(version).value();
  return spec;
}

bool Specifier::matches_arbitrary(std::string_view item) const {
  return text::iequals(item, version_text_);
}

bool Specifier::matches(const Version& v) const {
  if (op_ == Op::arbitrary) return matches_arbitrary(v.to_string());
  const Version& spec = *version_;
  switch (op_) {
    case Op::greater_equal:
      return v >= spec;
    case Op::less_equal:
      return v <= spec || (v > spec && is_local_of(v, spec));
    case Op::equal:
      return wildcard_ ? wildcard_matches(v, spec) : equal_matches(v, spec, has_local_);
    case Op::not_equal:
      return wildcard_ ? !wildcard_matches(v, spec) : !equal_matches(v, spec, has_local_);
    case Op::compatible:
      return v >= spec && v < next_series_dev0(spec, spec.release().size() - 1);
    case Op::less: {
      // `<V` leaves out V's own pre-releases unless V is one (PEP 440).
      const Version bound = spec.is_prerelease() ? spec : spec.with_dev(0);
      return v < bound;
    }
    case Op::greater: {
      // `>V` leaves out V's post-releases and local versions, unless V is a
      // post or dev release itself (then the next one up is the bound).
      if (spec.dev()) return v >= spec.with_dev(*spec.dev() + 1);
      if (spec.post()) return v >= spec.with_post(*spec.post() + 1).with_dev(0);
      return v > spec && !same_release_and_pre(v, spec);
    }
    case Op::arbitrary:
      break;
  }
  return false;
}

bool Specifier::implies_prereleases() const {
  if (op_ == Op::not_equal || wildcard_) return false;
  return version_ && version_->is_prerelease();
}

std::string Specifier::to_string() const {
  if (op_ == Op::arbitrary) return fmt::format("==={}", version_text_);
  return fmt::format("{}{}{}", op_text(), version_->to_string(), wildcard_ ? ".*" : "");
}

std::string Specifier::canonical_key() const {
  if (op_ == Op::arbitrary || wildcard_ || op_ == Op::compatible) return to_string();
  // 1.0 and 1.0.0 are the same bound.
  std::vector<std::uint64_t> release = version_->release();
  while (release.size() > 1 && release.back() == 0)
    release.pop_back();
  return fmt::format("{}{}", op_text(), version_->with_release(std::move(release)).to_string());
}

Result<VersionSpec> VersionSpec::parse(std::string_view text, SpecSyntax syntax) {
  VersionSpec spec;
  spec.original_ = std::string(text::trim(text));
  for (auto item : text::split(text, ',')) {
    item = text::trim(item);
    if (item.empty()) continue;
    std::string clause(item);
    const bool bare = item.find_first_of("=!<>~") != 0;
    if (bare && syntax == SpecSyntax::envkit) {
      // envkit files: `12.1` means the 12.1 series, `2.1.*` likewise.
      if (item.ends_with(".*")) {
        clause = "==" + clause;
      } else if (auto v = Version::parse(item); v && is_release_only(*v)) {
        clause = "==" + clause + ".*";
      } else if (v) {
        clause = "==" + clause;
      } else {
        return Error::input(fmt::format("{} is not a valid version specifier", text::quoted(item)))
            .because(v.error().causes().empty() ? v.error().message() : v.error().causes().front());
      }
    }
    auto parsed = Specifier::parse(clause);
    if (!parsed) {
      if (bare && syntax == SpecSyntax::pep440) {
        if (auto v = Version::parse(item)) {
          return Error::input(
                     fmt::format("{} is not a valid version specifier", text::quoted(item)))
              .because("it has no operator")
              .hint(fmt::format("write {} for exactly that version, or {} for the series",
                                text::quoted("==" + clause), text::quoted("==" + clause + ".*")));
        }
      }
      return std::move(parsed).error();
    }
    spec.has_arbitrary_ = spec.has_arbitrary_ || parsed->op() == Specifier::Op::arbitrary;
    spec.specifiers_.push_back(std::move(parsed).value());
  }
  return spec;
}

VersionSpec VersionSpec::exactly(const Version& v) {
  auto spec = VersionSpec::parse("==" + v.to_string());
  return std::move(spec).value();
}

namespace {
bool matches_all(const std::vector<Specifier>& specifiers, const Version* parsed,
                 std::string_view raw) {
  for (const auto& s : specifiers) {
    if (s.op() == Specifier::Op::arbitrary) {
      if (!s.matches_arbitrary(raw)) return false;
    } else if (parsed == nullptr || !s.matches(*parsed)) {
      return false;
    }
  }
  return true;
}
}  // namespace

// packaging >= 26: a lone pre-release matches when it is inside the range
// (there is nothing else to prefer), unless pre-releases are excluded.
bool VersionSpec::contains(const Version& v, Prereleases prereleases) const {
  if (prereleases == Prereleases::exclude && v.is_prerelease()) return false;
  return matches_all(specifiers_, &v, v.to_string());
}

bool VersionSpec::contains(std::string_view version_text, Prereleases prereleases) const {
  auto parsed = Version::parse(version_text);
  const Version* v = parsed ? &parsed.value() : nullptr;
  if (prereleases == Prereleases::exclude && v && v->is_prerelease()) return false;
  return matches_all(specifiers_, v, version_text);
}

std::vector<Version> VersionSpec::filter(std::span<const Version> candidates,
                                         Prereleases prereleases) const {
  if (prereleases == Prereleases::pep440_default && implies_prereleases()) {
    prereleases = Prereleases::allow;
  }
  std::vector<Version> finals, pre;
  for (const auto& v : candidates) {
    if (!contains(v, Prereleases::allow)) continue;
    if (!v.is_prerelease()) {
      finals.push_back(v);
    } else if (prereleases == Prereleases::allow) {
      finals.push_back(v);
    } else if (prereleases == Prereleases::pep440_default) {
      pre.push_back(v);
    }
  }
  // PEP 440: pre-releases only when they are the only match.
  return finals.empty() ? pre : finals;
}

bool VersionSpec::implies_prereleases() const {
  return std::any_of(specifiers_.begin(), specifiers_.end(),
                     [](const Specifier& s) { return s.implies_prereleases(); });
}

VersionSpec VersionSpec::operator&(const VersionSpec& other) const {
  VersionSpec out = *this;
  out.specifiers_.insert(out.specifiers_.end(), other.specifiers_.begin(), other.specifiers_.end());
  out.has_arbitrary_ = has_arbitrary_ || other.has_arbitrary_;
  out.original_ = out.to_string();
  return out;
}

std::string VersionSpec::to_string() const {
  std::vector<const Specifier*> sorted;
  for (const auto& s : specifiers_)
    sorted.push_back(&s);
  std::stable_sort(sorted.begin(), sorted.end(), [](const Specifier* a, const Specifier* b) {
    return a->to_string() < b->to_string();
  });
  std::set<std::string> seen;
  std::string out;
  for (const auto* s : sorted) {
    if (!seen.insert(s->canonical_key()).second) continue;
    if (!out.empty()) out += ',';
    out += s->to_string();
  }
  return out;
}

std::optional<Version> VersionSpec::lowest_admitted() const {
  std::optional<Version> lowest;
  for (const auto& clause : specifiers_) {
    using Op = Specifier::Op;
    const auto op = clause.op();
    if (op == Op::less || op == Op::less_equal || op == Op::not_equal || !clause.version())
      continue;
    if (!lowest || *clause.version() > *lowest) lowest = *clause.version();
  }
  return lowest;
}

}  // namespace envkit::specs
