#include "envkit/solve/solve.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "explain.hpp"
#include "problem.hpp"

namespace envkit::solve {

const Choice* Solution::find(std::string_view name) const {
  const auto it = std::find_if(packages.begin(), packages.end(),
                               [&](const Choice& c) { return c.name == name; });
  return it == packages.end() ? nullptr : &*it;
}

namespace {

// Specs that allow ever more than `spec`, nearest first, ending with any version: an exact
// pin `==2.4.9` relaxes to `==2.4.*`, then `==2.*`; any other spec straight to any version.
std::vector<specs::VersionSpec> nearer_specs(const specs::VersionSpec& spec) {
  std::vector<specs::VersionSpec> out;
  const auto& clauses = spec.specifiers();
  if (clauses.size() == 1 && clauses[0].op() == specs::Specifier::Op::equal &&
      !clauses[0].is_wildcard() && clauses[0].version()) {
    const auto& pinned = *clauses[0].version();
    for (const auto& series : {pinned.major_minor().to_string(), std::to_string(pinned.major())}) {
      if (auto wider = specs::VersionSpec::parse("==" + series + ".*")) {
        out.push_back(*std::move(wider));
      }
    }
  }
  out.emplace_back();
  return out;
}

struct Attempt {
  std::unique_ptr<Problem> problem;
  PubGrubResult result;
};

Result<Attempt> attempt(const recipes::Database& database, const Request& request) {
  auto problem = Problem::create(database, request);
  if (!problem) return problem.error();
  auto result = pubgrub(**problem);
  return Attempt{*std::move(problem), std::move(result)};
}

Solution solution_of(const Attempt& attempt) {
  const auto& problem = *attempt.problem;
  const Describer describer(problem);
  Solution solution;
  for (const auto& decision : attempt.result.decisions) {
    const auto& info = problem.package(decision.package);
    if (info.kind == PackageKind::root || info.kind == PackageKind::driver ||
        info.kind == PackageKind::glibc) {
      continue;
    }
    const auto& candidate = info.candidates[decision.candidate];
    Choice choice{.name = info.name,
                  .version = candidate.version,
                  .build = candidate.build_id,
                  .external = info.external};
    for (const auto& [dependency, spec] : candidate.requirements) {
      if (dependency != kDriverPackage) choice.requires_.emplace(dependency, spec);
    }
    choice.because = explain_choice(problem, describer, attempt.result, decision.package);
    solution.packages.push_back(std::move(choice));
  }
  std::sort(solution.packages.begin(), solution.packages.end(),
            [](const Choice& a, const Choice& b) { return a.name < b.name; });
  return solution;
}

// The stated facts the failure was derived from.
std::vector<const Fact*> facts_behind(const Attempt& attempt) {
  std::vector<const Fact*> facts;
  std::set<IncompatibilityId> seen;
  std::vector<IncompatibilityId> pending{attempt.result.failure};
  while (!pending.empty()) {
    const auto id = pending.back();
    pending.pop_back();
    if (!seen.insert(id).second) continue;
    const auto& cause = attempt.result.incompatibilities[id].cause;
    if (cause.kind == Cause::Kind::derived) {
      pending.push_back(cause.left);
      pending.push_back(cause.right);
    } else if (cause.kind == Cause::Kind::fact) {
      facts.push_back(&attempt.problem->fact(cause.fact));
    }
  }
  return facts;
}

// Solves a relaxed copy of the request; the solution when there is one.
std::optional<Solution> solved_without(const recipes::Database& database, Request relaxed) {
  auto retry = attempt(database, relaxed);
  if (!retry || !retry->result.solved) return std::nullopt;
  return solution_of(*retry);
}

// A requirement a requirement file's line implies is changed in that file, not in
// envkit.yaml; `chosen`: what the solver takes without it, if it says.
std::string change_line_hint(const Requirement& requirement, const Choice* chosen) {
  const auto change = fmt::format("change `{}` in {} (it requires {} {})",
                                  requirement.written_at->text, requirement.written_at->location,
                                  requirement.package, requirement.spec.to_string());
  return chosen == nullptr ? change + ": without that, the project can be satisfied"
                           : fmt::format("{}: without that, envkit would choose {} {}", change,
                                         chosen->name, chosen->version.original());
}

// The drivers at which some CUDA release starts to run on `platform`, natively or through
// minor-version compatibility, lowest first: where a driver upgrade can make a difference.
std::vector<specs::Version> driver_steps(const recipes::Database& database,
                                         specs::Platform platform) {
  std::vector<specs::Version> steps;
  const auto recipe = database.facts("cuda");
  if (!recipe) return steps;
  for (const auto& version : (*recipe)->versions) {
    for (const auto& build : version.builds) {
      for (const auto* table : {&build.min_driver, &build.min_driver_compat}) {
        if (const auto it = table->find(platform); it != table->end()) steps.push_back(it->second);
      }
    }
  }
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  return steps;
}

// The smallest driver upgrade that makes the request solvable, with the CUDA it then runs
// and how: each step above the machines' driver is tried, lowest first.
std::optional<std::pair<specs::Version, Solution>> smallest_driver(
    const recipes::Database& database, const Request& request) {
  for (const auto& step : driver_steps(database, request.platform)) {
    if (request.system.driver && !(*request.system.driver < step)) continue;
    auto upgraded = request;
    upgraded.system.driver = step;
    upgraded.system.driver_written = step.original();
    if (auto solution = solved_without(database, upgraded))
      return std::pair(step, *std::move(solution));
  }
  return std::nullopt;
}

std::string driver_hint(const recipes::Database& database, const Request& request,
                        const specs::Version& driver, const Solution& solution) {
  const auto* cuda = solution.find("cuda");
  if (cuda == nullptr) return fmt::format("upgrade the NVIDIA driver to >= {}", driver.original());
  bool through_compat = false;
  if (const auto recipe = database.facts("cuda")) {
    if (const auto* version = (*recipe)->find(cuda->version); version != nullptr) {
      for (const auto& build : version->builds) {
        const auto compat = build.min_driver_compat.find(request.platform);
        through_compat = compat != build.min_driver_compat.end() && compat->second == driver;
      }
    }
  }
  return fmt::format("upgrade the NVIDIA driver to >= {} (what cuda {} needs{})", driver.original(),
                     cuda->version.original(),
                     through_compat ? ", through minor-version compatibility" : "");
}

// What would make the request solvable: each hint is checked by solving the
// request with that one thing changed, and says the smallest such change.
Unsolvable hints_for(const recipes::Database& database, const Request& request,
                     const Attempt& failed) {
  const auto& problem = *failed.problem;
  const auto facts = facts_behind(failed);
  Unsolvable out;
  const auto add = [&](std::string hint, HintChange change = {}) {
    if (std::find(out.hints.begin(), out.hints.end(), hint) != out.hints.end()) return;
    out.hints.push_back(std::move(hint));
    out.changes.push_back(std::move(change));
  };
  const auto any_fact = [&](auto predicate) {
    return std::any_of(facts.begin(), facts.end(), predicate);
  };
  const auto unsatisfiable_requirement_on = [&](const Fact* fact, PackageKind kind) {
    return fact->kind == Fact::Kind::requirement &&
           problem.package(fact->dependency).kind == kind &&
           problem.allowed_by(fact->dependency, fact->spec).empty();
  };

  if (any_fact(
          [&](const Fact* f) { return unsatisfiable_requirement_on(f, PackageKind::driver); })) {
    if (const auto found = smallest_driver(database, request)) {
      add(driver_hint(database, request, found->first, found->second),
          {.kind = HintChange::Kind::driver, .driver = found->first});
    }
  }
  for (std::size_t i = 0; i < request.requirements.size(); ++i) {
    const auto& requirement = request.requirements[i];
    const bool involved = any_fact([&](const Fact* f) {
      return f->kind == Fact::Kind::requirement && f->package == problem.root() &&
             problem.package(f->dependency).name == requirement.package &&
             f->spec.to_string() == requirement.spec.to_string();
    });
    // Pins the framework's own wheels state are not the user's to drop.
    if (!involved || requirement.spec.empty() || requirement.origin == "wheels") continue;
    // The nearest release first: for `==2.4.9`, the 2.4 series, then 2.x; then any version
    // of the package; then without it at all.
    auto relaxed = request;
    std::optional<Solution> solution;
    for (auto& spec : nearer_specs(requirement.spec)) {
      relaxed.requirements[i].spec = std::move(spec);
      if ((solution = solved_without(database, relaxed))) break;
    }
    bool dropped = false;
    if (!solution && requirement.origin != "framework") {
      relaxed.requirements.erase(relaxed.requirements.begin() + static_cast<std::ptrdiff_t>(i));
      solution = solved_without(database, relaxed);
      dropped = true;
    }
    if (!solution) continue;
    const auto* chosen = solution->find(requirement.package);
    const auto written = requirement.spec.original().empty() ? requirement.spec.to_string()
                                                             : requirement.spec.original();
    const HintChange change{
        .kind = HintChange::Kind::requirement,
        .index = i,
        .spec = dropped ? std::nullopt : std::optional(relaxed.requirements[i].spec)};
    if (requirement.written_at) {
      add(change_line_hint(requirement, dropped ? nullptr : chosen));
    } else if (requirement.origin == "framework" && chosen != nullptr) {
      add(fmt::format("use {} {}, the {} version that can be satisfied here", chosen->name,
                      chosen->version.original(),
                      relaxed.requirements[i].spec.empty() ? "newest" : "nearest"),
          change);
    } else if (!dropped && chosen != nullptr) {
      add(fmt::format("without `{}: \"{}\"` under `requires:`, envkit would choose {} {}",
                      requirement.package, written, chosen->name, chosen->version.original()),
          change);
    } else {
      add(fmt::format("without `{}` under `requires:`, envkit.yaml can be satisfied",
                      requirement.package),
          change);
    }
  }
  for (const auto* fact : facts) {
    const auto& dependency = problem.package(fact->dependency);
    if (fact->kind == Fact::Kind::requirement && dependency.name == "python" &&
        dependency.kind == PackageKind::recipe &&
        problem.allowed_by(fact->dependency, fact->spec).empty()) {
      add(fmt::format(
          "if the machines have a Python {}, declare it in envkit.yaml: `external: {{python: "
          "system}}`, or its exact version as `external: {{python: \"X.Y.Z\"}}`",
          fact->spec.to_string()));
    }
    if (fact->kind == Fact::Kind::platform && request.platform != specs::host_platform()) {
      add(fmt::format("remove {} from `platforms:` in envkit.yaml to lock for the other platforms",
                      specs::to_string(request.platform)));
    }
    if (fact->kind == Fact::Kind::unavailable) {
      // What makes the build available (its own index) is a hint only where the build
      // then solves: a cu124 index does not help a driver too old for CUDA 12.
      const auto& hint = request.unavailable[fact->unavailable].hint;
      auto relaxed = request;
      std::erase_if(relaxed.unavailable,
                    [&](const UnavailableBuild& build) { return build.hint == hint; });
      if (!hint.empty() && solved_without(database, relaxed)) add(hint);
    }
    if (fact->kind == Fact::Kind::gpu) {
      // About CUDA's own targets only: a framework build without kernels for the GPU is not
      // helped by an older CUDA (its other builds are what the other hints name).
      const auto cuda = problem.find("cuda");
      const auto& gpu = request.system.gpus[fact->gpu];
      if (!cuda || fact->package != *cuda) continue;
      const CandidateInfo* newest = nullptr;
      for (const auto& candidate : problem.package(*cuda).candidates) {
        if (candidate.build != nullptr &&
            specs::runs_on(candidate.build->cuda_arch, gpu.capability)) {
          newest = &candidate;
        }
      }
      if (newest != nullptr) {
        add(fmt::format("GPUs with compute capability {} are supported up to cuda {}",
                        gpu.capability.to_string(), newest->version.original()));
      }
    }
  }
  return out;
}

}  // namespace

Result<Outcome> solve(const recipes::Database& database, const Request& request) {
  auto first = attempt(database, request);
  if (!first) return first.error();
  if (first->result.solved) return Outcome{solution_of(*first)};
  Unsolvable unsolvable;
  unsolvable.summary =
      fmt::format("no environment satisfies envkit.yaml on {}", specs::to_string(request.platform));
  unsolvable.explanation = explain_failure(*first->problem, first->result);
  auto hinted = hints_for(database, request, *first);
  unsolvable.hints = std::move(hinted.hints);
  unsolvable.changes = std::move(hinted.changes);
  return Outcome{std::move(unsolvable)};
}

}  // namespace envkit::solve
