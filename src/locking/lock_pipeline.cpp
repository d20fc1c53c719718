#include "envkit/locking/lock_pipeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <memory>

#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/locking/kernel_check.hpp"
#include "envkit/locking/live_facts.hpp"
#include "envkit/locking/obtainable.hpp"
#include "envkit/locking/python_closure.hpp"
#include "envkit/net/reachability.hpp"
#include "envkit/python/wheel_filename.hpp"
#include "envkit/sys/fs.hpp"

namespace envkit::locking {

namespace {

// The solver's requirements, in this order: the framework, envkit.yaml's `requires:`, the rest
// (a hint's HintChange::index counts in it).
std::vector<solve::Requirement> requirements_of(const LockInputs& inputs) {
  std::vector<solve::Requirement> requirements;
  const auto& manifest = inputs.manifest;
  if (manifest.framework) {
    requirements.push_back({manifest.framework->name, manifest.framework->spec, "framework"});
  }
  for (const auto& [package, spec] : manifest.requires_) {
    requirements.push_back({package, spec, "requires"});
  }
  for (const auto& requirement : inputs.extra_requirements)
    requirements.push_back(requirement);
  return requirements;
}

}  // namespace

Result<Solved> solve_platforms(const recipes::Database& database, const LockInputs& inputs) {
  solve::Request request{.requirements = requirements_of(inputs),
                         .external = inputs.external,
                         .system = inputs.facts,
                         .unavailable = inputs.unavailable};
  Solved solved;
  for (const auto platform : inputs.platforms) {
    request.platform = platform;
    auto outcome = solve::solve(database, request);
    if (!outcome) return outcome.error();
    if (auto* unsolvable = std::get_if<solve::Unsolvable>(&*outcome)) {
      solved.failure.emplace(platform, std::move(*unsolvable));
      return solved;
    }
    solved.solutions.emplace(platform, std::get<solve::Solution>(std::move(*outcome)));
  }
  return solved;
}

namespace {

// The chosen versions with their artifacts, read from the per-version files;
// the files are parsed in parallel (each is independent once the facts are cached).
using VersionFiles = std::map<std::pair<std::string, std::string>, recipes::Recipe>;

Result<VersionFiles> read_version_files(const recipes::Database& database, const Solved& solved,
                                        const LockInputs& inputs) {
  std::vector<std::pair<std::string, specs::Version>> wanted;
  for (const auto& [platform, solution] : solved.solutions) {
    for (const auto& choice : solution.packages) {
      if (inputs.manifest.external.contains(choice.name)) continue;
      const auto known = std::find_if(wanted.begin(), wanted.end(), [&](const auto& w) {
        return w.first == choice.name && w.second.original() == choice.version.original();
      });
      if (known == wanted.end()) wanted.emplace_back(choice.name, choice.version);
    }
  }
  for (const auto& [name, version] : wanted) {
    if (auto facts = database.facts(name); !facts) return facts.error();
  }
  std::vector<std::future<Result<recipes::Recipe>>> reads;
  for (const auto& [name, version] : wanted) {
    reads.push_back(std::async(std::launch::async, [&database, &name, &version] {
      return database.load_version(name, version);
    }));
  }
  VersionFiles files;
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    auto recipe = reads[i].get();
    if (!recipe) return recipe.error();
    files.emplace(std::pair(wanted[i].first, wanted[i].second.original()), *std::move(recipe));
  }
  return files;
}

// The artifacts of one chosen build on one platform. For CUDA only the
// components a framework needs (the recipe's default components): an archive
// per component, or a runfile (one file holding them all) whose `components`
// are narrowed to those, which is what install places. Its patches come along.
std::vector<recipes::Artifact> artifacts_of(const recipes::Recipe& recipe,
                                            const solve::Choice& choice, specs::Platform platform) {
  std::vector<recipes::Artifact> out;
  const auto* version = recipe.find(choice.version);
  if (version == nullptr) return out;
  const auto& wanted = recipe.default_components;
  const auto is_wanted = [&](const std::string& component) {
    return wanted.empty() || std::find(wanted.begin(), wanted.end(), component) != wanted.end();
  };
  for (const auto& build : version->builds) {
    if (build.id != choice.build) continue;
    for (const auto& artifact : build.artifacts) {
      if (artifact.platform != platform) continue;
      if (artifact.kind == recipes::ArtifactKind::runfile) {
        auto runfile = artifact;
        std::erase_if(runfile.components, [&](const auto& c) { return !is_wanted(c); });
        out.push_back(std::move(runfile));
      } else if (is_wanted(artifact.component)) {
        out.push_back(artifact);
      }
    }
  }
  return out;
}

// package -> the versions a lock holds of it (for recipe hashes).
std::map<std::string, std::vector<specs::Version>> locked_versions(const lock::Lockfile& lockfile) {
  std::map<std::string, std::vector<specs::Version>> versions;
  for (const auto& platform : lockfile.platforms) {
    for (const auto& package : platform.packages) {
      auto& list = versions[package.name];
      if (package.external) continue;
      if (std::find(list.begin(), list.end(), package.version) == list.end()) {
        list.push_back(package.version);
      }
    }
  }
  for (auto& [name, list] : versions)
    std::sort(list.begin(), list.end());
  return versions;
}

// The build a solution chose, from the version files.
const recipes::Build* chosen_build(const VersionFiles& files, const solve::Choice& choice) {
  const auto file = files.find({choice.name, choice.version.original()});
  if (file == files.end()) return nullptr;
  const auto* version = file->second.find(choice.version);
  if (version == nullptr) return nullptr;
  for (const auto& build : version->builds) {
    if (build.id == choice.build) return &build;
  }
  return nullptr;
}

// The driver the locked CUDA needs on `platform`: the family minimum where
// minor-version compatibility applies, else the release's own.
std::optional<specs::Version> driver_needed(const recipes::Build& cuda, specs::Platform platform) {
  if (const auto it = cuda.min_driver_compat.find(platform); it != cuda.min_driver_compat.end())
    return it->second;
  if (const auto it = cuda.min_driver.find(platform); it != cuda.min_driver.end())
    return it->second;
  return std::nullopt;
}

// What a lock solved with one machine's facts needs of every machine, not the
// writer's driver or GPUs: the driver its CUDA runs on (`>=525.60.13`) and
// the GPUs every chosen build with a known architecture list has code for.
// The glibc its wheels need is added once the closure is known.
lock::SystemAssumptions machine_requirements(const VersionFiles& files, const Solved& solved,
                                             specs::FactSource source) {
  lock::SystemAssumptions needed{.source = source};
  std::optional<specs::Version> driver;
  std::optional<specs::Version> glibc;
  std::vector<std::vector<specs::ComputeCapability>> archs;
  for (const auto& [platform, solution] : solved.solutions) {
    for (const auto& choice : solution.packages) {
      const auto* build = choice.external ? nullptr : chosen_build(files, choice);
      if (build == nullptr) continue;
      archs.push_back(build->cuda_arch);
      if (const auto it = build->min_glibc.find(platform);
          it != build->min_glibc.end() && (!glibc || it->second > *glibc)) {
        glibc = it->second;
      }
      if (choice.name != "cuda") continue;
      const auto minimum = driver_needed(*build, platform);
      if (minimum && (!driver || *minimum > *driver)) driver = minimum;
    }
  }
  if (driver) needed.driver = ">=" + driver->original();
  if (glibc) needed.glibc = ">=" + glibc->original();
  if (auto common = specs::common_archs(archs)) needed.cuda_arch = *std::move(common);
  return needed;
}

// The glibc the closure's manylinux wheels need (`>=2.28`), for a lock that
// states what it needs of a machine; the framework builds' own minimum stays when higher.
void add_glibc_needed(lock::Lockfile& lockfile) {
  if (lockfile.system.source == specs::FactSource::manifest) return;
  std::optional<unsigned> highest;
  // What machine_requirements() found the framework builds need.
  if (const auto builds = specs::VersionSpec::parse(lockfile.system.glibc.value_or(""))) {
    if (const auto lowest = builds->lowest_admitted(); lowest && lowest->release().size() > 1) {
      highest = static_cast<unsigned>(lowest->minor());
    }
  }
  for (const auto& platform : lockfile.platforms) {
    if (!platform.python || platform.platform == specs::Platform::windows_x86_64) continue;
    const auto arch = platform.platform == specs::Platform::linux_aarch64 ? "aarch64" : "x86_64";
    for (const auto& wheel : platform.python->packages) {
      auto filename = python::parse_wheel_filename(url::file_name(wheel.url));
      if (!filename) continue;  // an sdist
      const auto minor = python::wheel_glibc_minor(*filename, arch);
      if (minor && (!highest || *minor > *highest)) highest = minor;
    }
  }
  if (highest) lockfile.system.glibc = fmt::format(">=2.{}", *highest);
}

// Where the facts of each locked package came from when an index's live overlay gave
// them: the layer's source ("https://pypi.org/simple (read 2026-11-29)").
std::map<std::string, std::string> index_facts(const recipes::Database& database,
                                               const lock::Lockfile& lockfile) {
  std::map<std::string, std::string> sources;
  for (const auto& [name, versions] : locked_versions(lockfile)) {
    for (const auto& version : versions) {
      if (const auto* layer = database.layer_of(name, version)) sources[name] = layer->source;
    }
  }
  return sources;
}

// The day a fact was read changes with every read of the index, the fact itself rarely:
// where the previous lock's facts of a package are the same (its recipe hash), its source
// line stays, so that a lock is rewritten only when something in it changed.
void keep_fact_dates(lock::Lockfile& lockfile, const lock::Lockfile* previous) {
  if (previous == nullptr) return;
  for (auto& [name, source] : lockfile.index_facts) {
    const auto before = previous->index_facts.find(name);
    const auto hash = previous->recipes.find(name);
    if (before != previous->index_facts.end() && hash != previous->recipes.end() &&
        lockfile.recipes.contains(name) && lockfile.recipes.at(name) == hash->second)
      source = before->second;
  }
}

}  // namespace

Result<std::map<std::string, std::string>> recipe_hashes(const recipes::Database& database,
                                                         const lock::Lockfile& lockfile) {
  std::map<std::string, std::string> hashes;
  for (const auto& [name, versions] : locked_versions(lockfile)) {
    if (!database.contains(name)) continue;
    auto digest = database.digest(name, versions);
    if (!digest) return digest.error();
    hashes.emplace(name, *std::move(digest));
  }
  return hashes;
}

Result<lock::Lockfile> make_lockfile(const recipes::Database& database, const LockInputs& inputs,
                                     const Solved& solved) {
  auto files = read_version_files(database, solved, inputs);
  if (!files) return files.error();
  lock::Lockfile lockfile;
  lockfile.manifest_hash = inputs.manifest_hash;
  lockfile.system = inputs.assumptions.source == specs::FactSource::manifest
                        ? inputs.assumptions
                        : machine_requirements(*files, solved, inputs.assumptions.source);
  for (const auto& [platform, solution] : solved.solutions) {
    lock::PlatformLock locked{.platform = platform};
    for (const auto& choice : solution.packages) {
      lock::LockedPackage package{
          .name = choice.name, .version = choice.version, .build = choice.build};
      for (const auto& [dependency, spec] : choice.requires_) {
        package.requires_.emplace(dependency, spec.to_string());
      }
      if (const auto external = inputs.manifest.external.find(choice.name);
          external != inputs.manifest.external.end()) {
        package.external = std::visit(
            [](const auto& source) -> std::string {
              using T = std::decay_t<decltype(source)>;
              if constexpr (std::is_same_v<T, specs::Version>) return source.original();
              if constexpr (std::is_same_v<T, manifest::ExternalSystem>) return "system";
              if constexpr (std::is_same_v<T, manifest::ExternalPath>) return source.path.string();
            },
            external->second);
      } else {
        package.artifacts =
            artifacts_of(files->at({choice.name, choice.version.original()}), choice, platform);
      }
      locked.packages.push_back(std::move(package));
    }
    lockfile.platforms.push_back(std::move(locked));
  }
  auto hashes = recipe_hashes(database, lockfile);
  if (!hashes) return hashes.error();
  lockfile.recipes = *std::move(hashes);
  lockfile.index_facts = index_facts(database, lockfile);
  lock::canonicalize(lockfile);
  return lockfile;
}

namespace {

Result<LockAttempt> solve_and_make(const recipes::Database& database, const LockInputs& inputs) {
  auto solved = solve_platforms(database, inputs);
  if (!solved) return std::move(solved).error();
  if (solved->failure) return LockAttempt{.failure = std::move(solved->failure)};
  auto lockfile = make_lockfile(database, inputs, *solved);
  if (!lockfile) return std::move(lockfile).error();
  return LockAttempt{.lockfile = *std::move(lockfile), .solved = *std::move(solved)};
}

// Made on the first resolution: a lock whose closures are all lent from the
// previous lock runs (and downloads) no resolver.
ClosureResolver made_when_needed(const ResolverFactory& factory) {
  auto made = std::make_shared<std::optional<ClosureResolver>>();
  return [factory, made](const python::ResolveRequest& request,
                         const python::ResolveTarget& target) -> Result<python::Closure> {
    if (!*made) {
      auto resolver = factory();
      if (!resolver) return std::move(resolver).error();
      *made = *std::move(resolver);
    }
    return (**made)(request, target);
  };
}

// A project with Python requirements and no Python among the solver's
// requirements gets one: the newest the database allows.
bool needs_python_requirement(const LockInputs& inputs) {
  const auto& manifest = inputs.manifest;
  return !manifest.requires_.contains("python") && !manifest.external.contains("python");
}

void add_findings(LockInputs& effective, const ClosureFindings& findings,
                  std::vector<std::string>& notes) {
  for (const auto& constraint : findings.constraints)
    effective.extra_requirements.push_back(constraint);
  for (const auto& build : findings.unavailable)
    effective.unavailable.push_back(build);
  notes.insert(notes.end(), findings.notes.begin(), findings.notes.end());
}

// Each resolution uv runs for the closure goes through the requirement files' index
// options this machine reaches (RequirementIndexes::for_uv).
ClosureResolver through_indexes(ClosureResolver resolver,
                                std::shared_ptr<RequirementIndexes> indexes) {
  if (!indexes) return resolver;
  return [resolver = std::move(resolver), indexes = std::move(indexes)](
             const python::ResolveRequest& request,
             const python::ResolveTarget& target) -> Result<python::Closure> {
    auto asked = indexes->for_uv(request);
    if (!asked) return std::move(asked).error();
    return resolver(*asked, target);
  };
}

// "requirements.txt:1 `--find-links URL`"
std::string index_line_text(const IndexLine& line) {
  return fmt::format("{} `{} {}`", line.location(), line.option, line.url);
}

// As pip does ("Could not fetch URL ... skipping"): an index option of a requirements file
// this machine does not reach, left out of a closure that resolves without it.
std::vector<std::string> unreachable_index_warnings(const PythonRequest& python) {
  std::vector<std::string> warnings;
  if (!python.indexes) return warnings;
  for (const auto& index : python.indexes->unreachable()) {
    warnings.push_back(
        fmt::format("{} is not reachable from this machine ({}): left out; the Python requirements "
                    "resolve without it",
                    index_line_text(index.line), index.reason));
  }
  return warnings;
}

// "requirements.txt:3 `torchdata==0.9.0`", or "`torch==2.15.0` (envkit's pin of the framework)".
std::string culprit_text(const Culprit& culprit) {
  if (culprit.location == "the resolved Python closure")
    return fmt::format("`{}` (envkit's pin of the framework)", culprit.text);
  return fmt::format("{} `{}`", culprit.location, culprit.text);
}

std::string culprits_text(const std::vector<Culprit>& culprits) {
  if (culprits.empty()) return "the Python requirements";
  std::vector<std::string> parts;
  for (const auto& culprit : culprits)
    parts.push_back(culprit_text(culprit));
  if (parts.size() == 1) return parts.front();
  const auto last = parts.back();
  parts.pop_back();
  return fmt::format("{} and {}", text::join(parts, ", "), last);
}

// A closure that does not resolve while an index option of a requirements file was left
// out: the error names the URL, where it is written, and what uv found no solution for.
Error without_unreachable_indexes(Error error, const PythonRequest& python,
                                  const std::vector<Culprit>& culprits) {
  if (!python.indexes || python.indexes->unreachable().empty()) return error;
  const auto& unreachable = python.indexes->unreachable();
  std::vector<std::string> urls;
  for (const auto& index : unreachable)
    urls.push_back(index.line.url);
  Error out = Error::failed(
      fmt::format("the Python requirements do not resolve without {}, which this machine cannot "
                  "reach",
                  text::join(urls, ", ")));
  for (const auto& index : unreachable)
    out.because(fmt::format("{}: {}", index_line_text(index.line), index.reason));
  out.because(fmt::format("without it, uv finds no solution for {}", culprits_text(culprits)));
  out.because(error.message());
  for (const auto& cause : error.causes())
    out.because(cause);
  for (const auto& index : unreachable) {
    const bool links = index.line.option == "--find-links";
    out.hint(fmt::format(
        "{} needs {}: make it reachable from this machine (a proxy is taken from https_proxy), "
        "or point `{}` in {} at {}",
        culprits_text(culprits), net::reachability_host(index.line.url), index.line.option,
        index.line.location(),
        links ? "a mirror or a folder of the files it serves" : "a mirror of that index"));
  }
  for (const auto& hint : error.hints())
    out.hint(hint);
  return out;
}

// "3.14"
std::string walked_minor(const specs::Version& version) {
  return fmt::format("{}.{}", version.major(), version.minor());
}

bool says(const Error& error, std::string_view words) {
  const auto has = [&](const std::string& line) { return line.find(words) != std::string::npos; };
  return std::any_of(error.causes().begin(), error.causes().end(), has) ||
         std::any_of(error.hints().begin(), error.hints().end(), has);
}

// uv's first reason ("Because jax==0.4.26 depends on numpy>=1.26.0 and ..."), without "uv: ".
std::string uv_reason(const Error& error) {
  for (const auto& cause : error.causes()) {
    if (cause.starts_with("uv: Because")) return cause.substr(4);
  }
  for (const auto& cause : error.causes()) {
    if (cause.starts_with("uv: ")) return cause.substr(4);
  }
  return error.message();
}

// uv's refusals that hold for every Python: a package no index has, a version that does not
// exist. No older Python is tried for them.
bool independent_of_python(const Error& error) {
  return says(error, "was not found in the package registry") ||
         says(error, "not found in the provided package locations") ||
         says(error, "there is no version of");
}

// Why a closure did not resolve for one Python, as the user is told it.
enum class PythonFault : std::uint8_t { no_wheel, requires_python, conflict };

PythonFault fault_of(const Error& error) {
  if (says(error, "matching Python ABI tag") || says(error, "matching Python implementation tag"))
    return PythonFault::no_wheel;
  if (says(error, "requested Python version")) return PythonFault::requires_python;
  return PythonFault::conflict;
}

// The closure's Python chosen with it (docs/python.md, "Which Python"): a closure uv cannot
// resolve for the Python the solver chose, whose framework release is served, is tried with
// an older one (the solver's next choice under `python <3.X`); the minors that fail are
// ruled out, naming the requirements uv names, and the lock gets the newest Python for which
// the framework and the whole closure resolve. A refusal that holds for every Python (a
// package no index has), a machine's own Python (`external:`), or none left to try: the
// error names the requirements and the Pythons tried.
class PythonWalk {
 public:
  PythonWalk(const LockInputs& inputs, const PythonRequest& python)
      : inputs_(inputs), python_(python) {}

  // Rules out `failure`'s minor in `effective`; the error when no other Python is tried.
  std::optional<Error> rule_out(const ClosureFailure& failure, LockInputs& effective) {
    auto& tried = trials_[failure.platform];
    tried.push_back({.python = failure.python,
                     .error = failure.error,
                     .culprits = culprits_of(failure.error, python_, failure.request)});
    const auto& trial = tried.back();
    if (inputs_.manifest.external.contains("python")) {
      // A Python envkit took from this machine because it can download none
      // (obtainable.hpp): the machine's next older allowed minor, unless no Python would do.
      if (!independent_of_python(failure.error) && tried.size() < kMaxPythons &&
          take_older_machine_python(effective, failure.python))
        return std::nullopt;
      return without_unreachable_indexes(failure.error, python_, trial.culprits);
    }
    if (independent_of_python(failure.error)) {
      if (python_.indexes && !python_.indexes->unreachable().empty())
        return without_unreachable_indexes(failure.error, python_, trial.culprits);
      Error error = failure.error;
      return error.because(fmt::format("uv finds no solution for {}, whatever the Python",
                                       culprits_text(trial.culprits)));
    }
    if (tried.size() >= kMaxPythons) {
      return none_resolves(failure.platform,
                           fmt::format("envkit tries at most {} Pythons", kMaxPythons));
    }
    // One requirement per requirement uv names, each `python <3.X` on this platform: the
    // solver's next choice is the newest older Python it allows.
    auto& requirements = effective.extra_requirements;
    std::erase_if(requirements, [&](const solve::Requirement& r) {
      return r.package == "python" && r.origin == kClosureOrigin &&
             r.platforms == std::vector{failure.platform};
    });
    auto below = specs::VersionSpec::parse("<" + walked_minor(failure.python));
    if (!below) return below.error();
    std::vector<Culprit> named = trial.culprits;
    if (named.empty())
      named.push_back(
          {.location = "the resolved Python closure", .text = "the Python requirements"});
    for (const auto& culprit : named) {
      requirements.push_back({.package = "python",
                              .spec = *below,
                              .origin = std::string(kClosureOrigin),
                              .written_at = solve::WrittenAt{culprit.location, culprit.text},
                              .platforms = {failure.platform}});
    }
    return std::nullopt;
  }

  // Whether Pythons were ruled out on `platform`.
  [[nodiscard]] bool walked(specs::Platform platform) const { return trials_.contains(platform); }

  // The solve failed once Pythons were ruled out on `platform`: no older Python is allowed.
  [[nodiscard]] Error no_older_python(specs::Platform platform,
                                      const solve::Unsolvable& unsolvable) const {
    const auto& oldest = trials_.at(platform).back().python;
    std::string why = fmt::format("no Python older than {} is allowed on {}", walked_minor(oldest),
                                  specs::to_string(platform));
    if (!unsolvable.explanation.empty()) why += ": " + unsolvable.explanation.back();
    return none_resolves(platform, why);
  }

  // A lock that resolved after ruling Pythons out says so: a note for `envkit lock`, and
  // a reason of the Python's choice for `envkit why python`.
  void explain(LockAttempt& attempt) const {
    for (const auto& [platform, tried] : trials_) {
      const auto runs = ruled_out(tried);
      std::vector<std::string> lines;
      for (const auto& [minors, reason] : runs)
        lines.push_back(fmt::format("python {} ruled out: {}", minors, reason));
      std::string chosen;
      if (attempt.solved) {
        auto& solutions = attempt.solved->solutions;
        if (const auto it = solutions.find(platform); it != solutions.end()) {
          auto& packages = it->second.packages;
          const auto python =
              std::find_if(packages.begin(), packages.end(),
                           [](const solve::Choice& c) { return c.name == "python"; });
          if (python != packages.end()) {
            chosen = python->version.original();
            auto& because = python->because;
            auto at = std::find_if(because.begin(), because.end(), [](const std::string& line) {
              return line.starts_with("chosen:");
            });
            because.insert(at, lines.begin(), lines.end());
          }
        }
      }
      for (const auto& [minors, reason] : runs) {
        attempt.notes.push_back(fmt::format(
            "python {} ruled out on {}: {}{}", minors, specs::to_string(platform), reason,
            chosen.empty() ? std::string() : fmt::format("; the lock takes python {}", chosen)));
      }
    }
  }

 private:
  struct Trial {
    specs::Version python;
    Error error = Error::failed("");
    std::vector<Culprit> culprits;
  };

  // ("3.14, 3.13", "requirements.txt:3 `torchdata==0.9.0` has no wheel for CPython 3.14 /
  // 3.13"), one per run of Pythons ruled out for the same reason.
  static std::vector<std::pair<std::string, std::string>> ruled_out(
      const std::vector<Trial>& tried) {
    std::vector<std::pair<std::string, std::string>> runs;
    for (std::size_t i = 0; i < tried.size();) {
      const auto fault = fault_of(tried[i].error);
      std::size_t j = i + 1;
      while (j < tried.size() && tried[j].culprits == tried[i].culprits &&
             fault_of(tried[j].error) == fault)
        ++j;
      std::vector<std::string> minors;
      for (std::size_t k = i; k < j; ++k)
        minors.push_back(walked_minor(tried[k].python));
      const auto& culprits = tried[i].culprits;
      const bool one = culprits.size() <= 1;
      const auto pythons = text::join(minors, " / ");
      std::string reason;
      switch (fault) {
        case PythonFault::no_wheel:
          reason = fmt::format("{} no wheel for CPython {}", one ? "has" : "have", pythons);
          break;
        case PythonFault::requires_python:
          reason = fmt::format("{} not support CPython {} (Requires-Python)", one ? "does" : "do",
                               pythons);
          break;
        case PythonFault::conflict:
          reason = fmt::format("{} for CPython {} (uv: {})",
                               one ? "does not resolve" : "do not resolve together", pythons,
                               uv_reason(tried[i].error));
          break;
      }
      runs.emplace_back(text::join(minors, ", "),
                        fmt::format("{} {}", culprits_text(culprits), reason));
      i = j;
    }
    return runs;
  }

  // No Python envkit tried resolves the closure on `platform`; `why` it stopped.
  [[nodiscard]] Error none_resolves(specs::Platform platform, const std::string& why) const {
    const auto& tried = trials_.at(platform);
    const auto& newest = tried.front();
    std::vector<std::string> pythons;
    for (const auto& trial : tried)
      pythons.push_back(trial.python.original());
    Error error = Error::failed(fmt::format(
        "the Python requirements resolve for none of the Pythons envkit tried on {}: CPython {}",
        specs::to_string(platform), text::join(pythons, ", ")));
    std::vector<Culprit> named;
    for (const auto& trial : tried) {
      for (const auto& culprit : trial.culprits) {
        if (std::find(named.begin(), named.end(), culprit) == named.end()) named.push_back(culprit);
      }
    }
    error.because(fmt::format("uv finds no solution for {}", culprits_text(named)));
    error.because(why);
    for (const auto& cause : newest.error.causes())
      error.because(cause);
    for (std::size_t i = 1; i < tried.size(); ++i) {
      error.because(fmt::format("for CPython {}: uv: {}", tried[i].python.original(),
                                uv_reason(tried[i].error)));
    }
    for (const auto& hint : newest.error.hints())
      error.hint(hint);
    return without_unreachable_indexes(std::move(error), python_, named);
  }

  // At most this many Pythons per platform: each costs a resolution (seconds).
  static constexpr std::size_t kMaxPythons = 6;
  // The solver's requirements a closure failure adds: what the resolved wheels say, which
  // no hint proposes to drop (solve.hpp: "wheels").
  static constexpr std::string_view kClosureOrigin = "wheels";

  const LockInputs& inputs_;
  const PythonRequest& python_;
  std::map<specs::Platform, std::vector<Trial>> trials_;
};

}  // namespace

namespace {

Result<LockAttempt> solve_lock_once(const recipes::Database& database, const LockInputs& inputs,
                                    const std::optional<PythonRequest>& python,
                                    const lock::Lockfile* previous, const ResolverFactory& factory);

// The inputs a user has after following `change`: envkit.yaml's framework or `requires:`
// edited, or a newer driver; nullopt for a change envkit.yaml cannot make (a requirement
// file's line, a pin of the framework's wheels).
std::optional<LockInputs> followed(const LockInputs& inputs, const solve::Request& asked,
                                   const solve::HintChange& change) {
  using Kind = solve::HintChange::Kind;
  LockInputs after = inputs;
  if (change.kind == Kind::driver && change.driver) {
    after.facts.driver = change.driver;
    after.facts.driver_written = change.driver->original();
    return after;
  }
  if (change.kind != Kind::requirement || change.index >= asked.requirements.size())
    return std::nullopt;
  const auto& requirement = asked.requirements[change.index];
  if (requirement.origin == "framework" && change.spec && after.manifest.framework) {
    after.manifest.framework->spec = *change.spec;
  } else if (requirement.origin == "requires") {
    if (change.spec) {
      after.manifest.requires_.insert_or_assign(requirement.package, *change.spec);
    } else {
      after.manifest.requires_.erase(requirement.package);
    }
  } else {
    return std::nullopt;
  }
  return after;
}

std::string version_in(const lock::Lockfile& lockfile, specs::Platform platform,
                       std::string_view name) {
  for (const auto& locked : lockfile.platforms) {
    if (locked.platform != platform) continue;
    for (const auto& package : locked.packages) {
      if (package.name == name) return package.version.original();
    }
  }
  return {};
}

// Follows each hint of a failed lock as the user would, through the whole pipeline (the
// Python closure included): a hint that locks stays, naming what it locks to; one that does
// not is dropped. A hint is a promise.
void keep_hints_that_hold(const recipes::Database& database, const LockInputs& inputs,
                          const std::optional<PythonRequest>& python,
                          const lock::Lockfile* previous, const ResolverFactory& factory,
                          std::pair<specs::Platform, solve::Unsolvable>& failure) {
  auto& unsolvable = failure.second;
  solve::Request asked{.requirements = requirements_of(inputs)};
  std::vector<std::string> kept;
  std::vector<solve::HintChange> changes;
  for (std::size_t i = 0; i < unsolvable.hints.size(); ++i) {
    const auto& change =
        i < unsolvable.changes.size() ? unsolvable.changes[i] : solve::HintChange{};
    auto hint = unsolvable.hints[i];
    if (const auto after = followed(inputs, asked, change)) {
      // A hint whose lock fails, for any reason (the closure cannot be resolved: the
      // project's own requirement files pin the framework too), is not given.
      // A hint edits envkit.yaml's framework, `requires:` or the driver: the Python request
      // (requirement files, indexes) stays the same.
      auto attempt = solve_lock_once(database, *after, python, previous, factory);
      if (!attempt || !attempt->lockfile) continue;
      const auto& requirement = change.kind == solve::HintChange::Kind::requirement
                                    ? asked.requirements[change.index]
                                    : solve::Requirement{};
      // The closure may have settled on another version than the solver alone did.
      const auto locked = version_in(*attempt->lockfile, failure.first, requirement.package);
      if (requirement.origin == "framework" && !locked.empty()) {
        hint =
            fmt::format("use {} {}, the {} version that can be satisfied here", requirement.package,
                        locked, change.spec && change.spec->empty() ? "newest" : "nearest");
      } else if (requirement.origin == "requires" && change.spec && !locked.empty()) {
        hint = fmt::format("without `{}: \"{}\"` under `requires:`, envkit would choose {} {}",
                           requirement.package,
                           requirement.spec.original().empty() ? requirement.spec.to_string()
                                                               : requirement.spec.original(),
                           requirement.package, locked);
      }
    }
    if (std::find(kept.begin(), kept.end(), hint) != kept.end()) continue;
    kept.push_back(std::move(hint));
    changes.push_back(change);
  }
  unsolvable.hints = std::move(kept);
  unsolvable.changes = std::move(changes);
}

// The overlay's notes on what it inferred of the versions and builds the lock holds
// ("cuda 13.2.2: ...", "cudnn 9.26.0.51 (cuda13): ...").
std::vector<std::string> inferred_facts(const LockInputs& inputs, const lock::Lockfile& lockfile) {
  std::vector<std::string> notes;
  if (!inputs.live_index) return notes;
  for (const auto& note : inputs.live_index->notes) {
    const bool locked = std::any_of(
        lockfile.platforms.begin(), lockfile.platforms.end(), [&](const lock::PlatformLock& p) {
          return std::any_of(p.packages.begin(), p.packages.end(), [&](const auto& package) {
            const auto named = fmt::format("{} {}", package.name, package.version.original());
            return note.starts_with(named + ":") ||
                   (!package.build.empty() &&
                    note.starts_with(fmt::format("{} ({}):", named, package.build)));
          });
        });
    if (locked) notes.push_back(note);
  }
  return notes;
}

}  // namespace

Result<LockAttempt> solve_lock(const recipes::Database& database, const LockInputs& inputs,
                               const lock::Lockfile* previous, const ResolverFactory& factory) {
  auto python = python_request(inputs);
  if (!python) return std::move(python).error();
  auto attempt = solve_lock_once(database, inputs, *python, previous, factory);
  if (attempt && attempt->lockfile) {
    auto inferred = inferred_facts(inputs, *attempt->lockfile);
    attempt->notes.insert(attempt->notes.begin(), inferred.begin(), inferred.end());
    if (*python) {
      for (auto& warning : unreachable_index_warnings(**python))
        attempt->warnings.push_back(std::move(warning));
    }
  }
  if (!attempt || !attempt->failure) return attempt;
  // Without a closure the solver's own check of each hint is the whole story.
  if (!*python) return attempt;
  keep_hints_that_hold(database, inputs, *python, previous, factory, *attempt->failure);
  return attempt;
}

namespace {

Result<LockAttempt> solve_lock_once(const recipes::Database& database, const LockInputs& inputs,
                                    const std::optional<PythonRequest>& python,
                                    const lock::Lockfile* previous,
                                    const ResolverFactory& factory) {
  LockInputs effective = inputs;
  auto unavailable = unavailable_builds(database, inputs);
  if (!unavailable) return std::move(unavailable).error();
  effective.unavailable.insert(effective.unavailable.end(), unavailable->begin(),
                               unavailable->end());
  if (inputs.live_index) {
    auto not_served = releases_not_served(database, inputs, *inputs.live_index);
    if (!not_served) return std::move(not_served).error();
    effective.unavailable.insert(effective.unavailable.end(), not_served->begin(),
                                 not_served->end());
  }
  if (python && needs_python_requirement(inputs))
    effective.extra_requirements.push_back({"python", specs::VersionSpec{}, "requires"});
  auto attempt = solve_and_make(database, effective);
  if (attempt && attempt->lockfile) keep_fact_dates(*attempt->lockfile, previous);
  if (!attempt || !attempt->lockfile || !python) return attempt;
  const auto resolver = through_indexes(made_when_needed(factory), python->indexes);
  // Each round agrees or rules something out for good (a pin, a build, a Python), so a
  // few rounds settle it; the bound guards against a self-contradicting database.
  constexpr int kRounds = 24;
  std::vector<std::string> notes;
  const lock::Lockfile* lend = previous;
  std::optional<lock::Lockfile> last;
  PythonWalk walk(inputs, *python);
  for (int round = 0; round < kRounds; ++round) {
    auto findings = add_python_closures(effective, *python, *attempt->lockfile, lend, resolver);
    if (!findings) return std::move(findings).error();
    // A settled closure's wheels whose kernels the cache knows may still rule a build out.
    if (findings->empty()) {
      if (auto known = check_cached_kernels(effective, *attempt->lockfile, *findings); !known)
        return std::move(known).error();
    }
    if (findings->empty()) {
      add_glibc_needed(*attempt->lockfile);
      attempt->warnings = std::move(notes);
      walk.explain(*attempt);
      return attempt;
    }
    for (const auto& failure : findings->failures) {
      if (auto stop = walk.rule_out(failure, effective)) return *std::move(stop);
    }
    add_findings(effective, *findings, notes);
    last = *attempt->lockfile;
    // A platform whose closure failed this round (a Python ruled out) may come back to the
    // previous lock's Python: its closure is lent as in the first round, not resolved again.
    if (previous != nullptr) {
      for (auto& locked : last->platforms) {
        if (locked.python) continue;
        for (const auto& before : previous->platforms) {
          if (before.platform == locked.platform) locked.python = before.python;
        }
      }
    }
    lend = &*last;
    attempt = solve_and_make(database, effective);
    if (attempt && attempt->lockfile) keep_fact_dates(*attempt->lockfile, previous);
    if (attempt && attempt->failure && walk.walked(attempt->failure->first))
      return walk.no_older_python(attempt->failure->first, attempt->failure->second);
    if (!attempt || !attempt->lockfile) {
      if (attempt) attempt->warnings = std::move(notes);
      return attempt;
    }
  }
  Error error = Error::failed(
      fmt::format("the solver and the Python closure did not agree after {} rounds", kRounds));
  for (const auto& note : notes)
    error.because(note);
  return error.hint("pin the framework's build or CUDA in envkit.yaml (`requires:`)");
}

}  // namespace

Result<void> write_lock_text(const std::filesystem::path& path, const std::string& text) {
  const auto current = sys::read_file(path);
  if (current && *current == text) return {};
  return sys::write_file_atomic(path, text);
}

Result<LockAttempt> relock(const recipes::Database& database, const LockInputs& inputs,
                           const lock::Lockfile* previous, const ResolverFactory& resolver,
                           const std::filesystem::path& path) {
  auto attempt = solve_lock(database, inputs, previous, resolver);
  if (!attempt || !attempt->lockfile) return attempt;
  if (auto written = write_lock_text(path, lock::write(*attempt->lockfile)); !written)
    return std::move(written).error();
  return attempt;
}

Result<std::optional<lock::Lockfile>> read_lock(const std::filesystem::path& path) {
  std::error_code ignored;
  if (!std::filesystem::exists(path, ignored)) return std::optional<lock::Lockfile>();
  auto loaded = lock::load(path);
  if (!loaded) return std::move(loaded).error();
  return std::optional<lock::Lockfile>(*std::move(loaded));
}

Error out_of_date(const std::filesystem::path& path, const std::vector<std::string>& reasons) {
  Error error = Error::failed(fmt::format("{} is out of date", path.string()));
  for (const auto& reason : reasons)
    error.because(reason);
  return error;
}

Result<lock::Staleness> lock_staleness(const recipes::Database& database, const LockInputs& inputs,
                                       const lock::Lockfile& lockfile) {
  auto hashes = recipe_hashes(database, lockfile);
  if (!hashes) return hashes.error();
  // Facts an index gave are checked only where that index's overlay is at hand: offline
  // on a machine that never read it, the lock is taken at its word.
  if (!inputs.live_index) {
    for (const auto& [name, source] : lockfile.index_facts) {
      if (const auto locked = lockfile.recipes.find(name); locked != lockfile.recipes.end())
        (*hashes)[name] = locked->second;
    }
  }
  auto staleness = lock::compare(lockfile, inputs.manifest_hash, *hashes);
  std::vector<std::string> wanted;
  for (const auto platform : inputs.platforms)
    wanted.emplace_back(specs::to_string(platform));
  std::vector<std::string> locked;
  for (const auto& platform : lockfile.platforms)
    locked.emplace_back(specs::to_string(platform.platform));
  std::sort(wanted.begin(), wanted.end());
  if (wanted != locked) {
    staleness.reasons.push_back(fmt::format("the lock is for {}, not {}", text::join(locked, ", "),
                                            text::join(wanted, ", ")));
  }
  // A lock solved with a machine's facts stays current on other machines: it
  // states what it needs of one (`machine:`), which install checks.
  if (lockfile.system.source == specs::FactSource::manifest &&
      lockfile.system != inputs.assumptions) {
    staleness.reasons.push_back("envkit.yaml's `system:` section changed");
  }
  auto python = python_request(inputs);
  if (!python) return std::move(python).error();
  if (*python) {
    for (auto& reason : python_staleness(**python, lockfile))
      staleness.reasons.push_back(std::move(reason));
  }
  return staleness;
}

}  // namespace envkit::locking
