#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/net/reachability.hpp"
#include "envkit/specs/version.hpp"
#include "envkit/store/cache.hpp"
#include "envkit/store/plan.hpp"

// Where each package of an install comes from, decided before anything is
// downloaded (docs/install.md#sources-and-reachability). The hosts of every
// artifact still to download are asked at once whether they answer; each
// package takes the first of its alternatives this machine can have: the
// preferred packaging, the other one (NVIDIA's archives <-> NVIDIA's wheels),
// and, where the lock's own artifacts cannot be had, the machine's own
// interpreter of the same minor (python) or its libz.so.1 (zlib). Where a
// package has none, the install stops having downloaded nothing, naming every
// artifact it cannot reach and the fixes.
namespace envkit::install {

// Something of this machine that can stand in for a package's artifacts.
struct MachineOffer {
  std::filesystem::path path;  // the interpreter, or libz.so.1 as the loader found it
  std::string version;         // what it says it is: "3.11.7", "1.2.13"
  std::string source;          // where it was found: "pyenv", "the dynamic loader"
};

// What the decision asks of this machine and its network. install() asks the
// real machine (machine_probe); tests answer with fakes.
struct SourceProbe {
  // Per host (net::reachability_host) of `urls`, all asked at once.
  std::function<std::map<std::string, net::HostReachability>(const std::vector<std::string>& urls)>
      reach;
  // The machine's interpreter of `version`'s major.minor that can make a venv;
  // an error saying why there is none.
  std::function<Result<MachineOffer>(const specs::Version& version)> python;
  // Every interpreter the machine has, newest first (for the `external:` hint).
  std::function<std::vector<MachineOffer>()> pythons;
  // The machine's zlib (libz.so.1 as the dynamic loader finds it); an error
  // saying why there is none.
  std::function<Result<MachineOffer>()> zlib;
};

// The real machine: `reachability` for the hosts (its cache file, time to
// live, --refresh, CA), python::machine_interpreter, dlopen("libz.so.1").
[[nodiscard]] SourceProbe machine_probe(const net::ReachabilityOptions& reachability);

// The machine's zlib: libz.so.1 as the dynamic loader finds it, and the
// version its zlibVersion() answers.
[[nodiscard]] Result<MachineOffer> machine_zlib();

struct SourceOptions {
  std::vector<std::string> mirrors;  // asked first for every artifact (candidate_urls)
  // `packaging: auto`: archives where their host answers, wheels where only
  // theirs do, and said only with -v. False: the packaging asked for, the other
  // taken when it cannot be had and said so (`fell_back`).
  bool auto_packaging = true;
};

// Where one package comes from.
struct SourceDecision {
  std::string package;  // "cuda"
  std::string version;  // "12.4.1"
  // "archive", "wheel", "runfile", "source", "pip" (a wheel of the Python
  // closure), or "machine" (the machine's interpreter or library stands in).
  std::string from;
  // Why, in a few words: "developer.download.nvidia.com answers", "in the
  // cache", "its archives cannot be had: github.com is not reachable (...)".
  std::string why;
};

struct SourcePlan {
  std::vector<SourceDecision> decisions;  // one per package to fill, in the plan's order
  // The asked-for packaging could not be had: "cuda: installed from wheels, its
  // archives were unreachable (...)".
  std::vector<std::string> fell_back;
  // "python 3.11.16: the machine's /usr/bin/python3.11 (3.11.2) stands in:
  // github.com is not reachable".
  std::vector<std::string> stand_ins;
};

// Decides where every package of `plan` still to install comes from, and makes
// `plan` say so (the packaging switched, a stand-in in place of the lock's
// artifacts). Artifacts already in `cache` need no host. Fails (exit 1) before
// any download when a package has no alternative this machine can have,
// naming every artifact it cannot reach, with its URL and why, and the fixes.
[[nodiscard]] Result<SourcePlan> decide_sources(store::InstallPlan& plan,
                                                const lock::PlatformLock& lock,
                                                const store::Cache& cache,
                                                const SourceOptions& options,
                                                const SourceProbe& probe);

// "cuda 12.4.1 from wheels: developer.download.nvidia.com is not reachable (...)": how -v says it.
[[nodiscard]] std::string decision_line(const SourceDecision& decision);

}  // namespace envkit::install
