#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "envkit/solve/version_set.hpp"

// PubGrub (Natalie Weizenbaum's algorithm, as in Dart's pub and uv): unit
// propagation over incompatibilities, conflict resolution that learns new
// incompatibilities, and a derivation graph that explains a failure. This is
// the generic core: packages and candidates are numbers; a Provider says what
// they require. Problem (problem.hpp) is the provider for the recipe database.
namespace envkit::solve {

using PackageId = std::uint32_t;
using Candidate = std::uint32_t;  // index into one package's candidates
using IncompatibilityId = std::uint32_t;

// A statement about one package: positive `p ∈ S` (p is selected, as one of
// S) or negative `¬(p ∈ S)` (p is not selected, or is selected outside S).
struct Term {
  PackageId package = 0;
  bool positive = true;
  VersionSet set;

  [[nodiscard]] Term negated() const { return {package, !positive, set}; }
  // Both terms hold (same package).
  [[nodiscard]] Term intersect(const Term& other) const;
  // Every assignment allowed by this term is allowed by `other`.
  [[nodiscard]] bool satisfies(const Term& other) const;
  // No assignment is allowed by both.
  [[nodiscard]] bool contradicts(const Term& other) const;
  friend bool operator==(const Term&, const Term&) = default;
};

// Why an incompatibility holds.
struct Cause {
  enum class Kind : std::uint8_t {
    root,         // the root must be selected
    fact,         // the provider's fact number `fact` (a requirement, an unavailable set)
    no_versions,  // nothing left to choose from
    derived,      // learned from `left` and `right` during conflict resolution
  };
  Kind kind = Kind::fact;
  std::uint32_t fact = 0;
  IncompatibilityId left = 0;
  IncompatibilityId right = 0;
};

// Terms that must not all hold at once.
struct Incompatibility {
  std::vector<Term> terms;
  Cause cause;
};

struct Decision {
  PackageId package = 0;
  Candidate candidate = 0;
};

class Provider {
 public:
  virtual ~Provider() = default;
  // The package that stands for the project; it has exactly one candidate.
  [[nodiscard]] virtual PackageId root() const = 0;
  [[nodiscard]] virtual std::size_t candidate_count(PackageId package) const = 0;
  // Called once, when `package` first appears: incompatibilities that forbid
  // some of its candidates outright (one term each).
  virtual void facts_about(PackageId package, std::vector<Incompatibility>& out) = 0;
  // The requirements of one candidate: {package ∈ S, ¬(dependency ∈ T)} with
  // `candidate` ∈ S, or {package ∈ S} when no candidate of the dependency
  // satisfies the requirement.
  virtual void dependencies_of(PackageId package, Candidate candidate,
                               std::vector<Incompatibility>& out) = 0;
  // Packages with lower priority are decided first.
  [[nodiscard]] virtual int priority(PackageId package) const = 0;
  // The candidate to try, among `allowed` (never empty), given the decisions so far.
  [[nodiscard]] virtual Candidate choose(PackageId package, const VersionSet& allowed,
                                         std::span<const Decision> decided) = 0;
};

struct PubGrubResult {
  bool solved = false;
  std::vector<Decision> decisions;  // in decision order, the root first
  // For each decided package, the incompatibilities that narrowed its choice
  // (those its derivations came from), oldest first.
  std::map<PackageId, std::vector<IncompatibilityId>> narrowed_by;
  std::vector<Incompatibility> incompatibilities;  // every one stated or learned
  IncompatibilityId failure = 0;                   // when !solved: the derived {root}
  std::size_t conflicts = 0;                       // conflict resolutions run
};

[[nodiscard]] PubGrubResult pubgrub(Provider& provider);

}  // namespace envkit::solve
