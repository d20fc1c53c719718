#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/specs/version.hpp"

namespace envkit::specs {

// One PEP 440 version specifier clause: `>=1.0`, `==1.6.*`, `~=2.2`, `===foo`.
class Specifier {
 public:
  enum class Op : std::uint8_t {
    compatible,     // ~=
    equal,          // ==
    not_equal,      // !=
    less_equal,     // <=
    greater_equal,  // >=
    less,           // <
    greater,        // >
    arbitrary,      // ===
  };

  [[nodiscard]] static Result<Specifier> parse(std::string_view text);

  [[nodiscard]] Op op() const { return op_; }
  [[nodiscard]] std::string_view op_text() const;
  // The version as written (without `.*`); for `===` the arbitrary string.
  [[nodiscard]] const std::string& version_text() const { return version_text_; }
  // The parsed version; absent only for `===` with a non-PEP 440 string.
  [[nodiscard]] const std::optional<Version>& version() const { return version_; }
  [[nodiscard]] bool is_wildcard() const { return wildcard_; }

  // Whether `v` lies inside this specifier's range, with no pre-release policy
  // applied (PEP 440's exclusions of V's pre/post releases for `<V`/`>V` are).
  [[nodiscard]] bool matches(const Version& v) const;
  // Whether the raw text `item` matches (only meaningful for `===`).
  [[nodiscard]] bool matches_arbitrary(std::string_view item) const;

  // Whether this clause by itself asks for pre-releases (`>=1.0rc1` does).
  [[nodiscard]] bool implies_prereleases() const;

  // Normalized: operator then normalized version (`>= 1.0RC1` -> `>=1.0rc1`).
  [[nodiscard]] std::string to_string() const;
  // Equality key: normalized version with trailing zeros dropped (except ~=).
  [[nodiscard]] std::string canonical_key() const;

 private:
  Op op_ = Op::equal;
  std::string version_text_;
  std::optional<Version> version_;
  bool wildcard_ = false;
  bool has_local_ = false;
};

// How to treat pre-releases when testing one version.
enum class Prereleases : std::uint8_t {
  pep440_default,  // a lone version matches when inside the range (packaging ≥ 26)
  allow,
  exclude,
};

// How bare versions are read.
enum class SpecSyntax : std::uint8_t {
  pep440,  // strict PEP 440: `1.2` is an error
  envkit,  // envkit files: a bare release `12.1` means `==12.1.*`, `2.1.*` means `==2.1.*`,
           // and a bare version with a pre/post/dev/local part means exactly `==` it
};

// A comma-joined set of specifiers (PEP 440 "version specifier"); empty
// matches everything.
class VersionSpec {
 public:
  VersionSpec() = default;

  [[nodiscard]] static Result<VersionSpec> parse(std::string_view text,
                                                 SpecSyntax syntax = SpecSyntax::pep440);
  // A spec that matches exactly `v` (`==v`).
  [[nodiscard]] static VersionSpec exactly(const Version& v);

  [[nodiscard]] bool empty() const { return specifiers_.empty(); }
  [[nodiscard]] const std::vector<Specifier>& specifiers() const { return specifiers_; }
  // The lowest version the lower-bound clauses (>=, >, ==, ~=, ===) admit: `>=2.28` -> 2.28,
  // the driver or glibc every machine of a fleet has at least. nullopt without one.
  [[nodiscard]] std::optional<Version> lowest_admitted() const;

  [[nodiscard]] bool contains(const Version& v,
                              Prereleases prereleases = Prereleases::pep440_default) const;
  // Same, for a version string: behaves as `packaging`'s SpecifierSet.contains
  // (a string that is not a version matches only `===` or an empty set).
  [[nodiscard]] bool contains(std::string_view version_text,
                              Prereleases prereleases = Prereleases::pep440_default) const;

  // PEP 440 selection among candidates: pre-releases are left out unless the
  // spec asks for them or no final release matches. Keeps the input order.
  [[nodiscard]] std::vector<Version> filter(
      std::span<const Version> candidates,
      Prereleases prereleases = Prereleases::pep440_default) const;

  // Whether some clause asks for pre-releases (`>=2.0rc1`).
  [[nodiscard]] bool implies_prereleases() const;

  // Intersection: every clause of both.
  [[nodiscard]] VersionSpec operator&(const VersionSpec& other) const;

  // Normalized clauses, de-duplicated and sorted, comma-joined (`!=1.0.1,>=1.0`);
  // "" when empty.
  [[nodiscard]] std::string to_string() const;
  // The text as written (trimmed), for messages.
  [[nodiscard]] const std::string& original() const { return original_; }

 private:
  std::vector<Specifier> specifiers_;
  std::string original_;
  bool has_arbitrary_ = false;
};

}  // namespace envkit::specs
