#include "envkit/install/sources.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>

#include <algorithm>
#include <set>

#include "envkit/build/source_build.hpp"
#include "envkit/core/env_vars.hpp"
#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/python/interpreters.hpp"
#include "envkit/specs/version_spec.hpp"
#include "envkit/store/fill.hpp"
#include "envkit/sys/process.hpp"

namespace envkit::install {

// This module builds on the store: its cache, records, links and generations.
using namespace store;

namespace fs = std::filesystem;

namespace {

using specs::Artifact;
using HostAnswers = std::map<std::string, net::HostReachability>;

// "https://user:pw@host:8443/a/b.whl" -> "https://host:8443/": what is asked
// whether a host answers. Its root, not the artifact: asking is not
// downloading, and a server that counts the requests for a file (or fails the
// first ones on purpose) sees none of it.
std::string host_root(const std::string& url) {
  const auto begin = url::authority_begin(url);
  if (begin == std::string::npos) return url;
  const auto end = url::authority_end(url, begin);
  auto authority = url.substr(begin, end - begin);
  if (const auto at = authority.rfind('@'); at != std::string::npos) authority.erase(0, at + 1);
  return url.substr(0, begin) + authority + "/";
}

// The file a file:// URL names, as libcurl reads it; nullopt for other URLs.
std::optional<fs::path> local_file(std::string_view url) {
  constexpr std::string_view kScheme = "file://";
  if (!url.starts_with(kScheme)) return std::nullopt;
  auto rest = url.substr(kScheme.size());
  if (rest.starts_with("localhost/")) rest.remove_prefix(std::string_view("localhost").size());
  return fs::path(url::percent_decoded(rest).value_or(std::string(rest)));
}

// One URL an artifact needs (its own, or one of its patches') and where it may
// come from: each mirror's copy, the URL itself, the same file elsewhere
// (candidate_urls).
struct NeededUrl {
  std::string what;  // "runfile", "cuda_cudart archive", "runfile patch 2"
  std::string url;   // as the lock names it
  std::vector<std::string> candidates;
};

// An artifact of one alternative: in the cache already, or the URLs it needs.
struct AlternativeArtifact {
  bool cached = false;
  std::vector<NeededUrl> urls;
};

// One way to install a package: a packaging and its artifacts.
struct Alternative {
  Packaging packaging = Packaging::archive;
  std::vector<Artifact> artifacts;
  std::vector<AlternativeArtifact> needs;
};

// A package to decide, with its alternatives in order.
struct PackageChoice {
  PlannedPackage* package = nullptr;
  std::vector<Alternative> alternatives;
};

// What one alternative would take from this machine's network.
struct Availability {
  bool ok = true;
  std::size_t artifacts = 0;
  std::size_t cached = 0;
  std::set<std::string> hosts;              // where it would download from
  std::map<std::string, std::string> down;  // host (or file) -> why it cannot be had
  std::set<std::string> origins_down;       // the hosts of the lock's own URLs among them
  std::vector<std::string> problems;        // one line per URL none of whose sources answers
  bool kept_answers = false;                // a `down` answer came from the kept ones
};

// Whether one candidate URL can be had, and where it is.
struct CandidateStatus {
  bool ok = false;
  std::string where;   // the host, "a local file", or "" for a URL envkit does not ask about
  std::string reason;  // why not
  bool kept = false;   // the answer was kept from an earlier install
};

CandidateStatus status_of(const std::string& candidate, const HostAnswers& answers) {
  if (auto file = local_file(candidate)) {
    std::error_code error;
    const auto shown = text::quoted(file->string());
    if (fs::exists(*file, error)) return {.ok = true, .where = "a local file"};
    return {.ok = false, .where = shown, .reason = "no such file"};
  }
  const auto host = net::reachability_host(candidate);
  // Not http(s): the download says what it makes of it.
  if (host.empty()) return {.ok = true, .where = ""};
  const auto it = answers.find(host);
  if (it == answers.end()) return {.ok = false, .where = host, .reason = "it was not asked"};
  if (it->second.reachable) return {.ok = true, .where = host};
  return {.ok = false, .where = host, .reason = it->second.reason, .kept = it->second.cached};
}

// "cuda_cudart archive" or "runfile": what an artifact is, as the error names it.
std::string artifact_what(const std::string& package, const Artifact& artifact) {
  const auto kind = std::string(specs::to_string(artifact.kind));
  if (artifact.component.empty() || artifact.component == package) return kind;
  return artifact.component + " " + kind;
}

// The toolchain identity source entries are keyed by, found once (nullopt: none here).
class ToolchainIdentity {
 public:
  const std::optional<std::string>& get(const std::string& label) {
    if (!asked_) {
      asked_ = true;
      if (auto found = build::find_toolchain({.cc = std::nullopt, .label = label}))
        identity_ = found->identity();
    }
    return identity_;
  }

 private:
  bool asked_ = false;
  std::optional<std::string> identity_;
};

// Whether the cache holds `target` whole, as fill_entry would find it.
bool in_cache(const Cache& cache, const ArtifactTarget& target, ToolchainIdentity& toolchain) {
  const auto& artifact = target.artifact;
  std::string id;
  if (artifact.kind == specs::ArtifactKind::source && artifact.layout != specs::Layout::none) {
    const auto& identity = toolchain.get(fmt::format("{} {}", target.package, target.version));
    if (!identity) return false;  // the build will say what is missing
    id = Cache::source_entry_id(target, *identity);
  } else {
    id = Cache::entry_id(target);
  }
  auto found = cache.find(id);
  return found && *found && cache.changed_files(**found).empty();
}

Alternative alternative_of(const PlannedPackage& package, Packaging packaging,
                           std::vector<Artifact> artifacts, const Cache& cache,
                           const std::vector<std::string>& mirrors, ToolchainIdentity& toolchain) {
  Alternative alternative{.packaging = packaging, .artifacts = std::move(artifacts), .needs = {}};
  for (const auto& artifact : alternative.artifacts) {
    const ArtifactTarget target{
        .package = package.name, .version = package.version, .artifact = artifact};
    AlternativeArtifact need;
    need.cached = in_cache(cache, target, toolchain);
    if (!need.cached) {
      const auto what = artifact_what(package.name, artifact);
      need.urls.push_back(
          {.what = what, .url = artifact.url, .candidates = candidate_urls(mirrors, artifact)});
      for (std::size_t i = 0; i < artifact.patches.size(); ++i) {
        const auto& patch = artifact.patches[i];
        need.urls.push_back({.what = fmt::format("{} patch {}", what, i + 1),
                             .url = patch.url,
                             .candidates = candidate_urls(mirrors, patch.url, patch.sha256)});
      }
    }
    alternative.needs.push_back(std::move(need));
  }
  return alternative;
}

// "developer.download.nvidia.com is not reachable (Could not resolve host: ...)".
std::string not_reachable(const std::map<std::string, std::string>& down) {
  std::vector<std::string> names;
  std::vector<std::string> reasons;
  for (const auto& [where, reason] : down) {
    names.push_back(where);
    reasons.push_back(down.size() == 1 ? reason : fmt::format("{}: {}", where, reason));
  }
  return fmt::format("{} {} not reachable ({})", text::join(names, ", "),
                     names.size() == 1 ? "is" : "are", text::join(reasons, "; "));
}

// "github.com, zlib.net": the hosts alone (not the local files).
std::string hosts_of(const std::map<std::string, std::string>& down) {
  std::vector<std::string> names;
  for (const auto& [where, reason] : down) {
    if (!where.starts_with('`')) names.push_back(where);
  }
  return text::join(names, ", ");
}

// "cuda 9.0.176: runfile https://... — developer.nvidia.com: Could not resolve host: ...",
// then the other places it was looked for (mirrors, the same file elsewhere).
std::string problem_line(const PlannedPackage& package, const NeededUrl& url,
                         const std::vector<CandidateStatus>& statuses) {
  std::string origin;
  std::vector<std::string> others;
  for (std::size_t i = 0; i < statuses.size(); ++i) {
    const auto& status = statuses[i];
    const auto& candidate = url.candidates[i];
    const auto why = fmt::format("{}: {}", status.where, status.reason);
    if (candidate == url.url) {
      origin = why;
    } else {
      others.push_back(fmt::format("{} — {}", url::redacted(candidate), why));
    }
  }
  auto line = fmt::format("{} {}: {} {} — {}", package.name, package.version, url.what,
                          url::redacted(url.url), origin);
  if (!others.empty()) line += fmt::format(" (also asked: {})", text::join(others, "; "));
  return line;
}

Availability evaluate(const PlannedPackage& package, const Alternative& alternative,
                      const HostAnswers& answers) {
  Availability availability;
  for (const auto& need : alternative.needs) {
    ++availability.artifacts;
    if (need.cached) {
      ++availability.cached;
      continue;
    }
    for (const auto& url : need.urls) {
      std::vector<CandidateStatus> statuses;
      bool had = false;
      for (const auto& candidate : url.candidates) {
        auto status = status_of(candidate, answers);
        if (status.ok) {
          if (!status.where.empty()) availability.hosts.insert(status.where);
          had = true;
          break;
        }
        statuses.push_back(std::move(status));
      }
      if (had) continue;
      availability.ok = false;
      for (std::size_t i = 0; i < statuses.size(); ++i) {
        const auto& status = statuses[i];
        availability.down.emplace(status.where, status.reason);
        availability.kept_answers = availability.kept_answers || status.kept;
        if (url.candidates[i] == url.url && !status.where.starts_with('`'))
          availability.origins_down.insert(status.where);
      }
      availability.problems.push_back(problem_line(package, url, statuses));
    }
  }
  return availability;
}

// Why an alternative that can be had is taken: "in the cache", "nginx answers".
std::string available_why(const Availability& availability) {
  if (availability.cached == availability.artifacts) return "in the cache";
  std::vector<std::string> hosts(availability.hosts.begin(), availability.hosts.end());
  auto why = hosts.empty() ? std::string("its URLs need no network")
                           : fmt::format("{} answer{}", text::join(hosts, ", "),
                                         hosts.size() == 1 ? "s" : "");
  if (availability.cached > 0)
    why =
        fmt::format("{} of {} in the cache; {}", availability.cached, availability.artifacts, why);
  return why;
}

// "archives", "its runfile": a packaging as the messages name it.
std::string plural(Packaging packaging) {
  return std::string(to_string(packaging)) + "s";
}

std::string packaging_noun(const Alternative& alternative) {
  return alternative.artifacts.size() == 1 ? std::string(to_string(alternative.packaging))
                                           : plural(alternative.packaging);
}

// What the lock's packages require of `name` ("tensorflow-gpu 1.6.0" -> `<3.7,>=3.3`).
std::vector<std::pair<std::string, specs::VersionSpec>> requirements_on(
    const lock::PlatformLock& lock, const std::string& name) {
  std::vector<std::pair<std::string, specs::VersionSpec>> found;
  for (const auto& package : lock.packages) {
    const auto it = package.requires_.find(name);
    if (it == package.requires_.end() || it->second.empty()) continue;
    auto spec = specs::VersionSpec::parse(it->second);
    if (!spec) continue;
    found.emplace_back(fmt::format("{} {}", package.name, package.version.original()),
                       *std::move(spec));
  }
  return found;
}

// The hint to name a machine interpreter another minor of which the lock's
// packages allow, when it can make a venv; nullopt when none would do.
std::optional<std::string> external_python_hint(const lock::PlatformLock& lock,
                                                const SourceProbe& probe) {
  const auto requirements = requirements_on(lock, "python");
  if (requirements.empty() || !probe.pythons || !probe.python) return std::nullopt;
  std::set<std::pair<std::uint64_t, std::uint64_t>> tried;
  for (const auto& offer : probe.pythons()) {
    auto version = specs::Version::parse(offer.version);
    if (!version || !tried.emplace(version->major(), version->minor()).second) continue;
    const bool allowed = std::all_of(requirements.begin(), requirements.end(),
                                     [&](const auto& r) { return r.second.contains(*version); });
    if (!allowed) continue;
    auto usable = probe.python(*version);
    if (!usable) continue;
    std::vector<std::string> who;
    for (const auto& [package, spec] : requirements)
      who.push_back(fmt::format("{} (python {})", package, spec.to_string()));
    return fmt::format(
        "{} allow{} Python {}, which this machine has: add `external: {{python: {}}}` to "
        "envkit.yaml and run `envkit lock` (unless its `requires:` pins another Python); the "
        "prefix is then a venv of that interpreter",
        text::join(who, " and "), who.size() == 1 ? "s" : "", usable->version,
        usable->path.string());
  }
  return std::nullopt;
}

// Makes `offer` stand in for `package`'s artifacts: a venv of the machine's
// interpreter (python), the machine's own library (zlib).
void make_stand_in(PlannedPackage& package, Packaging packaging, const MachineOffer& offer) {
  package.packaging = packaging;
  package.artifacts.clear();
  package.fallback.reset();
  package.external = offer.path.string();
  package.build = offer.path.string();
  package.stand_in = true;
}

// What decide_sources gathers about the packages it cannot source.
struct Unsourced {
  std::vector<std::string> packages;  // "cuda 9.0.176"
  std::vector<std::string> causes;
  std::vector<std::string> hints;
  std::set<std::string> origins_down;  // the hosts of the lock's own URLs that did not answer
  bool kept_answers = false;
};

// The machine's stand-in for a package, or why there is none.
struct StandInAnswer {
  std::optional<MachineOffer> offer;
  std::vector<std::string> causes;
  std::vector<std::string> hints;
};

// The machine's stand-in for `package` when it is python (an interpreter of
// the same minor) or zlib (libz.so.1, when it is what the lock's packages need).
StandInAnswer machine_stand_in(const PlannedPackage& package, const lock::PlatformLock& lock,
                               const SourceProbe& probe) {
  StandInAnswer answer;
  const auto label = fmt::format("{} {}", package.name, package.version);
  if (package.name == "python" && probe.python) {
    auto version = specs::Version::parse(package.version);
    if (!version) return answer;
    auto offer = probe.python(*version);
    if (offer) {
      answer.offer = *std::move(offer);
      return answer;
    }
    answer.causes.push_back(fmt::format("{}: {}", label, offer.error().message()));
    for (const auto& cause : offer.error().causes())
      answer.causes.push_back(fmt::format("{}: {}", label, cause));
    answer.hints = offer.error().hints();
    if (auto hint = external_python_hint(lock, probe)) answer.hints.push_back(*hint);
    return answer;
  }
  if (package.name == "zlib" && probe.zlib) {
    auto offer = probe.zlib();
    if (!offer) {
      answer.causes.push_back(fmt::format("{}: {}", label, offer.error().message()));
      return answer;
    }
    for (const auto& [who, spec] : requirements_on(lock, "zlib")) {
      if (spec.contains(offer->version)) continue;
      answer.causes.push_back(
          fmt::format("{}: the machine's zlib {} ({}) cannot stand in: {} needs zlib {}", label,
                      offer->version, offer->path.string(), who, spec.to_string()));
      return answer;
    }
    answer.offer = *std::move(offer);
  }
  return answer;
}

Error unsourced_error(Unsourced& unsourced, const std::vector<std::string>& mirrors) {
  auto& names = unsourced.packages;
  auto listed = names.back();
  if (names.size() > 1) {
    listed = fmt::format("{} and {}",
                         text::join(std::vector<std::string>(names.begin(), names.end() - 1), ", "),
                         names.back());
  }
  Error error = Error::failed(
      fmt::format("cannot install {}: this machine reaches no source of {} (nothing was "
                  "downloaded or changed)",
                  listed, names.size() == 1 ? "it" : "them"));
  for (auto& cause : unsourced.causes)
    error.because(std::move(cause));
  const auto hosts = text::join(
      std::vector<std::string>(unsourced.origins_down.begin(), unsourced.origins_down.end()), ", ");
  error.hint(fmt::format(
      "a mirror that has these files: `envkit install --mirror URL` asks URL/HOST/PATH for "
      "https://HOST/PATH (or the registry oci://HOST/REPO for each file's sha256){}",
      mirrors.empty() ? "" : "; the mirrors asked lack them or do not answer"));
  error.hint(fmt::format(
      "on a machine that reaches {}: copy the project there and run `envkit mirror --out DIR`; "
      "serve DIR here (`python3 -m http.server -d DIR 8080`) and run `envkit install --mirror "
      "http://localhost:8080`",
      hosts.empty() ? "them" : hosts));
  for (auto& hint : unsourced.hints)
    error.hint(std::move(hint));
  if (unsourced.kept_answers) {
    error.hint(
        "some of these answers were kept from an earlier install on this network: `envkit "
        "install --refresh` asks the hosts again");
  }
  return error;
}

// `probe.reach` over the roots of every host `choices` may download from, asked once.
HostAnswers ask_hosts(const std::vector<PackageChoice>& choices, const SourceProbe& probe) {
  std::vector<std::string> roots;
  std::set<std::string> seen;
  for (const auto& choice : choices) {
    for (const auto& alternative : choice.alternatives) {
      for (const auto& need : alternative.needs) {
        for (const auto& url : need.urls) {
          for (const auto& candidate : url.candidates) {
            const auto host = net::reachability_host(candidate);
            if (!host.empty() && seen.insert(host).second) roots.push_back(host_root(candidate));
          }
        }
      }
    }
  }
  if (roots.empty() || !probe.reach) return {};
  return probe.reach(roots);
}

// The machine's interpreter of `version`'s minor, when it can make a venv.
Result<MachineOffer> machine_python(const specs::Version& version) {
  const auto minor = fmt::format("{}.{}", version.major(), version.minor());
  auto found = python::machine_interpreter(version);
  if (!found) {
    const auto where = env::get(env::kPythonSearchPath);
    return Error::failed(fmt::format(
        "this machine has no Python {} to stand in for it (looked in {})", minor,
        where ? fmt::format("ENVKIT_PYTHON_SEARCH_PATH={}", *where)
              : std::string("pyenv's versions, uv's Pythons, conda bases, PATH, /usr/local/bin "
                            "and /usr/bin")));
  }
  sys::ProcessOptions options;
  options.timeout = std::chrono::seconds(20);
  options.env = {{"PYTHONPATH", std::nullopt}, {"PYTHONHOME", std::nullopt}};
  auto run = sys::run_process({found->path.string(), "-c", "import venv, ensurepip"}, options);
  const auto path = found->path.string();
  if (!run || run->timed_out || run->exit_code != 0) {
    const auto said = run ? text::trim(run->err) : run.error().message();
    Error error = Error::failed(
        fmt::format("the machine's {} ({}) cannot stand in for it: it cannot make a venv ({})",
                    path, found->version.original(), said));
    if (path.starts_with("/usr/bin/"))
      error.hint(fmt::format("`sudo apt-get install python{}-venv` gives {} its venv module", minor,
                             path));
    return error;
  }
  return MachineOffer{
      .path = found->path, .version = found->version.original(), .source = found->source};
}

}  // namespace

Result<MachineOffer> machine_zlib() {
  void* handle = ::dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    return Error::failed(fmt::format("this machine has no libz.so.1 the dynamic loader finds ({})",
                                     why ? why : "dlopen failed"));
  }
  using VersionFunction = const char* (*)();
  auto* version_of = reinterpret_cast<VersionFunction>(::dlsym(handle, "zlibVersion"));
  link_map* map = nullptr;
  fs::path path = "libz.so.1";
  if (::dlinfo(handle, RTLD_DI_LINKMAP, static_cast<void*>(&map)) == 0 && map && map->l_name &&
      *map->l_name)
    path = map->l_name;
  const std::string version = version_of ? version_of() : "";
  ::dlclose(handle);
  if (version.empty()) {
    return Error::failed(
        fmt::format("the machine's {} does not say its version (no zlibVersion)", path.string()));
  }
  return MachineOffer{.path = path, .version = version, .source = "the dynamic loader"};
}

SourceProbe machine_probe(const net::ReachabilityOptions& reachability) {
  SourceProbe probe;
  probe.reach = [reachability](const std::vector<std::string>& urls) {
    return net::check_reachability(urls, reachability);
  };
  probe.python = machine_python;
  probe.pythons = [] {
    std::vector<MachineOffer> offers;
    for (const auto& found : python::machine_interpreters().found) {
      offers.push_back(
          {.path = found.path, .version = found.version.original(), .source = found.source});
    }
    return offers;
  };
  probe.zlib = machine_zlib;
  return probe;
}

std::string decision_line(const SourceDecision& decision) {
  const auto from =
      decision.from == "machine" ? std::string("the machine's own") : decision.from + "s";
  return fmt::format("{} {}: {} ({})", decision.package, decision.version, from, decision.why);
}

// A lock made where the machine's interpreter stood in for the Python names that
// interpreter's path; on another machine, its own interpreter of the same minor
// stands in instead. False when `package` is no such venv, or the path is here.
bool stand_in_for_missing_base(PlannedPackage& package, const SourceProbe& probe,
                               SourcePlan& sources) {
  const fs::path base = package.external;
  std::error_code ignored;
  if (package.packaging != Packaging::venv || !base.is_absolute() || fs::exists(base, ignored) ||
      !probe.python)
    return false;
  auto version = specs::Version::parse(package.version);
  if (!version) return false;
  auto offer = probe.python(*version);
  if (!offer) return false;
  make_stand_in(package, Packaging::venv, *offer);
  sources.stand_ins.push_back(
      fmt::format("python {}: the lock's {} is not on this machine; its {} ({}) stands in",
                  package.version, base.string(), offer->path.string(), offer->version));
  sources.decisions.push_back(
      {.package = package.name,
       .version = package.version,
       .from = "machine",
       .why = fmt::format("the machine's {} ({}, {}) stands in for {}", offer->path.string(),
                          offer->version, offer->source, base.string())});
  return true;
}

Result<SourcePlan> decide_sources(InstallPlan& plan, const lock::PlatformLock& lock,
                                  const Cache& cache, const SourceOptions& options,
                                  const SourceProbe& probe) {
  ToolchainIdentity toolchain;
  std::vector<PackageChoice> choices;
  SourcePlan sources;
  for (auto& package : plan.packages) {
    if (!package.unchanged && stand_in_for_missing_base(package, probe, sources)) continue;
    if (package.unchanged || package.artifacts.empty()) continue;
    PackageChoice choice{.package = &package, .alternatives = {}};
    choice.alternatives.push_back(alternative_of(package, package.packaging, package.artifacts,
                                                 cache, options.mirrors, toolchain));
    if (package.fallback) {
      const auto other =
          package.packaging == Packaging::archive ? Packaging::wheel : Packaging::archive;
      choice.alternatives.push_back(
          alternative_of(package, other, *package.fallback, cache, options.mirrors, toolchain));
    }
    choices.push_back(std::move(choice));
  }
  const auto answers = ask_hosts(choices, probe);

  Unsourced unsourced;
  for (auto& choice : choices) {
    auto& package = *choice.package;
    std::vector<Availability> availability;
    for (const auto& alternative : choice.alternatives)
      availability.push_back(evaluate(package, alternative, answers));
    const auto first = std::find_if(availability.begin(), availability.end(),
                                    [](const Availability& a) { return a.ok; });
    const auto& preferred = choice.alternatives.front();
    if (first == availability.begin()) {
      sources.decisions.push_back({.package = package.name,
                                   .version = package.version,
                                   .from = std::string(to_string(package.packaging)),
                                   .why = available_why(*first)});
      continue;
    }
    const auto unavailable = fmt::format("its {} cannot be had: {}", packaging_noun(preferred),
                                         not_reachable(availability.front().down));
    if (first != availability.end()) {
      const auto& taken =
          choice.alternatives[static_cast<std::size_t>(first - availability.begin())];
      package.packaging = taken.packaging;
      package.artifacts = taken.artifacts;
      package.fallback.reset();
      sources.decisions.push_back(
          {.package = package.name,
           .version = package.version,
           .from = std::string(to_string(taken.packaging)),
           .why = fmt::format("{}; {}", unavailable, available_why(*first))});
      if (!options.auto_packaging) {
        sources.fell_back.push_back(
            fmt::format("{}: installed from {}, its {} were unreachable ({})", package.name,
                        plural(taken.packaging), plural(preferred.packaging),
                        not_reachable(availability.front().down)));
      }
      continue;
    }
    std::map<std::string, std::string> down;
    for (const auto& a : availability)
      down.insert(a.down.begin(), a.down.end());
    auto machine = machine_stand_in(package, lock, probe);
    if (const auto& offer = machine.offer) {
      const auto what = fmt::format("{} {}", package.name, package.version);
      make_stand_in(package, package.name == "python" ? Packaging::venv : Packaging::machine,
                    *offer);
      sources.stand_ins.push_back(fmt::format(
          "{}: the machine's {} ({}) stands in: {} {} not reachable", what, offer->path.string(),
          offer->version, hosts_of(down), down.size() == 1 ? "is" : "are"));
      sources.decisions.push_back(
          {.package = package.name,
           .version = package.version,
           .from = "machine",
           .why = fmt::format("{}; the machine's {} ({}, {}) stands in", unavailable,
                              offer->path.string(), offer->version, offer->source)});
      continue;
    }
    unsourced.packages.push_back(fmt::format("{} {}", package.name, package.version));
    for (auto& a : availability) {
      unsourced.causes.insert(unsourced.causes.end(), a.problems.begin(), a.problems.end());
      unsourced.kept_answers = unsourced.kept_answers || a.kept_answers;
      unsourced.origins_down.insert(a.origins_down.begin(), a.origins_down.end());
    }
    unsourced.causes.insert(unsourced.causes.end(), machine.causes.begin(), machine.causes.end());
    unsourced.hints.insert(unsourced.hints.end(), machine.hints.begin(), machine.hints.end());
  }
  if (!unsourced.packages.empty()) return unsourced_error(unsourced, options.mirrors);
  return sources;
}

}  // namespace envkit::install
