#include "explain.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "envkit/core/text.hpp"

namespace envkit::solve {

namespace {

std::string sm(specs::ComputeCapability capability) {
  return fmt::format("sm_{}{}", capability.major, capability.minor);
}

std::string with_build(const PackageInfo& info, const CandidateInfo& candidate) {
  const bool show_build = !candidate.build_id.empty() &&
                          (info.is_framework() || info.has_several_builds(candidate.version_rank));
  return show_build ? fmt::format("{} ({})", candidate.version.original(), candidate.build_id)
                    : candidate.version.original();
}

// The driver fact as a sentence: "this machine's driver is 375.26", "the
// machines' drivers are >=390.30 (envkit.yaml system.driver)".
std::string driver_sentence(const SystemFacts& system) {
  if (system.source != specs::FactSource::manifest) {
    return fmt::format("this machine's driver is {}",
                       system.driver ? system.driver->original() : "unknown");
  }
  const auto& written = system.driver_written;
  const bool bare = !written.empty() && std::isdigit(static_cast<unsigned char>(written[0])) != 0;
  return bare ? fmt::format("the machines' driver is {} (envkit.yaml system.driver)", written)
              : fmt::format("the machines' drivers are {} (envkit.yaml system.driver)", written);
}

// The glibc fact as a sentence: "this machine's glibc is 2.26",
// "the machines' glibc is >=2.26 (envkit.yaml system.glibc)".
std::string glibc_sentence(const SystemFacts& system) {
  if (system.source == specs::FactSource::manifest) {
    return fmt::format("the machines' glibc is {} (envkit.yaml system.glibc)",
                       system.glibc_written);
  }
  return fmt::format("this machine's glibc is {}", system.glibc_written);
}

// A framework build's kernels: "kernels for sm_70 sm_75 and no PTX",
// "kernels for sm_75 sm_120 and PTX for compute_120".
std::string kernels_sentence(const recipes::Build& build) {
  std::vector<std::string> sass;
  for (const auto& cc : build.cuda_arch)
    sass.push_back(sm(cc));
  std::vector<std::string> ptx;
  for (const auto& cc : build.cuda_ptx)
    ptx.push_back(fmt::format("compute_{}{}", cc.major, cc.minor));
  const auto sass_text =
      sass.empty() ? std::string("no SASS") : "kernels for " + text::join(sass, " ");
  return ptx.empty() ? sass_text + " and no PTX"
                     : fmt::format("{} and PTX for {}", sass_text, text::join(ptx, " "));
}

// Whose GPUs: this machine's, or those envkit.yaml `system.cuda-arch` lists.
std::string_view gpus_owner(const SystemFacts& system) {
  return system.source == specs::FactSource::manifest ? "the machines'" : "your";
}

}  // namespace

Describer::Describer(const Problem& problem) : problem_(problem) {
  for (std::uint32_t id = 0; id < problem.fact_count(); ++id) {
    const auto& fact = problem.fact(id);
    if (fact.kind != Fact::Kind::requirement) continue;
    const auto& dependency = problem.package(fact.dependency);
    if (dependency.kind == PackageKind::driver || dependency.kind == PackageKind::glibc ||
        fact.spec.empty()) {
      continue;
    }
    labels_.push_back(
        {fact.dependency, problem.allowed_by(fact.dependency, fact.spec), fact.spec.to_string()});
  }
}

std::string Describer::ranges(PackageId package, const VersionSet& set) const {
  const auto& info = problem_.package(package);
  const auto& candidates = info.candidates;
  // Versions whose every build is in the set read as version ranges; the
  // rest are grouped by build id: "torch >=2.1.0,<=2.5.1 (cu121)".
  std::map<std::size_t, std::pair<std::size_t, std::size_t>> held;  // rank -> (in set, total)
  for (std::size_t c = 0; c < candidates.size(); ++c) {
    auto& [in_set, total] = held[candidates[c].version_rank];
    ++total;
    if (set.contains(c)) ++in_set;
  }
  std::vector<std::string> parts;
  // Runs of consecutive entries of `universe` (candidate indices, by version)
  // that `member` accepts, as ">=a,<=b", "<=b", ">=a" or "a".
  const auto runs = [&](const std::vector<std::size_t>& universe, auto member,
                        std::string_view suffix) {
    for (std::size_t i = 0; i < universe.size();) {
      if (!member(universe[i])) {
        ++i;
        continue;
      }
      auto j = i;
      while (j + 1 < universe.size() && member(universe[j + 1]))
        ++j;
      const auto& low = candidates[universe[i]].version.original();
      const auto& high = candidates[universe[j]].version.original();
      std::string range;
      if (i == j) {
        range = low;
      } else if (i == 0) {
        range = "<=" + high;
      } else if (j + 1 == universe.size()) {
        range = ">=" + low;
      } else {
        range = fmt::format(">={},<={}", low, high);
      }
      parts.push_back(suffix.empty() ? range : fmt::format("{} ({})", range, suffix));
      i = j + 1;
    }
  };
  std::vector<std::size_t> first_of_each_version;
  for (std::size_t c = 0; c < candidates.size(); ++c) {
    if (c == 0 || candidates[c].version_rank != candidates[c - 1].version_rank) {
      first_of_each_version.push_back(c);
    }
  }
  runs(
      first_of_each_version,
      [&](std::size_t c) {
        const auto [in_set, total] = held[candidates[c].version_rank];
        return in_set == total;
      },
      "");
  std::map<std::string, std::vector<std::size_t>> by_build;
  for (std::size_t c = 0; c < candidates.size(); ++c)
    by_build[candidates[c].build_id].push_back(c);
  for (const auto& [build, universe] : by_build) {
    runs(
        universe,
        [&](std::size_t c) {
          const auto [in_set, total] = held[candidates[c].version_rank];
          return set.contains(c) && in_set < total;
        },
        build);
  }
  return text::join(parts, " or ");
}

std::string Describer::candidates(PackageId package, const VersionSet& set) const {
  const auto& info = problem_.package(package);
  switch (info.kind) {
    case PackageKind::root:
      return "envkit.yaml";
    case PackageKind::driver:
      return "the NVIDIA driver";
    case PackageKind::glibc:
      return "glibc";
    default:
      break;
  }
  if (set.count() == 1) {
    return fmt::format("{} {}", info.name, with_build(info, info.candidates[*set.lowest()]));
  }
  if (set.full() && set.universe() > 1) return fmt::format("every {} version", info.name);
  for (const auto& label : labels_) {
    if (label.package == package && label.set == set)
      return fmt::format("{} {}", info.name, label.spec);
  }
  return fmt::format("{} {}", info.name, ranges(package, set));
}

std::string Describer::requirement(const Fact& fact) const {
  const auto& dependency = problem_.package(fact.dependency);
  if (dependency.kind == PackageKind::driver) {
    return fmt::format(
        "an NVIDIA driver {}{}", fact.spec.original(),  // as NVIDIA spells it: 450.80.02
        fact.driver_through_compat ? " (with CUDA minor-version compatibility)" : "");
  }
  if (dependency.kind == PackageKind::glibc) {
    return fmt::format("glibc {} (its manylinux wheels)", fact.spec.to_string());
  }
  return fact.spec.empty() ? dependency.name
                           : fmt::format("{} {}", dependency.name, fact.spec.to_string());
}

std::string Describer::nothing_satisfies(const Fact& fact) const {
  const auto& dependency = problem_.package(fact.dependency);
  switch (dependency.kind) {
    case PackageKind::driver:
      return driver_sentence(problem_.request().system);
    case PackageKind::glibc:
      return glibc_sentence(problem_.request().system);
    case PackageKind::missing:
      return fmt::format("the recipe database has no package `{}`", dependency.name);
    case PackageKind::external:
      return fmt::format("the machine provides {} {} ({})", dependency.name,
                         dependency.candidates.front().version.original(),
                         dependency.external.value_or("external"));
    default:
      break;
  }
  const auto& all = dependency.candidates;
  if (all.empty()) return fmt::format("the recipe database has no {} versions", dependency.name);
  return fmt::format("the recipe database has no {} {} (it has {} to {})", dependency.name,
                     fact.spec.to_string(), all.front().version.original(),
                     all.back().version.original());
}

std::string Describer::unsupported_gpu(PackageId package, const VersionSet& set,
                                       std::size_t gpu_index) const {
  const auto& info = problem_.package(package);
  const auto& gpu = problem_.request().system.gpus[gpu_index];
  const auto owner = gpus_owner(problem_.request().system);
  const auto whose =
      gpu.name.empty() ? fmt::format("{} GPUs", owner) : fmt::format("{} {}", owner, gpu.name);
  // "dropped" when older versions had code for it.
  const auto lowest = *set.lowest();
  bool older_ran_it = false;
  for (std::size_t c = 0; c < lowest; ++c) {
    const auto* build = info.candidates[c].build;
    older_ran_it =
        older_ran_it || (build != nullptr && specs::runs_on(build->cuda_arch, gpu.capability));
  }
  if (info.name == "cuda") {
    const auto subject = candidates(package, set);
    return older_ran_it
               ? fmt::format("{} dropped {} ({})", subject, sm(gpu.capability), whose)
               : fmt::format("{} does not support {} ({})", subject, sm(gpu.capability), whose);
  }
  // A framework: each distinct kernel list with the builds that have it, so that the
  // reader sees what the build has, not only what it lacks.
  std::vector<std::pair<std::string, VersionSet>> groups;  // kernels sentence -> candidates
  for (const auto c : set.members()) {
    const auto* build = info.candidates[c].build;
    const auto sentence = build == nullptr ? std::string("no kernels") : kernels_sentence(*build);
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& group) { return group.first == sentence; });
    if (it == groups.end()) {
      groups.emplace_back(sentence, VersionSet::none(set.universe()));
      it = std::prev(groups.end());
    }
    it->second.insert(c);
  }
  std::vector<std::string> parts;
  for (const auto& [sentence, members] : groups)
    parts.push_back(fmt::format("{} has {}", candidates(package, members), sentence));
  return fmt::format("{}: none runs on compute capability {} ({})", text::join(parts, ", "),
                     gpu.capability.to_string(), whose);
}

std::string Describer::fact(const Incompatibility& incompatibility, const Fact& fact) const {
  const auto& first = incompatibility.terms.front();
  switch (fact.kind) {
    case Fact::Kind::platform: {
      const auto& info = problem_.package(fact.package);
      return fmt::format(
          "{} has no {} {} in the recipe database", candidates(first.package, first.set),
          specs::to_string(problem_.request().platform), info.is_framework() ? "build" : "archive");
    }
    case Fact::Kind::gpu:
      return unsupported_gpu(first.package, first.set, fact.gpu);
    case Fact::Kind::unavailable:
      return fmt::format("{} cannot be installed: {}", candidates(first.package, first.set),
                         problem_.request().unavailable[fact.unavailable].reason);
    case Fact::Kind::requirement:
      break;
  }
  // A requirement file's line, not envkit.yaml, states what it implies.
  const auto subject =
      fact.written_at ? fmt::format("`{}` in {}", fact.written_at->text, fact.written_at->location)
                      : candidates(first.package, first.set);
  const auto clause = fmt::format("{} requires {}", subject, requirement(fact));
  if (incompatibility.terms.size() == 1)
    return fmt::format("{}, but {}", clause, nothing_satisfies(fact));
  return clause;
}

std::string Describer::derived(const Incompatibility& incompatibility) const {
  const auto& terms = incompatibility.terms;
  const auto& root = problem_.root();
  if (terms.empty() || (terms.size() == 1 && terms[0].package == root && terms[0].positive)) {
    return fmt::format("no environment satisfies envkit.yaml on {}",
                       specs::to_string(problem_.request().platform));
  }
  const auto name = [&](const Term& term) { return candidates(term.package, term.set); };
  if (terms.size() == 1) {
    const auto& term = terms[0];
    if (!term.positive) return fmt::format("{} is required", name(term));
    if (term.set.full()) {
      return fmt::format("no version of {} can be used", problem_.package(term.package).name);
    }
    return fmt::format("{} cannot be used", name(term));
  }
  if (terms.size() == 2) {
    const auto positive =
        std::find_if(terms.begin(), terms.end(), [](const Term& t) { return t.positive; });
    const auto negative =
        std::find_if(terms.begin(), terms.end(), [](const Term& t) { return !t.positive; });
    if (positive != terms.end() && negative != terms.end()) {
      return fmt::format("{} requires {}", name(*positive), name(*negative));
    }
    if (positive != terms.end()) {
      return fmt::format("{} is incompatible with {}", name(terms[0]), name(terms[1]));
    }
    return fmt::format("either {} or {} is required", name(terms[0]), name(terms[1]));
  }
  std::vector<std::string> parts;
  for (const auto& term : terms) {
    parts.push_back(term.positive ? name(term) : fmt::format("not {}", name(term)));
  }
  return fmt::format("these cannot all hold: {}", text::join(parts, "; "));
}

std::string Describer::incompatibility(const Incompatibility& incompatibility) const {
  switch (incompatibility.cause.kind) {
    case Cause::Kind::fact:
      return fact(incompatibility, problem_.fact(incompatibility.cause.fact));
    case Cause::Kind::no_versions:
      return fmt::format(
          "no version of {} is left to choose",
          candidates(incompatibility.terms[0].package, incompatibility.terms[0].set));
    case Cause::Kind::root:
      return "envkit.yaml is the project";
    case Cause::Kind::derived:
      break;
  }
  return derived(incompatibility);
}

namespace {

// pub's error reporting (doc/solver.md, "Error Reporting"): walks the
// derivation graph from the failure, numbering lines that are used twice.
class Reporter {
 public:
  Reporter(const Problem& problem, const PubGrubResult& result)
      : describer_(problem), result_(result) {}

  std::vector<std::string> report() {
    const auto& failure = at(result_.failure);
    if (failure.cause.kind != Cause::Kind::derived) {
      // A stated fact starts with a package name, kept as spelled.
      lines_.push_back(describer_.incompatibility(failure) + ".");
      lines_.push_back(
          fmt::format("So {}.", describer_.incompatibility({{}, {Cause::Kind::derived}})));
      return std::move(lines_);
    }
    count_derivations(result_.failure);
    visit(result_.failure, false);
    return std::move(lines_);
  }

 private:
  const Incompatibility& at(IncompatibilityId id) const { return result_.incompatibilities[id]; }
  bool is_derived(IncompatibilityId id) const { return at(id).cause.kind == Cause::Kind::derived; }
  std::string text(IncompatibilityId id) const { return describer_.incompatibility(at(id)); }

  // A one-term fact said only of the candidates its partner in the derivation
  // is about: "cudnn 7.0.5 has no windows-x86_64 archive", not every version
  // without one.
  std::string text(IncompatibilityId id, IncompatibilityId partner) const {
    auto fact = at(id);
    if (fact.cause.kind != Cause::Kind::fact || fact.terms.size() != 1) return text(id);
    auto& term = fact.terms[0];
    for (const auto& other : at(partner).terms) {
      if (other.package != term.package) continue;
      const auto narrowed = term.set & other.set;
      if (!narrowed.empty()) term.set = narrowed;
    }
    return describer_.incompatibility(fact);
  }

  void count_derivations(IncompatibilityId id) {
    if (++uses_[id] > 1 || !is_derived(id)) return;
    count_derivations(at(id).cause.left);
    count_derivations(at(id).cause.right);
  }

  std::optional<std::size_t> line_of(IncompatibilityId id) const {
    const auto it = numbers_.find(id);
    return it == numbers_.end() ? std::nullopt : std::optional(it->second);
  }

  void write(IncompatibilityId id, std::string sentence, bool numbered) {
    if (numbered) {
      const auto number = numbers_.size() + 1;
      numbers_[id] = number;
      sentence += fmt::format(" ({})", number);
    }
    lines_.push_back(std::move(sentence));
  }

  std::string ref(IncompatibilityId id) const {
    return fmt::format("{} ({})", text(id), *line_of(id));
  }

  void visit(IncompatibilityId id, bool conclusion) {
    const bool numbered = conclusion || uses_[id] > 1;
    const auto& cause = at(id).cause;
    const auto left = cause.left;
    const auto right = cause.right;
    const auto conclusion_text = text(id);
    if (is_derived(left) && is_derived(right)) {
      const auto left_line = line_of(left);
      const auto right_line = line_of(right);
      if (left_line && right_line) {
        write(id, fmt::format("Because {} and {}, {}.", ref(left), ref(right), conclusion_text),
              numbered);
      } else if (left_line || right_line) {
        const auto known = left_line ? left : right;
        visit(left_line ? right : left, false);
        write(id, fmt::format("And because {}, {}.", ref(known), conclusion_text), numbered);
      } else {
        const bool single_left = single_line(left);
        const bool single_right = single_line(right);
        if (single_left || single_right) {
          const auto first = single_right ? left : right;
          const auto second = single_right ? right : left;
          visit(first, false);
          visit(second, false);
          write(id, fmt::format("Thus, {}.", conclusion_text), numbered);
        } else {
          visit(left, true);
          visit(right, false);
          write(id, fmt::format("And because {}, {}.", ref(left), conclusion_text), numbered);
        }
      }
    } else if (is_derived(left) || is_derived(right)) {
      const auto derived = is_derived(left) ? left : right;
      const auto stated = is_derived(left) ? right : left;
      if (line_of(derived)) {
        write(id,
              fmt::format("Because {} and {}, {}.", text(stated, derived), ref(derived),
                          conclusion_text),
              numbered);
      } else if (collapsible(derived)) {
        const auto& inner = at(derived).cause;
        const auto inner_derived = is_derived(inner.left) ? inner.left : inner.right;
        const auto inner_stated = is_derived(inner.left) ? inner.right : inner.left;
        visit(inner_derived, false);
        write(id,
              fmt::format("And because {} and {}, {}.", text(inner_stated), text(stated, derived),
                          conclusion_text),
              numbered);
      } else {
        visit(derived, false);
        write(id, fmt::format("And because {}, {}.", text(stated, derived), conclusion_text),
              numbered);
      }
    } else {
      write(id,
            fmt::format("Because {} and {}, {}.", text(left, right), text(right, left),
                        conclusion_text),
            numbered);
    }
  }

  // A derived incompatibility both of whose causes are stated facts.
  bool single_line(IncompatibilityId id) const {
    return !is_derived(at(id).cause.left) && !is_derived(at(id).cause.right);
  }

  bool collapsible(IncompatibilityId id) const {
    if (uses_.at(id) > 1) return false;
    const auto& cause = at(id).cause;
    const bool left = is_derived(cause.left);
    const bool right = is_derived(cause.right);
    if (left == right) return false;
    return !line_of(left ? cause.left : cause.right);
  }

  Describer describer_;
  const PubGrubResult& result_;
  std::map<IncompatibilityId, int> uses_;
  std::map<IncompatibilityId, std::size_t> numbers_;
  std::vector<std::string> lines_;
};

}  // namespace

std::vector<std::string> explain_failure(const Problem& problem, const PubGrubResult& result) {
  return Reporter(problem, result).report();
}

std::vector<std::string> explain_choice(const Problem& problem, const Describer& describer,
                                        const PubGrubResult& result, PackageId package) {
  std::map<PackageId, Candidate> decided;
  for (const auto& decision : result.decisions)
    decided[decision.package] = decision.candidate;
  std::vector<std::string> lines;
  const auto add = [&](std::string line) {
    if (std::find(lines.begin(), lines.end(), line) == lines.end())
      lines.push_back(std::move(line));
  };
  if (const auto it = result.narrowed_by.find(package); it != result.narrowed_by.end()) {
    for (const auto id : it->second) {
      // Said of the versions actually chosen: "torch 2.4.1 (cu121) requires cuda <13,>=12.1".
      auto incompatibility = result.incompatibilities[id];
      for (auto& term : incompatibility.terms) {
        const auto chosen = decided.find(term.package);
        if (term.positive && term.package != package && chosen != decided.end() &&
            term.set.contains(chosen->second)) {
          term.set = VersionSet::only(term.set.universe(), chosen->second);
        }
      }
      add(describer.incompatibility(incompatibility));
      // A build ruled out by the indexes says what would let it in.
      if (incompatibility.cause.kind == Cause::Kind::fact) {
        const auto& fact = problem.fact(incompatibility.cause.fact);
        if (fact.kind == Fact::Kind::unavailable) {
          const auto& hint = problem.request().unavailable[fact.unavailable].hint;
          if (!hint.empty()) add("hint: " + hint);
        }
      }
    }
  }
  const auto& info = problem.package(package);
  const auto& system = problem.request().system;
  if (info.name == "cuda" && system.driver) {
    const auto& chosen = info.candidates[decided.at(package)];
    add(fmt::format("{}; {}", driver_sentence(system),
                    problem.driver_runs_natively(chosen)
                        ? fmt::format("it runs CUDA {} natively", chosen.version.original())
                        : fmt::format("it runs CUDA {} only through minor-version compatibility "
                                      "(no PTX JIT of newer code)",
                                      chosen.version.original())));
  }
  if (const auto& preference = problem.preference(package); !preference.empty()) {
    add("chosen: " + preference);
  }
  return lines;
}

}  // namespace envkit::solve
