#include "locking.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "envkit/core/env_vars.hpp"
#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/net/transport.hpp"
#include "envkit/project/external.hpp"
#include "envkit/python/uv.hpp"
#include "envkit/store/cache.hpp"
#include "envkit/store/tool.hpp"
#include "envkit/sys/fs.hpp"
#include "prefix_option.hpp"
#include "python_lock.hpp"
#include "settings.hpp"
namespace envkit::cli {

namespace fs = std::filesystem;

namespace {

// The lowest version a spec admits, from its lower-bound clauses (>=, >, ==,
// ~=, ===): the driver every machine of a fleet has at least.
std::optional<specs::Version> lowest_admitted(const specs::VersionSpec& spec) {
  std::optional<specs::Version> lowest;
  for (const auto& clause : spec.specifiers()) {
    using Op = specs::Specifier::Op;
    const auto op = clause.op();
    if (op == Op::less || op == Op::less_equal || op == Op::not_equal || !clause.version())
      continue;
    if (!lowest || *clause.version() > *lowest) lowest = *clause.version();
  }
  return lowest;
}

// `driver: 390.48` is written bare and means that driver; `>=390.30` a range.
std::string fleet_driver_statement(const specs::VersionSpec& spec) {
  const auto& written = spec.original();
  const bool bare = !written.empty() && std::isdigit(static_cast<unsigned char>(written[0])) != 0;
  return bare ? fmt::format("the machines' driver is {} (envkit.yaml system.driver)", written)
              : fmt::format("the machines' drivers are {} (envkit.yaml system.driver)", written);
}

bool has_system_section(const manifest::SystemSection& system) {
  return system.driver || !system.cuda_arch.empty() || system.glibc;
}

Result<void> settle_facts(LockInputs& inputs, const gpu::ProbeSources& sources) {
  const auto& system = inputs.manifest.system;
  auto& facts = inputs.facts;
  auto& assumed = inputs.assumptions;
  if (has_system_section(system)) {
    assumed.source = "manifest";
    if (system.driver) {
      assumed.driver = system.driver->original().empty() ? system.driver->to_string()
                                                         : system.driver->original();
      facts.driver = lowest_admitted(*system.driver);
      facts.driver_statement = fleet_driver_statement(*system.driver);
      if (!facts.driver) {
        inputs.warnings.push_back(fmt::format(
            "envkit.yaml system.driver `{}` sets no lowest driver; locking without a driver "
            "constraint",
            *assumed.driver));
      }
    }
    for (const auto& capability : system.cuda_arch)
      facts.gpus.push_back({capability, ""});
    facts.gpus_owner = "the machines'";
    assumed.cuda_arch = system.cuda_arch;
    if (system.glibc) assumed.glibc = system.glibc->original();
    return {};
  }
  auto host = gpu::probe_host(sources);
  if (!host) return host.error();
  using Kind = gpu::Provenance::Kind;
  const bool overridden = host->driver_source.kind == Kind::override_variable ||
                          host->gpus_source.kind == Kind::override_variable;
  assumed.source =
      overridden ? "override" : (host->driver || !host->gpus.empty() ? "host" : "none");
  if (host->driver) {
    facts.driver = host->driver;
    assumed.driver = host->driver->original();
    facts.driver_statement = fmt::format("this machine's driver is {}", host->driver->original());
  } else {
    inputs.warnings.push_back(fmt::format(
        "no NVIDIA driver on this machine ({}): the lock has no driver constraint; state the "
        "machines' driver in envkit.yaml, e.g. `system: {{driver: \">=535.54.03\"}}`",
        host->driver_source.to_string()));
  }
  for (const auto& gpu : host->gpus) {
    facts.gpus.push_back({gpu.compute_capability, gpu.name.value_or("")});
    assumed.cuda_arch.push_back(gpu.compute_capability);
  }
  if (const auto glibc = sources.variable(env::kOverrideGlibc); glibc && !glibc->empty()) {
    assumed.glibc = *glibc;
  }
  std::sort(assumed.cuda_arch.begin(), assumed.cuda_arch.end());
  assumed.cuda_arch.erase(std::unique(assumed.cuda_arch.begin(), assumed.cuda_arch.end()),
                          assumed.cuda_arch.end());
  return {};
}

}  // namespace

Result<LockInputs> gather_lock_inputs(const fs::path& directory,
                                      const std::vector<specs::Platform>& platforms,
                                      const gpu::ProbeSources& sources) {
  LockInputs inputs;
  inputs.manifest_path = (directory / manifest::kFileName).lexically_normal();
  std::error_code ignored;
  if (!fs::exists(inputs.manifest_path, ignored)) {
    return Error::input(fmt::format("{} does not exist", inputs.manifest_path.string()))
        .hint("run `envkit init` to write one");
  }
  auto loaded = manifest::load(inputs.manifest_path);
  if (!loaded) return loaded.error();
  inputs.manifest = *std::move(loaded);
  inputs.manifest_hash = manifest::content_hash(inputs.manifest);
  inputs.platforms = platforms.empty() ? inputs.manifest.platforms : platforms;
  for (const auto& [package, source] : inputs.manifest.external) {
    auto version = project::resolve_external(package, source, directory);
    if (!version) return version.error();
    inputs.external.insert_or_assign(package,
                                     solve::External{version->version, version->description});
  }
  if (auto settled = settle_facts(inputs, sources); !settled) return settled.error();
  return inputs;
}

Result<Solved> solve_platforms(const recipes::Database& database, const LockInputs& inputs) {
  solve::Request request{
      .external = inputs.external, .system = inputs.facts, .unavailable = inputs.unavailable};
  const auto& manifest = inputs.manifest;
  if (manifest.framework) {
    request.requirements.push_back(
        {manifest.framework->name, manifest.framework->spec, "framework"});
  }
  for (const auto& [package, spec] : manifest.requires_) {
    request.requirements.push_back({package, spec, "requires"});
  }
  for (const auto& requirement : inputs.extra_requirements)
    request.requirements.push_back(requirement);
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
// components a framework needs (the recipe's default components; a runfile
// holds them all).
std::vector<recipes::Artifact> artifacts_of(const recipes::Recipe& recipe,
                                            const solve::Choice& choice, specs::Platform platform) {
  std::vector<recipes::Artifact> out;
  const auto* version = recipe.find(choice.version);
  if (version == nullptr) return out;
  const auto& wanted = recipe.default_components;
  for (const auto& build : version->builds) {
    if (build.id != choice.build) continue;
    for (const auto& artifact : build.artifacts) {
      if (artifact.platform != platform) continue;
      const bool needed =
          wanted.empty() || artifact.kind == recipes::ArtifactKind::runfile ||
          std::find(wanted.begin(), wanted.end(), artifact.component) != wanted.end();
      if (needed) out.push_back(artifact);
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

// The driver the locked CUDA needs on `platform`: the family minimum where
// minor-version compatibility applies, else the release's own.
std::optional<specs::Version> driver_needed(const VersionFiles& files, const solve::Choice& cuda,
                                            specs::Platform platform) {
  const auto file = files.find({cuda.name, cuda.version.original()});
  if (file == files.end()) return std::nullopt;
  const auto* version = file->second.find(cuda.version);
  if (version == nullptr) return std::nullopt;
  for (const auto& build : version->builds) {
    if (build.id != cuda.build) continue;
    if (const auto it = build.min_driver_compat.find(platform); it != build.min_driver_compat.end())
      return it->second;
    if (const auto it = build.min_driver.find(platform); it != build.min_driver.end())
      return it->second;
  }
  return std::nullopt;
}

// What a lock solved with one machine's facts needs of every machine: the
// driver its CUDA runs on (`>=525.60.13`), not the writer's driver or GPUs.
lock::SystemAssumptions machine_requirements(const VersionFiles& files, const Solved& solved,
                                             std::string source) {
  lock::SystemAssumptions needed{.source = std::move(source)};
  std::optional<specs::Version> driver;
  for (const auto& [platform, solution] : solved.solutions) {
    const auto* cuda = solution.find("cuda");
    if (cuda == nullptr || cuda->external) continue;
    const auto minimum = driver_needed(files, *cuda, platform);
    if (minimum && (!driver || *minimum > *driver)) driver = minimum;
  }
  if (driver) needed.driver = ">=" + driver->original();
  return needed;
}

}  // namespace

Result<lock::Lockfile> make_lockfile(const recipes::Database& database, const LockInputs& inputs,
                                     const Solved& solved) {
  auto files = read_version_files(database, solved, inputs);
  if (!files) return files.error();
  lock::Lockfile lockfile;
  lockfile.manifest_hash = inputs.manifest_hash;
  lockfile.system = inputs.assumptions.source == "manifest"
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
  lock::canonicalize(lockfile);
  return lockfile;
}

Result<lock::Staleness> lock_staleness(const recipes::Database& database, const LockInputs& inputs,
                                       const lock::Lockfile& lockfile) {
  auto hashes = recipe_hashes(database, lockfile);
  if (!hashes) return hashes.error();
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
  if (lockfile.system.source == "manifest" && lockfile.system != inputs.assumptions) {
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

Result<void> check_machine(const lock::Lockfile& lockfile, const gpu::ProbeSources& sources) {
  const auto& needed = lockfile.system.driver;
  if (lockfile.system.source == "manifest" || !needed) return {};
  auto spec = specs::VersionSpec::parse(*needed);
  if (!spec) return {};  // a lock of an older envkit: its driver was the writer's
  auto host = gpu::probe_host(sources);
  if (!host) return std::move(host).error();
  if (!host->driver || spec->contains(*host->driver)) return {};
  return Error::failed(
             fmt::format("this machine's NVIDIA driver {} is older than envkit.lock needs",
                         host->driver->original()))
      .because(
          fmt::format("the locked CUDA needs a driver {} (envkit.lock `system.driver`)", *needed))
      .hint(fmt::format("upgrade the driver to {} or newer, or run `envkit lock` on this machine "
                        "to solve for its driver (that rewrites envkit.lock)",
                        needed->substr(2)));
}

Result<std::vector<specs::Platform>> parse_platform_flags(const std::vector<std::string>& flags) {
  std::vector<specs::Platform> platforms;
  for (const auto& flag : flags) {
    auto platform = specs::parse_platform(flag);
    if (!platform) {
      return Error::input(fmt::format("invalid `--platform` value {}", text::quoted(flag)))
          .because(platform.error().message());
    }
    if (std::find(platforms.begin(), platforms.end(), *platform) == platforms.end()) {
      platforms.push_back(*platform);
    }
  }
  return platforms;
}

int report_unsolvable(const Context& context, specs::Platform platform,
                      const solve::Unsolvable& unsolvable) {
  context.console.explanation(unsolvable.summary, unsolvable.explanation, unsolvable.hints);
  if (context.options.json) {
    std::cout << nlohmann::json{{"error", "unsatisfiable"},
                                {"platform", specs::to_string(platform)},
                                {"explanation", unsolvable.explanation},
                                {"hints", unsolvable.hints}}
                     .dump()
              << '\n';
  }
  return 1;
}

namespace {

Result<LockAttempt> solve_and_make(const recipes::Database& database, const LockInputs& inputs) {
  auto solved = solve_platforms(database, inputs);
  if (!solved) return std::move(solved).error();
  if (solved->failure) return LockAttempt{.failure = std::move(solved->failure)};
  auto lockfile = make_lockfile(database, inputs, *solved);
  if (!lockfile) return std::move(lockfile).error();
  return LockAttempt{.lockfile = *std::move(lockfile)};
}

}  // namespace

namespace {

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

}  // namespace

Result<LockAttempt> solve_lock(const recipes::Database& database, const LockInputs& inputs,
                               const lock::Lockfile* previous, const ResolverFactory& factory) {
  auto python = python_request(inputs);
  if (!python) return std::move(python).error();
  LockInputs effective = inputs;
  auto unavailable = unavailable_builds(database, inputs);
  if (!unavailable) return std::move(unavailable).error();
  effective.unavailable.insert(effective.unavailable.end(), unavailable->begin(),
                               unavailable->end());
  if (*python && needs_python_requirement(inputs))
    effective.extra_requirements.push_back({"python", specs::VersionSpec{}, "requires"});
  auto attempt = solve_and_make(database, effective);
  if (!attempt || !attempt->lockfile || !*python) return attempt;
  auto resolver = factory();
  if (!resolver) return std::move(resolver).error();
  // Each round agrees or rules something out for good (a pin, a build), so a
  // few rounds settle it; the bound guards against a self-contradicting database.
  constexpr int kRounds = 24;
  std::vector<std::string> notes;
  const lock::Lockfile* lend = previous;
  std::optional<lock::Lockfile> last;
  for (int round = 0; round < kRounds; ++round) {
    auto findings = add_python_closures(effective, **python, *attempt->lockfile, lend, *resolver);
    if (!findings) return std::move(findings).error();
    if (findings->empty()) {
      attempt->warnings = std::move(notes);
      return attempt;
    }
    add_findings(effective, *findings, notes);
    last = *attempt->lockfile;
    lend = &*last;
    attempt = solve_and_make(database, effective);
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

Result<void> write_lock_text(const std::filesystem::path& path, const std::string& text) {
  const auto current = sys::read_file(path);
  if (current && *current == text) return {};
  return sys::write_file_atomic(path, text);
}

namespace {

// $ENVKIT_UV when set, else the uv envkit keeps in its cache (downloaded once,
// sha256-verified), never whatever `uv` is on PATH.
Result<python::Uv> locking_uv(const Context& context, const LockInputs& inputs) {
  if (const auto given = env::get(env::kUv); given && !given->empty()) return python::find_uv();
  auto settings = load_settings(context);
  if (!settings) return std::move(settings).error();
  net::Transport transport(transport_options(settings->jobs.value, std::nullopt));
  const store::Cache cache(cache_dir_of(*settings));
  const auto& release = store::pinned_uv();
  auto path =
      store::provide_tool(cache, release,
                          {.transport = &transport,
                           .mirrors = settings->mirrors.value,
                           .indexes = inputs.manifest.indexes,
                           .index_fetch = {},
                           .note = [&](const std::string& line) { context.console.detail(line); }});
  if (!path) return std::move(path).error();
  return python::Uv{.path = *path, .version = release.version};
}

}  // namespace

ResolverFactory closure_resolver(const Context& context, const LockInputs& inputs) {
  return [&context, &inputs]() -> Result<ClosureResolver> {
    auto uv = locking_uv(context, inputs);
    if (!uv) return std::move(uv).error();
    const auto& mirror = inputs.mirror;
    context.console.detail(
        fmt::format("resolving Python closures with uv {} ({}){}", uv->version, uv->path.string(),
                    mirror ? " through the mirror " + url::redacted(*mirror) : std::string()));
    return resolver_with_uv(*std::move(uv), mirror);
  };
}

Result<Project> open_project(const Context& context,
                             const std::vector<specs::Platform>& platforms) {
  auto database = recipes::Database::open(recipes::default_database_dir(context.options.recipes));
  if (!database) return std::move(database).error();
  auto inputs = gather_lock_inputs(context.options.directory, platforms, gpu::host_sources());
  if (!inputs) return std::move(inputs).error();
  auto settings = load_settings(context);
  if (!settings) return std::move(settings).error();
  inputs->default_index = settings->index_url.value.value_or("");
  if (!settings->mirrors.value.empty()) inputs->mirror = settings->mirrors.value.front();
  return Project{.database = *std::move(database), .inputs = *std::move(inputs)};
}

}  // namespace envkit::cli
