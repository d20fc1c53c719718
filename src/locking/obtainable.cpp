#include "envkit/locking/obtainable.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "envkit/core/text.hpp"
#include "envkit/locking/live_facts.hpp"
#include "envkit/locking/lock_pipeline.hpp"
#include "envkit/locking/python_closure.hpp"
#include "envkit/net/transport.hpp"

namespace envkit::locking {

namespace fs = std::filesystem;

std::vector<std::string> artifact_urls(const specs::Artifact& artifact,
                                       const std::vector<std::string>& mirrors) {
  std::vector<std::string> urls;
  for (const auto& mirror : mirrors)
    urls.push_back(net::artifact_mirror_url(mirror, artifact.url, artifact.sha256));
  urls.push_back(artifact.url);
  urls.insert(urls.end(), artifact.also_at.begin(), artifact.also_at.end());
  return urls;
}

namespace {

using HostAnswers = std::map<std::string, net::HostReachability>;

// A URL without a network host (file://) needs none; a host nobody answered for is unknown,
// and unknown is not a reason to change a lock or to warn.
bool reaches_url(const std::string& url, const HostAnswers& answers) {
  const auto host = net::reachability_host(url);
  if (host.empty()) return true;
  const auto it = answers.find(host);
  return it == answers.end() || it->second.reachable;
}

bool reaches_artifact(const specs::Artifact& artifact, const MachineSources& sources,
                      const HostAnswers& answers) {
  const auto urls = artifact_urls(artifact, sources.mirrors);
  return std::any_of(urls.begin(), urls.end(),
                     [&](const std::string& url) { return reaches_url(url, answers); });
}

// The unreachable hosts of `artifact`'s URLs, in the order tried, each once.
std::vector<std::string> unreached_hosts(const specs::Artifact& artifact,
                                         const MachineSources& sources,
                                         const HostAnswers& answers) {
  std::vector<std::string> hosts;
  for (const auto& url : artifact_urls(artifact, sources.mirrors)) {
    auto host = net::reachability_host(url);
    if (host.empty() || reaches_url(url, answers)) continue;
    if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(host);
  }
  return hosts;
}

// The components `artifact` holds: a runfile's list, else its own.
std::vector<std::string> components_held(const specs::Artifact& artifact) {
  if (artifact.kind == specs::ArtifactKind::runfile && !artifact.components.empty())
    return artifact.components;
  return {artifact.component};
}

// Whether one build's artifacts on one platform can be had here: every component has an
// artifact on a reachable host (`any`), a prebuilt one (`prebuilt`: not a source to build).
struct Obtainable {
  bool any = false;
  bool prebuilt = false;
};

Obtainable obtainable_from(const std::vector<specs::Artifact>& artifacts,
                           const MachineSources& sources, const HostAnswers& answers) {
  if (artifacts.empty()) return {};
  std::map<std::string, Obtainable> components;
  for (const auto& artifact : artifacts) {
    const bool reached = reaches_artifact(artifact, sources, answers);
    for (const auto& component : components_held(artifact)) {
      auto& entry = components[component];
      if (!reached) continue;
      entry.any = true;
      if (artifact.kind != specs::ArtifactKind::source) entry.prebuilt = true;
    }
  }
  Obtainable all{.any = true, .prebuilt = true};
  for (const auto& [component, entry] : components) {
    all.any = all.any && entry.any;
    all.prebuilt = all.prebuilt && entry.prebuilt;
  }
  return all;
}

// "github.com", "github.com and www.python.org", "a, b and c".
std::string and_list(const std::vector<std::string>& items) {
  if (items.size() <= 1) return items.empty() ? std::string() : items.front();
  const std::vector<std::string> first(items.begin(), items.end() - 1);
  return text::join(first, ", ") + " and " + items.back();
}

std::string python_minor(const specs::Version& version) {
  return fmt::format("{}.{}", version.major(), version.minor());
}

bool same_minor(const specs::Version& a, const specs::Version& b) {
  return a.major() == b.major() && a.minor() == b.minor();
}

// One package version's artifacts on one platform, per build (the solver picks the build).
using BuildArtifacts = std::map<std::string, std::vector<specs::Artifact>>;

// What the sources of package versions on each platform look like here: read once, asked once.
class SourceSurvey {
 public:
  SourceSurvey(const recipes::Database& database, const MachineSources& sources)
      : database_(database), sources_(sources) {}

  // Reads the artifacts of `name` `version` (all platforms); their URLs join the next ask().
  Result<void> add(const std::string& name, const specs::Version& version) {
    const auto key = std::pair(name, version.original());
    if (read_.contains(key)) return {};
    auto recipe = database_.load_version(name, version);
    if (!recipe) return recipe.error();
    auto& per_platform = read_[key];
    for (const auto& recipe_version : recipe->versions) {
      for (const auto& build : recipe_version.builds) {
        for (const auto& artifact : build.artifacts) {
          per_platform[artifact.platform][build.id].push_back(artifact);
          for (auto& url : artifact_urls(artifact, sources_.mirrors))
            urls_.push_back(std::move(url));
        }
      }
    }
    return {};
  }

  void add_urls(const std::vector<std::string>& urls) {
    urls_.insert(urls_.end(), urls.begin(), urls.end());
  }

  // Every host of the URLs gathered so far, asked at once.
  void ask() {
    if (urls_.empty()) return;
    auto answered = sources_.reach(urls_);
    for (auto& [host, answer] : answered)
      answers_.insert_or_assign(host, std::move(answer));
    urls_.clear();
  }

  [[nodiscard]] const BuildArtifacts* builds(const std::string& name, const specs::Version& version,
                                             specs::Platform platform) const {
    const auto it = read_.find(std::pair(name, version.original()));
    if (it == read_.end()) return nullptr;
    const auto on = it->second.find(platform);
    return on == it->second.end() ? nullptr : &on->second;
  }

  // The best any build of the version offers on `platform`; nullopt: no artifacts there.
  [[nodiscard]] std::optional<Obtainable> obtainable(const std::string& name,
                                                     const specs::Version& version,
                                                     specs::Platform platform) const {
    const auto* all = builds(name, version, platform);
    if (all == nullptr || all->empty()) return std::nullopt;
    Obtainable best;
    for (const auto& [build, artifacts] : *all) {
      const auto one = obtainable_from(artifacts, sources_, answers_);
      best.any = best.any || one.any;
      best.prebuilt = best.prebuilt || one.prebuilt;
    }
    return best;
  }

  // The hosts this machine does not reach among the version's URLs on `platform`.
  void collect_unreached(const std::string& name, const specs::Version& version,
                         specs::Platform platform, std::vector<std::string>& hosts) const {
    const auto* all = builds(name, version, platform);
    if (all == nullptr) return;
    for (const auto& [build, artifacts] : *all) {
      for (const auto& artifact : artifacts) {
        for (auto& host : unreached_hosts(artifact, sources_, answers_)) {
          if (std::find(hosts.begin(), hosts.end(), host) == hosts.end())
            hosts.push_back(std::move(host));
        }
      }
    }
  }

  // The reachable hosts a version's artifacts would come from on `platform`.
  [[nodiscard]] std::vector<std::string> reached_hosts(const std::string& name,
                                                       const specs::Version& version,
                                                       specs::Platform platform) const {
    std::vector<std::string> hosts;
    const auto* all = builds(name, version, platform);
    if (all == nullptr) return hosts;
    for (const auto& [build, artifacts] : *all) {
      for (const auto& artifact : artifacts) {
        for (const auto& url : artifact_urls(artifact, sources_.mirrors)) {
          auto host = net::reachability_host(url);
          if (host.empty() || !reaches_url(url, answers_)) continue;
          if (std::find(hosts.begin(), hosts.end(), host) == hosts.end())
            hosts.push_back(std::move(host));
          break;  // the first URL that answers is the one install takes
        }
      }
    }
    return hosts;
  }

  // Whether the version's download on `platform` is python-build-standalone's archive.
  [[nodiscard]] bool standalone(const std::string& name, const specs::Version& version,
                                specs::Platform platform) const {
    const auto* all = builds(name, version, platform);
    if (all == nullptr) return false;
    for (const auto& [build, artifacts] : *all) {
      for (const auto& artifact : artifacts) {
        if (artifact.layout == specs::Layout::python_standalone ||
            artifact.layout == specs::Layout::python_standalone_full)
          return true;
      }
    }
    return false;
  }

  [[nodiscard]] const HostAnswers& answers() const { return answers_; }

 private:
  const recipes::Database& database_;
  const MachineSources& sources_;
  std::map<std::pair<std::string, std::string>, std::map<specs::Platform, BuildArtifacts>> read_;
  std::vector<std::string> urls_;
  HostAnswers answers_;
};

// The inputs as the lock pipeline hands them to the solver before any closure: a Python
// for a project with Python requirements, and the framework builds the indexes cannot serve.
Result<LockInputs> as_solved(const recipes::Database& database, const LockInputs& inputs) {
  LockInputs trial = inputs;
  auto python = python_request(inputs);
  if (!python) return std::move(python).error();
  const auto& manifest = inputs.manifest;
  if (*python && !manifest.requires_.contains("python") && !manifest.external.contains("python"))
    trial.extra_requirements.push_back({"python", specs::VersionSpec{}, "requires"});
  auto unavailable = unavailable_builds(database, inputs);
  if (!unavailable) return std::move(unavailable).error();
  trial.unavailable.insert(trial.unavailable.end(), unavailable->begin(), unavailable->end());
  if (inputs.live_index) {
    auto not_served = releases_not_served(database, inputs, *inputs.live_index);
    if (!not_served) return std::move(not_served).error();
    trial.unavailable.insert(trial.unavailable.end(), not_served->begin(), not_served->end());
  }
  return trial;
}

// The solutions of `inputs`, or nullopt when they have none (or the solve fails: the lock
// itself then says why).
std::optional<std::map<specs::Platform, solve::Solution>> solutions_of(
    const recipes::Database& database, const LockInputs& inputs) {
  auto solved = solve_platforms(database, inputs);
  if (!solved || solved->failure) return std::nullopt;
  return std::move(solved->solutions);
}

// The version of `name` a solution chose from the database (not one the machine provides).
std::optional<specs::Version> chosen_version(const solve::Solution& solution,
                                             std::string_view name) {
  const auto* choice = solution.find(name);
  if (choice == nullptr || choice->external) return std::nullopt;
  return choice->version;
}

bool locks_this_machine_alone(const LockInputs& inputs, const MachineSources& sources) {
  return inputs.platforms.size() == 1 && inputs.platforms.front() == sources.platform;
}

std::string are(const std::vector<std::string>& hosts) {
  return hosts.size() == 1 ? "is" : "are";
}

std::string them(const std::vector<std::string>& hosts) {
  return hosts.size() == 1 ? "it" : "them";
}

// The decision about Python, made on the solutions of the inputs as they are.
class PythonChoice {
 public:
  PythonChoice(const recipes::Database& database, LockInputs& inputs, const LockInputs& trial,
               const MachineSources& sources, SourceSurvey& survey,
               const std::map<specs::Platform, solve::Solution>& first)
      : database_(database),
        inputs_(inputs),
        trial_(trial),
        sources_(sources),
        survey_(survey),
        first_(first) {}

  // The newest Python each platform would get; empty when none is chosen from the database.
  [[nodiscard]] std::map<specs::Platform, specs::Version> newest() const {
    std::map<specs::Platform, specs::Version> out;
    for (const auto& [platform, solution] : first_) {
      if (auto version = chosen_version(solution, "python")) out.emplace(platform, *version);
    }
    return out;
  }

  // The database's Pythons up to the newest any platform would get, newest first.
  [[nodiscard]] Result<std::vector<specs::Version>> candidates() const {
    const auto wanted = newest();
    std::optional<specs::Version> highest;
    for (const auto& [platform, version] : wanted) {
      if (!highest || version > *highest) highest = version;
    }
    std::vector<specs::Version> out;
    if (!highest) return out;
    auto facts = database_.facts("python");
    if (!facts) return facts.error();
    for (const auto& version : (*facts)->versions) {
      if (version.version <= *highest) out.push_back(version.version);
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return b < a; });
    return out;
  }

  Result<std::vector<std::string>> decide(const std::vector<specs::Version>& versions) {
    std::vector<std::string> notes;
    const auto wanted = newest();
    if (wanted.empty()) return notes;
    const bool newest_ok = std::all_of(wanted.begin(), wanted.end(), [&](const auto& entry) {
      const auto got = survey_.obtainable("python", entry.second, entry.first);
      return !got || got->any;
    });
    if (newest_ok) return notes;

    // Every release this machine can download nothing of (on any platform it has files
    // for) is a build the solver cannot use.
    std::vector<solve::UnavailableBuild> unreachable;
    for (const auto& version : versions) {
      bool has_files = false;
      bool any = false;
      std::vector<std::string> hosts;
      for (const auto& [platform, solution] : first_) {
        const auto got = survey_.obtainable("python", version, platform);
        if (!got) continue;
        has_files = true;
        any = any || got->any;
        survey_.collect_unreached("python", version, platform, hosts);
      }
      if (!has_files || any) continue;
      unreachable.push_back(
          {.package = "python",
           .version = version.original(),
           .build = {},
           .reason = fmt::format("this machine does not reach {} (its download{})", and_list(hosts),
                                 hosts.size() == 1 ? "" : "s"),
           .hint = {}});
    }
    LockInputs marked = trial_;
    marked.unavailable.insert(marked.unavailable.end(), unreachable.begin(), unreachable.end());
    const auto downloadable = solutions_of(database_, marked);

    // The hosts that keep the newest Python's minor from being downloaded here.
    const auto& [platform, top] = *wanted.begin();
    std::vector<std::string> hosts;
    for (const auto& version : versions) {
      if (same_minor(version, top)) survey_.collect_unreached("python", version, platform, hosts);
    }
    const auto elsewhere =
        survey_.standalone("python", top, platform)
            ? fmt::format("python-build-standalone's {}", top.original())
            : fmt::format("CPython {} (from its source tarball)", top.original());

    // A prebuilt release of the same minor (a mirror has it): the newest of those.
    if (downloadable && prebuilt_of_same_minor(*downloadable, wanted)) {
      inputs_.unavailable.insert(inputs_.unavailable.end(), unreachable.begin(), unreachable.end());
      const auto taken = *chosen_version(downloadable->at(platform), "python");
      notes.push_back(fmt::format(
          "python {} is the newest CPython {} this machine can download (from {}): {} {} not "
          "reachable, so {} cannot be; on a machine that reaches {}, `envkit lock --refresh` "
          "takes {}",
          taken.original(), python_minor(taken),
          and_list(survey_.reached_hosts("python", taken, platform)), and_list(hosts), are(hosts),
          top.original(), them(hosts), elsewhere));
      return notes;
    }

    // The machine's own interpreter of the newest minor allowed that it has.
    if (locks_this_machine_alone(inputs_, sources_) && sources_.interpreter) {
      std::vector<specs::Version> minors;
      for (const auto& version : versions) {
        if (std::none_of(minors.begin(), minors.end(),
                         [&](const auto& m) { return same_minor(m, version); }))
          minors.push_back(version);
      }
      // Every allowed minor the machine has, newest first: the Python walk takes the next
      // where the closure does not resolve for one (take_older_machine_python).
      const bool source_build = downloadable && source_of_same_minor(*downloadable, top);
      std::vector<LockInputs::MachinePython> candidates;
      for (const auto& minor : minors) {
        const auto interpreter = sources_.interpreter(minor);
        if (!interpreter) continue;
        LockInputs provided = trial_;
        auto why = fmt::format("{}, from {}: this machine cannot download a CPython {}",
                               interpreter->path.string(), interpreter->source, python_minor(top));
        provided.external.insert_or_assign("python", solve::External{interpreter->version, why});
        if (!solutions_of(database_, provided)) continue;
        std::string newer;
        if (!candidates.empty()) {
          newer = fmt::format(", and the closure does not resolve for its newer {}",
                              candidates.size() == 1 ? "Python" : "Pythons");
        } else if (!same_minor(interpreter->version, top)) {
          newer = fmt::format(", and {} is the newest minor envkit.yaml allows that it has",
                              python_minor(interpreter->version));
        }
        auto note = fmt::format(
            "python {} is this machine's {}: {} {} not reachable, so no {}CPython {} can be "
            "downloaded{}; on a machine that reaches {}, `envkit lock --refresh` takes {}",
            interpreter->version.original(), interpreter->path.string(), and_list(hosts),
            are(hosts), source_build ? "prebuilt " : "", python_minor(top), newer, them(hosts),
            candidates.empty() ? elsewhere : std::string("a download instead"));
        candidates.push_back({.path = interpreter->path,
                              .version = interpreter->version,
                              .why = std::move(why),
                              .note = std::move(note)});
      }
      if (!candidates.empty()) {
        const auto& first = candidates.front();
        inputs_.external.insert_or_assign("python", solve::External{first.version, first.why});
        // The Python the pipeline would have required for `python-requirements` stays required.
        if (trial_.extra_requirements.size() > inputs_.extra_requirements.size())
          inputs_.extra_requirements.push_back({"python", specs::VersionSpec{}, "requires"});
        inputs_.manifest.external.insert_or_assign("python", manifest::ExternalPath{first.path});
        notes.push_back(first.note);
        inputs_.machine_pythons = std::move(candidates);
        return notes;
      }
    }

    // Whatever release can be downloaded at all (a source tarball to build).
    if (downloadable) {
      const auto taken = chosen_version(downloadable->at(platform), "python");
      if (!taken) return notes;
      inputs_.unavailable.insert(inputs_.unavailable.end(), unreachable.begin(), unreachable.end());
      notes.push_back(fmt::format(
          "python {} is the newest CPython this machine can download (from {}){}: {} {} not "
          "reachable, so {} cannot be; on a machine that reaches {}, `envkit lock --refresh` "
          "takes {}",
          taken->original(), and_list(survey_.reached_hosts("python", *taken, platform)),
          survey_.obtainable("python", *taken, platform).value_or(Obtainable{}).prebuilt
              ? ""
              : ", built from source at install",
          and_list(hosts), are(hosts), top.original(), them(hosts), elsewhere));
    }
    return notes;
  }

 private:
  [[nodiscard]] bool prebuilt_of_same_minor(
      const std::map<specs::Platform, solve::Solution>& solutions,
      const std::map<specs::Platform, specs::Version>& wanted) const {
    return std::all_of(wanted.begin(), wanted.end(), [&](const auto& entry) {
      const auto it = solutions.find(entry.first);
      if (it == solutions.end()) return false;
      const auto taken = chosen_version(it->second, "python");
      if (!taken || !same_minor(*taken, entry.second)) return false;
      const auto got = survey_.obtainable("python", *taken, entry.first);
      return got && got->prebuilt;
    });
  }

  [[nodiscard]] bool source_of_same_minor(
      const std::map<specs::Platform, solve::Solution>& solutions,
      const specs::Version& top) const {
    const auto it = solutions.find(sources_.platform);
    if (it == solutions.end()) return false;
    const auto taken = chosen_version(it->second, "python");
    return taken && same_minor(*taken, top);
  }

  const recipes::Database& database_;
  LockInputs& inputs_;
  const LockInputs& trial_;
  const MachineSources& sources_;
  SourceSurvey& survey_;
  const std::map<specs::Platform, solve::Solution>& first_;
};

}  // namespace

Result<std::vector<std::string>> prefer_obtainable(const recipes::Database& database,
                                                   LockInputs& inputs,
                                                   const MachineSources& sources) {
  std::vector<std::string> notes;
  // A lock for every machine of a fleet (`system:`), or for another machine
  // (ENVKIT_OVERRIDE_*), is not this machine's to shape.
  if (inputs.facts.source != specs::FactSource::host &&
      inputs.facts.source != specs::FactSource::none)
    return notes;
  const bool python_given = inputs.manifest.external.contains("python");
  const bool zlib_given = inputs.manifest.external.contains("zlib");
  if ((python_given && zlib_given) || !sources.reach) return notes;
  // What the lock fails on (a requirement file it cannot read, no solution) it says itself.
  auto trial = as_solved(database, inputs);
  if (!trial) return notes;
  const auto first = solutions_of(database, *trial);
  if (!first) return notes;

  SourceSurvey survey(database, sources);
  PythonChoice python(database, inputs, *trial, sources, survey, *first);
  std::vector<specs::Version> pythons;
  if (!python_given) {
    auto candidates = python.candidates();
    if (!candidates) return candidates.error();
    pythons = *std::move(candidates);
    for (const auto& version : pythons) {
      if (auto added = survey.add("python", version); !added) return added.error();
    }
  }
  // Everything else the solution would fetch is asked in the same round: the warning
  // after the lock then finds its answers kept.
  for (const auto& [platform, solution] : *first) {
    for (const auto& choice : solution.packages) {
      if (choice.external || choice.name == "python" || !database.contains(choice.name)) continue;
      if (auto added = survey.add(choice.name, choice.version); !added) return added.error();
    }
  }
  survey.ask();

  if (!python_given) {
    auto decided = python.decide(pythons);
    if (!decided) return decided.error();
    notes = *std::move(decided);
  }

  // zlib: the machine's own where the chosen one's source cannot be downloaded.
  if (zlib_given || !sources.zlib || !locks_this_machine_alone(inputs, sources)) return notes;
  const auto on = first->find(sources.platform);
  if (on == first->end()) return notes;
  const auto zlib = chosen_version(on->second, "zlib");
  if (!zlib) return notes;
  const auto got = survey.obtainable("zlib", *zlib, sources.platform);
  if (!got || got->any) return notes;
  const auto machine = sources.zlib();
  if (!machine) return notes;
  std::vector<std::string> hosts;
  survey.collect_unreached("zlib", *zlib, sources.platform, hosts);
  auto with_zlib = as_solved(database, inputs);
  if (!with_zlib) return notes;
  const auto why =
      fmt::format("{}: this machine cannot download zlib's source", machine->path.string());
  with_zlib->external.insert_or_assign("zlib", solve::External{machine->version, why});
  if (!solutions_of(database, *with_zlib)) return notes;
  inputs.external.insert_or_assign("zlib", solve::External{machine->version, why});
  inputs.manifest.external.insert_or_assign("zlib", machine->version);
  notes.push_back(fmt::format(
      "zlib {} is this machine's {}: {} {} not reachable, so zlib {}'s source cannot be "
      "downloaded; on a machine that reaches {}, `envkit lock --refresh` builds zlib {} from "
      "source",
      machine->version.original(), machine->path.string(), and_list(hosts), are(hosts),
      zlib->original(), them(hosts), zlib->original()));
  return notes;
}

bool take_older_machine_python(LockInputs& inputs, const specs::Version& failed) {
  const auto older = std::find_if(
      inputs.machine_pythons.begin(), inputs.machine_pythons.end(), [&](const auto& candidate) {
        return std::pair(candidate.version.major(), candidate.version.minor()) <
               std::pair(failed.major(), failed.minor());
      });
  if (older == inputs.machine_pythons.end()) return false;
  inputs.external.insert_or_assign("python", solve::External{older->version, older->why});
  inputs.manifest.external.insert_or_assign("python", manifest::ExternalPath{older->path});
  return true;
}

std::vector<std::string> obtainable_notes(const LockInputs& inputs,
                                          const lock::Lockfile& lockfile) {
  auto notes = inputs.notes;
  if (inputs.machine_pythons.empty()) return notes;
  const auto& first = inputs.machine_pythons.front().note;
  for (const auto& platform : lockfile.platforms) {
    for (const auto& package : platform.packages) {
      if (package.name != "python" || !package.external) continue;
      for (const auto& candidate : inputs.machine_pythons) {
        if (candidate.path.string() != *package.external) continue;
        std::replace(notes.begin(), notes.end(), first, candidate.note);
      }
    }
  }
  return notes;
}

namespace {

// "cuda 12.1.1 (cuda_cudart, archive)", "python 3.11.16", "zlib 1.3.1".
std::string artifact_label(const lock::LockedPackage& package, const specs::Artifact& artifact) {
  auto label = fmt::format("{} {}", package.name, package.version.original());
  if (artifact.component != package.name)
    label += fmt::format(" ({}, {})", artifact.component, specs::to_string(artifact.kind));
  return label;
}

// "github.com: Could not resolve host: github.com".
std::string why_unreached(const std::vector<std::string>& hosts, const HostAnswers& answers) {
  std::vector<std::string> parts;
  for (const auto& host : hosts) {
    const auto it = answers.find(host);
    const auto& reason = it == answers.end() ? std::string() : it->second.reason;
    parts.push_back(reason.empty() ? host : fmt::format("{}: {}", host, reason));
  }
  return text::join(parts, "; ");
}

}  // namespace

std::optional<std::string> unreachable_sources(const lock::Lockfile& lockfile,
                                               const MachineSources& sources) {
  if (!sources.reach) return std::nullopt;
  std::vector<std::string> urls;
  for (const auto& platform : lockfile.platforms) {
    for (const auto& package : platform.packages) {
      for (const auto& artifact : package.artifacts) {
        auto more = artifact_urls(artifact, sources.mirrors);
        urls.insert(urls.end(), more.begin(), more.end());
      }
    }
    if (!platform.python) continue;
    for (const auto& wheel : platform.python->packages) {
      auto more = artifact_urls(lock::wheel_artifact(wheel, platform.platform), sources.mirrors);
      urls.insert(urls.end(), more.begin(), more.end());
    }
  }
  if (urls.empty()) return std::nullopt;
  const auto answers = sources.reach(urls);
  const bool several = lockfile.platforms.size() > 1;
  std::vector<std::string> lines;
  const auto line = [&](const specs::Platform platform, const std::string& label,
                        const specs::Artifact& artifact) {
    const auto hosts = unreached_hosts(artifact, sources, answers);
    lines.push_back(fmt::format("  {}{}: {} ({})", label,
                                several ? fmt::format(" on {}", specs::to_string(platform)) : "",
                                artifact.url, why_unreached(hosts, answers)));
  };
  for (const auto& platform : lockfile.platforms) {
    for (const auto& package : platform.packages) {
      if (package.external) continue;
      // A component is had when any artifact holding it answers (NVIDIA's wheel of a CUDA
      // component whose archive does not): install falls back to it.
      std::set<std::string> reached;
      for (const auto& artifact : package.artifacts) {
        if (!reaches_artifact(artifact, sources, answers)) continue;
        for (const auto& component : components_held(artifact))
          reached.insert(component);
      }
      for (const auto& artifact : package.artifacts) {
        const auto held = components_held(artifact);
        if (std::all_of(held.begin(), held.end(),
                        [&](const std::string& c) { return reached.contains(c); }))
          continue;
        if (reaches_artifact(artifact, sources, answers)) continue;
        line(platform.platform, artifact_label(package, artifact), artifact);
      }
    }
    if (!platform.python) continue;
    for (const auto& wheel : platform.python->packages) {
      const auto artifact = lock::wheel_artifact(wheel, platform.platform);
      if (reaches_artifact(artifact, sources, answers)) continue;
      line(platform.platform, fmt::format("Python package {} {}", wheel.name, wheel.version),
           artifact);
    }
  }
  if (lines.empty()) return std::nullopt;
  return fmt::format(
      "{} locked artifact{} {} only on hosts this machine does not reach, so `envkit install` "
      "cannot download {} here:\n{}\n"
      "  fixes: a mirror that holds {} (`envkit install --mirror URL`, or `mirrors:` in "
      ".envkit/config.yaml), made by `envkit mirror --out DIR` on a machine that reaches {}; or "
      "what this machine already has, declared under `external:` in envkit.yaml "
      "(docs/manifest.md)",
      lines.size(), lines.size() == 1 ? "" : "s", lines.size() == 1 ? "is" : "are",
      lines.size() == 1 ? "it" : "them", text::join(lines, "\n"), lines.size() == 1 ? "it" : "them",
      lines.size() == 1 ? "its host" : "their hosts");
}

std::optional<MachineLibrary> machine_zlib() {
  // Opened and kept: the process may use it again, and closing gains nothing.
  void* handle = ::dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return std::nullopt;
  using VersionFunction = const char* (*)();
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast)
  const auto zlib_version = reinterpret_cast<VersionFunction>(::dlsym(handle, "zlibVersion"));
  if (zlib_version == nullptr) return std::nullopt;
  const char* said = zlib_version();
  if (said == nullptr) return std::nullopt;
  auto version = specs::Version::parse(said);
  if (!version) return std::nullopt;
  MachineLibrary library{.version = *std::move(version), .path = "libz.so.1"};
  Dl_info info{};
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast)
  if (::dladdr(reinterpret_cast<void*>(zlib_version), &info) != 0 && info.dli_fname != nullptr)
    library.path = info.dli_fname;
  return library;
}

}  // namespace envkit::locking
