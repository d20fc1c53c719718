#pragma once

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/recipes/database.hpp"
#include "envkit/specs/fact_source.hpp"
#include "envkit/specs/platform.hpp"
#include "envkit/specs/version.hpp"
#include "envkit/specs/version_spec.hpp"

// Solving a project's requirements against the recipe database and the facts
// of the machines it must run on (docs/how-it-works.md). The machine is part of
// the problem: the NVIDIA driver is the virtual package `__driver` (CUDA
// versions require a minimum driver), glibc the virtual package `__glibc` (builds
// whose manylinux wheels need one), the GPUs' compute capabilities rule out
// builds without code for them, and the platform rules out versions without
// artifacts for it.
namespace envkit::solve {

// One GPU of the machines the lock serves.
struct GpuFact {
  specs::ComputeCapability capability;
  std::string name;  // "NVIDIA GeForce GTX 1080 Ti"; empty when only the capability is known
};

struct SystemFacts {
  // The lowest NVIDIA driver among the machines; absent: unknown, no constraint.
  std::optional<specs::Version> driver;
  // The driver as the manifest writes it (`390.48`, `>=390.30`); empty otherwise.
  std::string driver_written;
  std::vector<GpuFact> gpus;
  // The lowest glibc among the machines (envkit.yaml system.glibc, ENVKIT_OVERRIDE_GLIBC);
  // absent: not stated, builds are not checked (the lock records what they need).
  std::optional<specs::Version> glibc;
  std::string glibc_written;  // as stated: `>=2.28`, `2.26`
  // This machine's facts (host, override) or every machine's (manifest).
  specs::FactSource source = specs::FactSource::host;
};

// Where a requirement that is not envkit.yaml's own is written: a line of a
// file envkit.yaml lists under `python-requirements` (docs/solver.md,
// "Requirements that name a CUDA").
struct WrittenAt {
  std::string location;  // "requirements.txt:3"
  std::string text;      // the requirement there: "jax[cuda11_cudnn86]>=0.4.2"
};

// A requirement of the project: envkit.yaml's, or one a requirement file's line implies.
struct Requirement {
  std::string package;
  specs::VersionSpec spec;
  // How it is stated: envkit.yaml's "framework" or "requires", "wheels" (a pin
  // of the framework's wheels, which no hint proposes to drop), or
  // "python-requirements" (a line that names a CUDA; `written_at` says which).
  std::string origin;
  // Set for a line of a requirement file: explanations and hints name that line,
  // never envkit.yaml, which does not have it.
  std::optional<WrittenAt> written_at;
  // The platforms it holds on (the line's environment marker); empty: every platform.
  std::vector<specs::Platform> platforms;
};

// A package the machine provides (envkit.yaml `external:`), resolved to a version.
struct External {
  specs::Version version;
  std::string description;  // "given in envkit.yaml", "python3 on PATH (/usr/bin/python3)"
};

// A build the lock cannot use although the database has it: its wheels are not
// what the configured package indexes serve (torch 2.4.1 from PyPI is the cu121
// build, so its cu124 build is unavailable unless PyTorch's cu124 index is listed).
struct UnavailableBuild {
  std::string package;
  std::string version;  // as the database spells it
  std::string build;    // build id; empty: every build of the version
  std::string reason;   // "the configured indexes serve torch 2.4.1 as its cu121 build"
  std::string hint;     // what would make it available; empty when nothing would
};

struct Request {
  specs::Platform platform = specs::Platform::linux_x86_64;
  std::vector<Requirement> requirements;
  std::map<std::string, External> external;
  SystemFacts system;
  std::vector<UnavailableBuild> unavailable;
};

struct Choice {
  std::string name;
  specs::Version version;
  std::string build;                    // build id; empty when the version has one build
  std::optional<std::string> external;  // set when the machine provides it: how it was found
  std::map<std::string, specs::VersionSpec> requires_;  // on the request's platform
  // Why this version: the requirements and facts that narrowed it, then the
  // preference that picked it among what was left.
  std::vector<std::string> because;
};

struct Solution {
  std::vector<Choice> packages;  // sorted by name; virtual packages left out
  [[nodiscard]] const Choice* find(std::string_view name) const;
};

// What following a hint changes in the request, so that the lock pipeline can check it
// against the whole lock (the Python closure included) before it is printed.
struct HintChange {
  enum class Kind : std::uint8_t {
    none,         // not a change of the request (an index to add, a Python to declare)
    requirement,  // requirements[index]'s spec becomes `spec` (nullopt: it is dropped)
    driver,       // the machines' driver becomes `driver`
  };
  Kind kind = Kind::none;
  std::size_t index = 0;
  std::optional<specs::VersionSpec> spec;
  std::optional<specs::Version> driver;
};

struct Unsolvable {
  std::string summary;                   // "no environment satisfies envkit.yaml on linux-x86_64"
  std::vector<std::string> explanation;  // the derivation, one sentence a line
  std::vector<std::string> hints;        // what would make it solvable, each checked by solving
  std::vector<HintChange> changes;       // what following hints[i] changes, for each i
};

using Outcome = std::variant<Solution, Unsolvable>;

// Solves `request`. Errors are for broken recipe files; an unsatisfiable
// request is an Unsolvable, not an error.
[[nodiscard]] Result<Outcome> solve(const recipes::Database& database, const Request& request);

}  // namespace envkit::solve
