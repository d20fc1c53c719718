#include "envkit/solve/pubgrub.hpp"

#include <algorithm>
#include <cassert>
#include <optional>
#include <stdexcept>

namespace envkit::solve {

Term Term::intersect(const Term& other) const {
  assert(package == other.package);
  if (positive && other.positive) return {package, true, set & other.set};
  if (positive) return {package, true, set - other.set};
  if (other.positive) return {package, true, other.set - set};
  return {package, false, set | other.set};
}

bool Term::satisfies(const Term& other) const {
  if (positive && other.positive) return set.subset_of(other.set);
  if (positive) return set.disjoint(other.set);
  if (other.positive) return false;  // ¬S allows "not selected"; a positive term does not
  return other.set.subset_of(set);
}

bool Term::contradicts(const Term& other) const {
  if (positive && other.positive) return set.disjoint(other.set);
  if (positive) return set.subset_of(other.set);
  if (other.positive) return other.set.subset_of(set);
  return false;  // both allow "not selected"
}

namespace {

enum class Relation : std::uint8_t { satisfied, contradicted, inconclusive };

struct Assignment {
  Term term;
  int level = 0;
  std::optional<IncompatibilityId> cause;  // empty: a decision
};

// The assignments made so far, and per package their running intersection.
class PartialSolution {
 public:
  [[nodiscard]] int level() const { return level_; }
  [[nodiscard]] const std::vector<Assignment>& assignments() const { return assignments_; }

  void decide(PackageId package, Candidate candidate, std::size_t universe) {
    ++level_;
    add({{package, true, VersionSet::only(universe, candidate)}, level_, std::nullopt});
    decided(package) = candidate;
  }

  void derive(Term term, IncompatibilityId cause) { add({std::move(term), level_, cause}); }

  [[nodiscard]] Relation relation(const Term& term) const {
    const auto* current = accumulated(term.package);
    if (current == nullptr) return Relation::inconclusive;
    if (current->satisfies(term)) return Relation::satisfied;
    if (current->contradicts(term)) return Relation::contradicted;
    return Relation::inconclusive;
  }

  // The index of the first assignment after which `term` is satisfied.
  [[nodiscard]] std::size_t satisfier(const Term& term) const {
    std::optional<Term> running;
    for (const auto index : by_package_.at(term.package)) {
      const auto& assigned = assignments_[index].term;
      running = running ? running->intersect(assigned) : assigned;
      if (running->satisfies(term)) return index;
    }
    throw std::logic_error("pubgrub: a term has no satisfier");
  }

  void backtrack(int level) {
    while (!assignments_.empty() && assignments_.back().level > level) {
      const auto package = assignments_.back().term.package;
      if (!assignments_.back().cause) decided(package).reset();
      assignments_.pop_back();
      by_package_[package].pop_back();
      recompute(package);
    }
    level_ = level;
  }

  [[nodiscard]] const Term* accumulated(PackageId package) const {
    return package < running_.size() && running_[package] ? &*running_[package] : nullptr;
  }

  [[nodiscard]] std::optional<Candidate> decision(PackageId package) const {
    return package < decisions_.size() ? decisions_[package] : std::nullopt;
  }

  // Packages required (positively derived) but not decided yet.
  [[nodiscard]] std::vector<PackageId> undecided() const {
    std::vector<PackageId> out;
    for (PackageId p = 0; p < running_.size(); ++p) {
      if (running_[p] && running_[p]->positive && !decision(p)) out.push_back(p);
    }
    return out;
  }

 private:
  void add(Assignment assignment) {
    const auto package = assignment.term.package;
    grow(package);
    running_[package] =
        running_[package] ? running_[package]->intersect(assignment.term) : assignment.term;
    by_package_[package].push_back(assignments_.size());
    assignments_.push_back(std::move(assignment));
  }

  void recompute(PackageId package) {
    running_[package].reset();
    for (const auto index : by_package_[package]) {
      const auto& term = assignments_[index].term;
      running_[package] = running_[package] ? running_[package]->intersect(term) : term;
    }
  }

  std::optional<Candidate>& decided(PackageId package) {
    grow(package);
    return decisions_[package];
  }

  void grow(PackageId package) {
    if (package >= running_.size()) {
      running_.resize(package + 1);
      by_package_.resize(package + 1);
      decisions_.resize(package + 1);
    }
  }

  int level_ = 0;
  std::vector<Assignment> assignments_;
  std::vector<std::optional<Term>> running_;
  std::vector<std::vector<std::size_t>> by_package_;
  std::vector<std::optional<Candidate>> decisions_;
};

struct Failure {
  IncompatibilityId incompatibility;
};

class Solver {
 public:
  explicit Solver(Provider& provider) : provider_(provider) {}

  PubGrubResult run() {
    const auto root = provider_.root();
    add(Incompatibility{{Term{root, false, VersionSet::all(1)}}, {Cause::Kind::root}});
    try {
      std::optional<PackageId> next = root;
      while (next) {
        propagate(*next);
        next = decide_next();
      }
    } catch (const Failure& failure) {
      outcome_.failure = failure.incompatibility;
      outcome_.incompatibilities = std::move(incompatibilities_);
      return std::move(outcome_);
    }
    outcome_.solved = true;
    record_solution();
    outcome_.incompatibilities = std::move(incompatibilities_);
    return std::move(outcome_);
  }

 private:
  // Keeps an incompatibility for explanations only: intermediate steps of a
  // conflict resolution are referenced by what was learned, not propagated.
  IncompatibilityId store(Incompatibility incompatibility) {
    incompatibilities_.push_back(std::move(incompatibility));
    return static_cast<IncompatibilityId>(incompatibilities_.size() - 1);
  }

  IncompatibilityId add(Incompatibility incompatibility) {
    const auto id = static_cast<IncompatibilityId>(incompatibilities_.size());
    for (const auto& term : incompatibility.terms) {
      if (term.package >= by_package_.size()) by_package_.resize(term.package + 1);
      by_package_[term.package].push_back(id);
    }
    std::vector<PackageId> newcomers;
    for (const auto& term : incompatibility.terms) {
      if (term.package >= introduced_.size()) introduced_.resize(term.package + 1, false);
      if (!introduced_[term.package]) {
        introduced_[term.package] = true;
        newcomers.push_back(term.package);
      }
    }
    incompatibilities_.push_back(std::move(incompatibility));
    for (const auto package : newcomers) {
      std::vector<Incompatibility> facts;
      provider_.facts_about(package, facts);
      for (auto& fact : facts)
        add(std::move(fact));
    }
    return id;
  }

  // The relation of an incompatibility to the partial solution: satisfied,
  // contradicted, or inconclusive; `unsatisfied` is set when exactly one term
  // is inconclusive and the others are satisfied ("almost satisfied").
  Relation relation(const Incompatibility& incompatibility, const Term*& unsatisfied) const {
    unsatisfied = nullptr;
    for (const auto& term : incompatibility.terms) {
      switch (solution_.relation(term)) {
        case Relation::contradicted:
          unsatisfied = nullptr;
          return Relation::contradicted;
        case Relation::inconclusive:
          if (unsatisfied != nullptr) {
            unsatisfied = nullptr;
            return Relation::inconclusive;
          }
          unsatisfied = &term;
          break;
        case Relation::satisfied:
          break;
      }
    }
    return unsatisfied == nullptr ? Relation::satisfied : Relation::inconclusive;
  }

  void propagate(PackageId start) {
    std::vector<PackageId> changed{start};
    while (!changed.empty()) {
      const auto package = changed.back();
      changed.pop_back();
      const auto& ids = by_package_[package];
      for (auto i = ids.size(); i-- > 0;) {
        const auto id = by_package_[package][i];
        const Term* unsatisfied = nullptr;
        const auto result = relation(incompatibilities_[id], unsatisfied);
        if (result == Relation::satisfied) {
          const auto root_cause = resolve_conflict(id);
          const auto again = relation(incompatibilities_[root_cause], unsatisfied);
          if (again != Relation::inconclusive || unsatisfied == nullptr) {
            throw std::logic_error("pubgrub: a learned incompatibility is not almost satisfied");
          }
          const auto derived = unsatisfied->negated();
          solution_.derive(derived, root_cause);
          changed.assign(1, derived.package);
          break;
        }
        if (unsatisfied != nullptr) {
          const auto derived = unsatisfied->negated();
          solution_.derive(derived, id);
          if (std::find(changed.begin(), changed.end(), derived.package) == changed.end()) {
            changed.push_back(derived.package);
          }
        }
      }
    }
  }

  [[nodiscard]] bool is_failure(const Incompatibility& incompatibility) const {
    const auto& terms = incompatibility.terms;
    return terms.empty() ||
           (terms.size() == 1 && terms[0].positive && terms[0].package == provider_.root());
  }

  // Terms about one package are merged; a positive root term is dropped when
  // others remain (the root is always selected).
  Incompatibility make_derived(std::vector<Term> terms, IncompatibilityId left,
                               IncompatibilityId right) const {
    std::vector<Term> merged;
    for (auto& term : terms) {
      const auto same = std::find_if(merged.begin(), merged.end(),
                                     [&](const Term& t) { return t.package == term.package; });
      if (same == merged.end()) {
        merged.push_back(std::move(term));
      } else {
        *same = same->intersect(term);
      }
    }
    if (merged.size() > 1) {
      std::erase_if(merged,
                    [&](const Term& t) { return t.positive && t.package == provider_.root(); });
    }
    return {std::move(merged), {Cause::Kind::derived, 0, left, right}};
  }

  IncompatibilityId resolve_conflict(IncompatibilityId id) {
    ++outcome_.conflicts;
    bool learned = false;
    auto current = incompatibilities_[id];
    auto current_id = id;
    while (!is_failure(current)) {
      const Term* most_recent_term = nullptr;
      std::optional<std::size_t> most_recent;
      std::optional<Term> difference;
      int previous_level = 1;
      for (const auto& term : current.terms) {
        const auto satisfier = solution_.satisfier(term);
        const auto& assignments = solution_.assignments();
        if (!most_recent) {
          most_recent_term = &term;
          most_recent = satisfier;
        } else if (*most_recent < satisfier) {
          previous_level = std::max(previous_level, assignments[*most_recent].level);
          most_recent_term = &term;
          most_recent = satisfier;
          difference.reset();
        } else {
          previous_level = std::max(previous_level, assignments[satisfier].level);
        }
        if (most_recent_term == &term) {
          const auto rest = assignments[*most_recent].term.intersect(term.negated());
          difference.reset();
          if (!(rest.positive && rest.set.empty())) {
            difference = rest;
            const auto before = solution_.satisfier(rest.negated());
            previous_level = std::max(previous_level, assignments[before].level);
          }
        }
      }
      const auto satisfier = solution_.assignments()[*most_recent];
      if (previous_level < satisfier.level || !satisfier.cause) {
        solution_.backtrack(previous_level);
        return learned ? add(std::move(current)) : current_id;
      }
      std::vector<Term> terms;
      for (const auto& term : current.terms) {
        if (&term != most_recent_term) terms.push_back(term);
      }
      for (const auto& term : incompatibilities_[*satisfier.cause].terms) {
        if (term.package != satisfier.term.package) terms.push_back(term);
      }
      if (difference) terms.push_back(difference->negated());
      const auto left = learned ? store(current) : current_id;
      current = make_derived(std::move(terms), left, *satisfier.cause);
      learned = true;
    }
    throw Failure{learned ? store(std::move(current)) : current_id};
  }

  std::optional<PackageId> decide_next() {
    auto pending = solution_.undecided();
    if (pending.empty()) return std::nullopt;
    const auto rank = [&](PackageId p) {
      return std::tuple(provider_.priority(p), solution_.accumulated(p)->set.count(), p);
    };
    const auto package =
        *std::min_element(pending.begin(), pending.end(),
                          [&](PackageId a, PackageId b) { return rank(a) < rank(b); });
    const auto& allowed = solution_.accumulated(package)->set;
    if (allowed.empty()) {
      add({{Term{package, true, allowed}}, {Cause::Kind::no_versions}});
      return package;
    }
    std::erase_if(decisions_, [&](const Decision& d) { return !solution_.decision(d.package); });
    const auto candidate = provider_.choose(package, allowed, decisions_);
    assert(allowed.contains(candidate));
    std::vector<Incompatibility> requirements;
    provider_.dependencies_of(package, candidate, requirements);
    bool conflict = false;
    for (auto& requirement : requirements) {
      const auto id = add(std::move(requirement));
      const auto& stated = incompatibilities_[id];
      conflict =
          conflict || std::all_of(stated.terms.begin(), stated.terms.end(), [&](const Term& t) {
            return t.package == package || solution_.relation(t) == Relation::satisfied;
          });
    }
    if (!conflict) {
      solution_.decide(package, candidate, provider_.candidate_count(package));
      decisions_.push_back({package, candidate});
    }
    return package;
  }

  void record_solution() {
    for (const auto& assignment : solution_.assignments()) {
      const auto package = assignment.term.package;
      if (!assignment.cause) {
        outcome_.decisions.push_back({package, *solution_.decision(package)});
      } else if (solution_.decision(package)) {
        outcome_.narrowed_by[package].push_back(*assignment.cause);
      }
    }
  }

  Provider& provider_;
  PartialSolution solution_;
  std::vector<Incompatibility> incompatibilities_;
  std::vector<std::vector<IncompatibilityId>> by_package_;
  std::vector<bool> introduced_;
  std::vector<Decision> decisions_;
  PubGrubResult outcome_;
};

}  // namespace

PubGrubResult pubgrub(Provider& provider) {
  return Solver(provider).run();
}

}  // namespace envkit::solve
