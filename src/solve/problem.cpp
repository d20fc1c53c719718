#include "problem.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "envkit/specs/package_name.hpp"

namespace envkit::solve {

bool PackageInfo::is_framework() const {
  return std::find(std::begin(specs::kFrameworks), std::end(specs::kFrameworks), name) !=
         std::end(specs::kFrameworks);
}

bool PackageInfo::has_several_builds(std::size_t version_rank) const {
  return std::count_if(candidates.begin(), candidates.end(),
                       [&](const CandidateInfo& c) { return c.version_rank == version_rank; }) > 1;
}

Problem::Problem(const recipes::Database& database, Request request)
    : database_(database), request_(std::move(request)) {}

Result<std::unique_ptr<Problem>> Problem::create(const recipes::Database& database,
                                                 const Request& request) {
  std::unique_ptr<Problem> problem(new Problem(database, request));
  // A requirement whose marker limits it to other platforms is not part of this one's problem.
  std::erase_if(problem->request_.requirements, [&](const Requirement& requirement) {
    const auto& only = requirement.platforms;
    return !only.empty() && std::find(only.begin(), only.end(), request.platform) == only.end();
  });
  auto& root = problem->packages_.emplace_back();
  root.name = "envkit.yaml";
  root.kind = PackageKind::root;
  // The root's requirements are the request's, stated in dependencies_of().
  root.candidates.push_back({.version = specs::Version::from_release({1})});
  // Every package reachable from the project's requirements, breadth first;
  // each wave's facts files are parsed in parallel.
  std::vector<std::string> wave;
  for (const auto& requirement : problem->request_.requirements)
    wave.push_back(requirement.package);
  while (!wave.empty()) {
    database.prefetch(wave);
    std::vector<std::string> next;
    for (const auto& name : wave) {
      if (problem->find(name)) continue;
      auto id = problem->add_package(name);
      if (!id) return id.error();
      for (const auto& candidate : problem->packages_[*id].candidates) {
        for (const auto& [dependency, spec] : candidate.requirements) {
          if (!problem->find(dependency) &&
              std::find(next.begin(), next.end(), dependency) == next.end()) {
            next.push_back(dependency);
          }
        }
      }
    }
    wave = std::move(next);
  }
  return problem;
}

std::optional<PackageId> Problem::find(std::string_view name) const {
  for (PackageId id = 0; id < packages_.size(); ++id) {
    if (packages_[id].name == name && packages_[id].kind != PackageKind::root) return id;
  }
  return std::nullopt;
}

Result<PackageId> Problem::add_package(const std::string& name) {
  PackageInfo info;
  info.name = name;
  if (name == kDriverPackage) {
    // Only add_driver_requirement() names the driver, and only when it is known.
    if (!request_.system.driver)
      return Error::internal("a requirement on the driver, with no driver known");
    info.kind = PackageKind::driver;
    info.candidates.push_back({.version = *request_.system.driver});
  } else if (name == kGlibcPackage) {
    // Only add_glibc_requirement() names glibc, and only when the machines' is known.
    if (!request_.system.glibc)
      return Error::internal("a requirement on glibc, with no glibc known");
    info.kind = PackageKind::glibc;
    info.candidates.push_back({.version = *request_.system.glibc});
  } else if (const auto external = request_.external.find(name);
             external != request_.external.end()) {
    info.kind = PackageKind::external;
    info.external = external->second.description;
    // What the database knows of that version (a CUDA's minimum driver, a cuDNN's CUDA)
    // still holds. Which of its builds the machine has is not known: each is a candidate
    // (cuDNN 9.1.0.70 has a cuda11 and a cuda12 build), and the solve takes the one that fits.
    const recipes::RecipeVersion* known = nullptr;
    if (database_.contains(name)) {
      auto recipe = database_.facts(name);
      if (!recipe) return recipe.error();
      known = (*recipe)->find(external->second.version);
    }
    static const std::vector<recipes::Build> kNoBuilds;
    for (const auto& build : known != nullptr ? known->builds : kNoBuilds) {
      if (std::find(build.platforms.begin(), build.platforms.end(), request_.platform) ==
          build.platforms.end()) {
        continue;
      }
      CandidateInfo candidate{.version = external->second.version,
                              .build = &build,
                              .build_id = build.id,
                              .requirements = recipes::requirements_on(build, request_.platform)};
      add_driver_requirement(candidate);
      info.candidates.push_back(std::move(candidate));
    }
    if (info.candidates.empty()) {
      CandidateInfo candidate{.version = external->second.version};
      add_driver_requirement(candidate);
      info.candidates.push_back(std::move(candidate));
    }
  } else if (!database_.contains(name)) {
    info.kind = PackageKind::missing;
  } else {
    auto recipe = database_.facts(name);
    if (!recipe) return recipe.error();
    if (auto added = add_candidates(info, **recipe); !added) return added.error();
  }
  packages_.push_back(std::move(info));
  return static_cast<PackageId>(packages_.size() - 1);
}

Result<void> Problem::add_candidates(PackageInfo& info, const recipes::Recipe& recipe) {
  std::size_t rank = 0;
  for (const auto& version : recipe.versions) {
    std::vector<const recipes::Build*> builds;
    for (const auto& build : version.builds) {
      if (std::find(build.platforms.begin(), build.platforms.end(), request_.platform) !=
          build.platforms.end()) {
        builds.push_back(&build);
      }
    }
    std::sort(builds.begin(), builds.end(), [](auto* a, auto* b) { return a->id < b->id; });
    if (builds.empty()) {
      info.candidates.push_back(
          {.version = version.version, .on_platform = false, .version_rank = rank});
    }
    for (const auto* build : builds) {
      CandidateInfo candidate{
          .version = version.version, .build = build, .build_id = build->id, .version_rank = rank};
      candidate.requirements = recipes::requirements_on(*build, request_.platform);
      candidate.installable = recipes::installable_on(*build, request_.platform);
      if (info.name == "cuda") add_driver_requirement(candidate);
      add_glibc_requirement(candidate);
      info.candidates.push_back(std::move(candidate));
    }
    ++rank;
  }
  return {};
}

// CUDA needs a minimum driver: the family minimum where minor-version
// compatibility applies (CUDA 11 on), else the version's own.
void Problem::add_driver_requirement(CandidateInfo& candidate) const {
  if (!request_.system.driver || candidate.build == nullptr) return;
  const auto& build = *candidate.build;
  const specs::Version* minimum = nullptr;
  if (const auto it = build.min_driver_compat.find(request_.platform);
      it != build.min_driver_compat.end()) {
    minimum = &it->second;
    candidate.driver_through_compat = true;
  } else if (const auto native = build.min_driver.find(request_.platform);
             native != build.min_driver.end()) {
    minimum = &native->second;
  }
  if (minimum == nullptr) return;
  candidate.requirements.insert_or_assign(
      std::string(kDriverPackage), specs::VersionSpec::parse(">=" + minimum->original()).value());
}

// A build whose wheels need a newer glibc than the machines' installs and then fails
// at import: it needs `__glibc >=` its minimum on this platform.
void Problem::add_glibc_requirement(CandidateInfo& candidate) const {
  if (!request_.system.glibc || candidate.build == nullptr) return;
  const auto it = candidate.build->min_glibc.find(request_.platform);
  if (it == candidate.build->min_glibc.end()) return;
  candidate.requirements.insert_or_assign(
      std::string(kGlibcPackage), specs::VersionSpec::parse(">=" + it->second.original()).value());
}

std::uint32_t Problem::add_fact(Fact fact) {
  facts_.push_back(std::move(fact));
  return static_cast<std::uint32_t>(facts_.size() - 1);
}

// A build with no known architecture list is assumed to run everywhere.
bool Problem::runs_everywhere(const CandidateInfo& candidate) const {
  if (candidate.build == nullptr) return true;
  return std::all_of(request_.system.gpus.begin(), request_.system.gpus.end(),
                     [&](const GpuFact& gpu) {
                       return recipes::has_kernels_for(*candidate.build, gpu.capability);
                     });
}

void Problem::facts_about(PackageId package, std::vector<Incompatibility>& out) {
  const auto& info = packages_[package];
  const auto universe = info.candidates.size();
  auto elsewhere = VersionSet::none(universe);
  for (std::size_t c = 0; c < universe; ++c) {
    if (!info.candidates[c].on_platform) elsewhere.insert(c);
  }
  if (!elsewhere.empty()) {
    const auto id = add_fact({.kind = Fact::Kind::platform, .package = package});
    out.push_back({{Term{package, true, elsewhere}}, {Cause::Kind::fact, id}});
  }
  for (std::size_t u = 0; u < request_.unavailable.size(); ++u) {
    const auto& build = request_.unavailable[u];
    if (build.package != info.name) continue;
    auto ruled_out = VersionSet::none(universe);
    for (std::size_t c = 0; c < universe; ++c) {
      const auto& candidate = info.candidates[c];
      if ((build.build.empty() || candidate.build_id == build.build) &&
          candidate.version.original() == build.version)
        ruled_out.insert(c);
    }
    if (ruled_out.empty()) continue;
    const auto id =
        add_fact({.kind = Fact::Kind::unavailable, .package = package, .unavailable = u});
    out.push_back({{Term{package, true, ruled_out}}, {Cause::Kind::fact, id}});
  }
  for (std::size_t g = 0; g < request_.system.gpus.size(); ++g) {
    auto unsupported = VersionSet::none(universe);
    for (std::size_t c = 0; c < universe; ++c) {
      const auto* build = info.candidates[c].build;
      if (build != nullptr &&
          !recipes::has_kernels_for(*build, request_.system.gpus[g].capability)) {
        unsupported.insert(c);
      }
    }
    if (!unsupported.empty()) {
      const auto id = add_fact({.kind = Fact::Kind::gpu, .package = package, .gpu = g});
      out.push_back({{Term{package, true, unsupported}}, {Cause::Kind::fact, id}});
    }
  }
}

VersionSet Problem::allowed_by(PackageId dependency, const specs::VersionSpec& spec) const {
  const auto& info = packages_[dependency];
  auto allowed = VersionSet::none(info.candidates.size());
  for (std::size_t c = 0; c < info.candidates.size(); ++c) {
    if (spec.contains(info.candidates[c].version)) allowed.insert(c);
  }
  return allowed;
}

void Problem::dependencies_of(PackageId package, Candidate candidate,
                              std::vector<Incompatibility>& out) {
  const auto& info = packages_[package];
  const auto universe = info.candidates.size();
  const auto state = [&](const std::string& dependency_name, const specs::VersionSpec& spec,
                         VersionSet dependers, std::string origin,
                         std::optional<WrittenAt> written_at = std::nullopt) {
    const auto dependency = *find(dependency_name);
    const auto allowed = allowed_by(dependency, spec);
    const auto id =
        add_fact({.kind = Fact::Kind::requirement,
                  .package = package,
                  .dependency = dependency,
                  .spec = spec,
                  .origin = std::move(origin),
                  .written_at = std::move(written_at),
                  .driver_through_compat = info.candidates[candidate].driver_through_compat &&
                                           dependency_name == kDriverPackage});
    Term depender{package, true, std::move(dependers)};
    if (allowed.empty()) {
      out.push_back({{std::move(depender)}, {Cause::Kind::fact, id}});
    } else {
      out.push_back(
          {{std::move(depender), Term{dependency, false, allowed}}, {Cause::Kind::fact, id}});
    }
  };
  if (info.kind == PackageKind::root) {
    for (const auto& requirement : request_.requirements) {
      state(requirement.package, requirement.spec, VersionSet::all(1), requirement.origin,
            requirement.written_at);
    }
    return;
  }
  for (const auto& [dependency_name, spec] : info.candidates[candidate].requirements) {
    const auto written = spec.to_string();
    if (!stated_.emplace(package, dependency_name, written).second) continue;
    // Every candidate with the same requirement shares one incompatibility:
    // "cuda >=12.0,<=12.9.1 requires __driver >=525.60.13".
    auto dependers = VersionSet::none(universe);
    for (std::size_t c = 0; c < universe; ++c) {
      const auto& requirements = info.candidates[c].requirements;
      const auto it = requirements.find(dependency_name);
      if (it != requirements.end() && it->second.to_string() == written) dependers.insert(c);
    }
    state(dependency_name, spec, std::move(dependers), "");
  }
}

int Problem::priority(PackageId package) const {
  const auto& info = packages_[package];
  switch (info.kind) {
    case PackageKind::root:
      return -1;
    case PackageKind::driver:
    case PackageKind::glibc:
      return 0;
    default:
      break;
  }
  if (info.is_framework()) return 1;
  static constexpr std::string_view kOrder[] = {"cuda", "cudnn", "python", "zlib"};
  for (std::size_t i = 0; i < std::size(kOrder); ++i) {
    if (info.name == kOrder[i]) return static_cast<int>(2 + i);
  }
  return 10;
}

bool Problem::driver_runs_natively(const CandidateInfo& cuda) const {
  if (!request_.system.driver) return true;
  if (cuda.build == nullptr) return false;
  const auto it = cuda.build->min_driver.find(request_.platform);
  return it != cuda.build->min_driver.end() && *request_.system.driver >= it->second;
}

bool Problem::driver_runs(const CandidateInfo& cuda) const {
  if (driver_runs_natively(cuda)) return true;
  const auto it = cuda.requirements.find(std::string(kDriverPackage));
  return it != cuda.requirements.end() && it->second.contains(*request_.system.driver);
}

namespace {

// The series a build was tested with for `package` (`tested: {cuda: "12.1"}`
// -> ==12.1.*). A CUDA pin read from a wheel is the runtime component's
// version (cudart 12.1.105), which shares major.minor with its CUDA release.
std::optional<specs::VersionSpec> tested_series(const recipes::Build& build,
                                                const std::string& package) {
  const auto it = build.tested.find(package);
  if (it == build.tested.end()) return std::nullopt;
  auto tested = it->second;
  if (package == "cuda") {
    if (const auto parsed = specs::Version::parse(tested); parsed && parsed->release().size() > 2) {
      tested = fmt::format("{}.{}", parsed->major(), parsed->minor());
    }
  }
  auto series = specs::VersionSpec::parse(tested, specs::SpecSyntax::envkit);
  if (!series) return std::nullopt;
  return *std::move(series);
}

}  // namespace

// A build's CUDA is the one it was tested with where the database has it
// (cu124: 12.4), else the newest its range admits: builds whose ranges all end
// at `<13` still differ by what they were built for.
std::tuple<int, int, long> Problem::build_rank(const CandidateInfo& framework) const {
  constexpr std::tuple<int, int, long> kNoCuda{1, 1, 0};
  const auto cuda_id = find("cuda");
  const auto wanted = framework.requirements.find("cuda");
  if (!cuda_id || wanted == framework.requirements.end()) return kNoCuda;
  const auto series =
      framework.build != nullptr ? tested_series(*framework.build, "cuda") : std::nullopt;
  const auto best_of = [&](bool tested_only) {
    std::optional<std::tuple<int, int, long>> best;
    for (const auto& cuda : packages_[*cuda_id].candidates) {
      if (!cuda.on_platform || !wanted->second.contains(cuda.version) || !runs_everywhere(cuda) ||
          !driver_runs(cuda) || (tested_only && !series->contains(cuda.version))) {
        continue;
      }
      // A CUDA envkit can install first, then one the driver runs natively.
      const std::tuple<int, int, long> rank{
          0, (cuda.installable ? 0 : 2) + (driver_runs_natively(cuda) ? 0 : 1),
          -static_cast<long>(cuda.version_rank)};
      if (!best || rank < *best) best = rank;
    }
    return best;
  };
  auto best = series ? best_of(true) : std::nullopt;
  if (!best) best = best_of(false);
  return best.value_or(kNoCuda);
}

bool Problem::tested_with(PackageId package, const CandidateInfo& candidate,
                          std::span<const Decision> decided, std::string& by) const {
  const auto& name = packages_[package].name;
  for (const auto& decision : decided) {
    const auto& other = packages_[decision.package].candidates[decision.candidate];
    if (other.build == nullptr) continue;
    const auto series = tested_series(*other.build, name);
    if (series && series->contains(candidate.version)) {
      by = fmt::format("{} {}{} was tested with {} {}", packages_[decision.package].name,
                       other.version.original(),
                       other.build_id.empty() ? "" : fmt::format(" ({})", other.build_id), name,
                       other.build->tested.at(name));
      return true;
    }
  }
  return false;
}

std::string Problem::installable_framework(std::span<const Decision> decided) const {
  const auto cuda_id = find("cuda");
  if (!cuda_id) return {};
  const auto& cudas = packages_[*cuda_id].candidates;
  // A CUDA `framework` allows that envkit can install and that runs on the machines.
  const auto installable_cuda = [&](const CandidateInfo& framework) -> const CandidateInfo* {
    const auto wanted = framework.requirements.find("cuda");
    if (wanted == framework.requirements.end()) return nullptr;
    const CandidateInfo* newest = nullptr;
    for (const auto& cuda : cudas) {
      if (cuda.on_platform && cuda.installable && wanted->second.contains(cuda.version) &&
          runs_everywhere(cuda) && driver_runs(cuda)) {
        newest = &cuda;
      }
    }
    return newest;
  };
  for (const auto& decision : decided) {
    const auto& info = packages_[decision.package];
    if (!info.is_framework()) continue;
    const auto& chosen = info.candidates[decision.candidate];
    // Candidates go oldest first: the first newer release that works is the nearest.
    for (const auto& candidate : info.candidates) {
      if (!candidate.on_platform || candidate.build == nullptr ||
          !(chosen.version < candidate.version) || !runs_everywhere(candidate)) {
        continue;
      }
      if (const auto* cuda = installable_cuda(candidate)) {
        return fmt::format(
            "{} {}{} allows cuda {}, which envkit can install here", info.name,
            candidate.version.original(),
            candidate.build_id.empty() ? "" : fmt::format(" ({})", candidate.build_id),
            cuda->version.original());
      }
    }
  }
  return {};
}

Candidate Problem::choose(PackageId package, const VersionSet& allowed,
                          std::span<const Decision> decided) {
  const auto& info = packages_[package];
  using Key = std::tuple<int, int, int, int, long, int, long, std::size_t>;
  std::optional<Key> best_key;
  Candidate best = 0;
  std::string best_reason;
  // A tested candidate passed over because envkit cannot install it, for the reason given.
  std::string tested_not_installable;
  bool best_tested = false;
  for (const auto c : allowed.members()) {
    const auto& candidate = info.candidates[c];
    std::string tested_by;
    const bool tested = tested_with(package, candidate, decided, tested_by);
    if (tested && !candidate.installable && tested_not_installable.empty()) {
      tested_not_installable = fmt::format(
          "{}, but {} {} has only a runfile installer envkit cannot unpack here "
          "(its recipe gives no layout era)",
          tested_by, info.name, candidate.version.original());
    }
    const bool native = info.name != "cuda" || driver_runs_natively(candidate);
    const auto [no_cuda, compat_only, newest_cuda] =
        info.is_framework() ? build_rank(candidate) : std::tuple<int, int, long>{0, 0, 0};
    // What envkit can install comes first (docs/solver.md): a lock of a CUDA whose only
    // artifact is a runfile without a layout era fails at install while an allowed CUDA
    // with archives, wheels or an unpackable runfile works.
    const Key key{candidate.installable ? 0 : 1,
                  tested ? 0 : 1,
                  native ? 0 : 1,
                  candidate.version.is_prerelease() ? 1 : 0,
                  -static_cast<long>(candidate.version_rank),
                  no_cuda + compat_only,
                  newest_cuda,
                  c};
    if (best_key && !(key < *best_key)) continue;
    best_key = key;
    best = static_cast<Candidate>(c);
    best_tested = tested;
    if (tested) {
      best_reason = fmt::format("{}: the tested version is preferred", tested_by);
    } else if (info.name == "cuda" && request_.system.driver) {
      best_reason = native ? "the newest allowed CUDA that the driver runs natively"
                           : "the newest allowed CUDA; the driver runs it only through CUDA "
                             "minor-version compatibility (no PTX JIT of newer code)";
    } else {
      best_reason = "the newest allowed version";
    }
    if (info.is_framework() && !candidate.build_id.empty()) {
      best_reason +=
          compat_only == 0 && no_cuda == 0
              ? fmt::format("; build {} uses the newest CUDA {}", candidate.build_id,
                            request_.system.driver ? "the driver runs natively" : "it supports")
              : fmt::format("; build {}", candidate.build_id);
    }
  }
  if (!best_tested && !tested_not_installable.empty()) {
    best_reason = fmt::format("{}; {}", tested_not_installable, best_reason);
  }
  // Nothing the framework allows can be installed: say what would work within a framework
  // release, not a constraint this framework forbids.
  if (best_key && std::get<0>(*best_key) != 0 && info.name == "cuda") {
    const auto& chosen = info.candidates[best];
    best_reason +=
        fmt::format("; envkit cannot install cuda {} on {} (only a runfile it cannot unpack)",
                    chosen.version.original(), specs::to_string(request_.platform));
    if (const auto newer = installable_framework(decided); !newer.empty()) {
      best_reason += fmt::format(": {}", newer);
    }
  }
  preferences_[package] = std::move(best_reason);
  return best;
}

const std::string& Problem::preference(PackageId package) const {
  static const std::string kNone;
  const auto it = preferences_.find(package);
  return it == preferences_.end() ? kNone : it->second;
}

}  // namespace envkit::solve
