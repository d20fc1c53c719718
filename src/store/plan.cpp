#include "envkit/store/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "envkit/core/text.hpp"

namespace envkit::store {

namespace {

using specs::Artifact;
using specs::ArtifactKind;

std::optional<Packaging> packaging_of(ArtifactKind kind) {
  if (kind == ArtifactKind::archive) return Packaging::archive;
  if (kind == ArtifactKind::wheel) return Packaging::wheel;
  if (kind == ArtifactKind::source) return Packaging::source;
  if (kind == ArtifactKind::runfile) return Packaging::runfile;
  return std::nullopt;
}

std::vector<Artifact> of_packaging(const lock::LockedPackage& package, Packaging packaging) {
  std::vector<Artifact> out;
  for (const auto& artifact : package.artifacts) {
    if (packaging_of(artifact.kind) == packaging) out.push_back(artifact);
  }
  return out;
}

std::set<std::string> components_of(const std::vector<Artifact>& artifacts) {
  std::set<std::string> components;
  for (const auto& artifact : artifacts)
    components.insert(artifact.component);
  return components;
}

// Patches count: a lock that adds one to a runfile changes what is installed.
std::set<std::string> hashes_of(const std::vector<Artifact>& artifacts) {
  std::set<std::string> hashes;
  for (const auto& artifact : artifacts) {
    hashes.insert(artifact.sha256);
    for (const auto& patch : artifact.patches)
      hashes.insert(patch.sha256);
  }
  return hashes;
}

const Artifact* find_kind(const lock::LockedPackage& package, ArtifactKind kind) {
  const auto it = std::find_if(package.artifacts.begin(), package.artifacts.end(),
                               [&](const Artifact& artifact) { return artifact.kind == kind; });
  return it == package.artifacts.end() ? nullptr : &*it;
}

// A lock written before envkit unpacked runfiles records them without the layout
// of their era, which the unpacker needs.
Error runfile_without_layout(const lock::LockedPackage& package, const Artifact& runfile) {
  return Error::failed(fmt::format("{} {}: envkit.lock does not say how to unpack its runfile",
                                   package.name, package.version.original()))
      .because(fmt::format("the lock records {} with `layout: none`, as envkit wrote runfiles "
                           "before it could unpack them",
                           runfile.url))
      .hint("run `envkit lock` to record the runfile's layout, components and patches");
}

std::set<std::string> receipt_hashes(const PackageReceipt& receipt) {
  std::set<std::string> hashes;
  for (const auto& artifact : receipt.artifacts) {
    hashes.insert(artifact.sha256);
    for (const auto& patch : artifact.patches)
      hashes.insert(patch.sha256);
  }
  return hashes;
}

// Which packaging to use: the one installed already if it still matches,
// else the preferred one if it covers everything the package has, else the other.
std::optional<Packaging> choose(const std::vector<Artifact>& archives,
                                const std::vector<Artifact>& wheels, Packaging preferred,
                                const PackageReceipt* installed) {
  if (installed) {
    const auto hashes = receipt_hashes(*installed);
    if (!archives.empty() && hashes == hashes_of(archives)) return Packaging::archive;
    if (!wheels.empty() && hashes == hashes_of(wheels)) return Packaging::wheel;
  }
  const auto& first = preferred == Packaging::archive ? archives : wheels;
  const auto& second = preferred == Packaging::archive ? wheels : archives;
  const Packaging other = preferred == Packaging::archive ? Packaging::wheel : Packaging::archive;
  if (!first.empty() &&
      (second.empty() || components_of(second).size() <= components_of(first).size()))
    return preferred;
  if (!second.empty()) return other;
  return std::nullopt;
}

using Receipts = std::map<std::string, const PackageReceipt*>;

const PackageReceipt* receipt_of(const Receipts& receipts, const std::string& name) {
  const auto it = receipts.find(name);
  return it == receipts.end() ? nullptr : it->second;
}

// The closure's wheels by name; empty without a closure.
std::map<std::string, const lock::PythonWheel*> python_closure(const lock::PlatformLock& lock) {
  std::map<std::string, const lock::PythonWheel*> wheels;
  if (!lock.python) return wheels;
  for (const auto& wheel : lock.python->packages)
    wheels.emplace(wheel.name, &wheel);
  return wheels;
}

// `external: {python: system}` or a path: the prefix is made a venv of it.
// A bare version (`3.6.9`) names no interpreter: nothing to do.
std::optional<PlannedPackage> plan_venv(const lock::LockedPackage& package,
                                        const PackageReceipt* receipt) {
  const auto& external = *package.external;
  const bool names_interpreter = external == "system" || external.find('/') != std::string::npos;
  if (package.name != "python" || !names_interpreter) return std::nullopt;
  PlannedPackage venv{.name = package.name,
                      .version = package.version.original(),
                      .build = {},
                      .packaging = Packaging::venv,
                      .artifacts = {},
                      .external = external};
  venv.unchanged = receipt && receipt->packaging == "venv" && receipt->version == venv.version &&
                   receipt->build == external;
  venv.build = external;
  return venv;
}

// A stand-in installed before for `package` (install/sources.hpp): a venv of a
// machine interpreter for the lock's own Python, the machine's libz.so.1 for
// zlib. It stays, unchanged, while the lock's version is the one it stood in for.
std::optional<PlannedPackage> kept_stand_in(const lock::LockedPackage& package,
                                            const PackageReceipt* receipt) {
  const auto version = package.version.original();
  if (!receipt || receipt->version != version || receipt->build.empty()) return std::nullopt;
  const bool venv = package.name == "python" && receipt->packaging == "venv";
  if (!venv && receipt->packaging != "machine") return std::nullopt;
  PlannedPackage kept{.name = package.name,
                      .version = version,
                      .build = receipt->build,
                      .packaging = venv ? Packaging::venv : Packaging::machine,
                      .artifacts = {},
                      .external = receipt->build,
                      .stand_in = true};
  kept.unchanged = true;
  return kept;
}

// Moves the artifacts that are wheels of the closure to `provided`: pip
// installs them once and the package links to what pip installed.
void split_provided(PlannedPackage& planned,
                    const std::map<std::string, const lock::PythonWheel*>& closure) {
  std::map<std::string, std::string> wheel_by_hash;
  for (const auto& [name, wheel] : closure) {
    if (wheel->provides == planned.name) wheel_by_hash.emplace(wheel->sha256, name);
  }
  if (wheel_by_hash.empty()) return;
  std::vector<Artifact> kept;
  for (auto& artifact : planned.artifacts) {
    const auto it = wheel_by_hash.find(artifact.sha256);
    if (it == wheel_by_hash.end()) {
      kept.push_back(std::move(artifact));
    } else {
      planned.provided.push_back({.artifact = std::move(artifact), .wheel = it->second});
    }
  }
  planned.artifacts = std::move(kept);
  planned.fallback.reset();  // the other packaging would be a second copy
}

// The closure's wheels, for the prefix's pip. They change with the interpreter:
// a new Python needs every wheel installed again.
Result<void> plan_wheels(const lock::PlatformLock& lock, const Receipts& receipts,
                         InstallPlan& plan, std::set<std::string>& wanted) {
  if (!lock.python) return {};
  const auto interpreter = std::find_if(plan.packages.begin(), plan.packages.end(),
                                        [](const PlannedPackage& p) { return p.name == "python"; });
  if (interpreter == plan.packages.end()) {
    return Error::failed(fmt::format("the lock has Python packages for {} but no Python to "
                                     "install them with",
                                     specs::to_string(lock.platform)))
        .hint(
            "declare the machine's Python (`external: {python: system}`) or let envkit install "
            "one, then run `envkit lock` again");
  }
  const bool same_interpreter = interpreter->unchanged;
  std::set<std::string> changed;
  for (const auto& wheel : lock.python->packages) {
    PlannedPackage planned{.name = wheel.name,
                           .version = wheel.version,
                           .build = {},
                           .packaging = Packaging::pip,
                           .artifacts = {lock::wheel_artifact(wheel, lock.platform)}};
    const auto* receipt = receipt_of(receipts, wheel.name);
    planned.unchanged = same_interpreter && receipt && receipt->packaging == "pip" &&
                        receipt->version == wheel.version &&
                        receipt_hashes(*receipt) == hashes_of(planned.artifacts);
    if (!planned.unchanged) changed.insert(wheel.name);
    wanted.insert(wheel.name);
    plan.packages.push_back(std::move(planned));
  }
  // A package linked to a wheel pip installs again must be linked again.
  for (auto& package : plan.packages) {
    for (const auto& provided : package.provided) {
      if (changed.contains(provided.wheel)) package.unchanged = false;
    }
  }
  return {};
}

}  // namespace

std::string_view to_string(Packaging packaging) {
  switch (packaging) {
    case Packaging::archive:
      return "archive";
    case Packaging::wheel:
      return "wheel";
    case Packaging::source:
      return "source";
    case Packaging::runfile:
      return "runfile";
    case Packaging::pip:
      return "pip";
    case Packaging::venv:
      return "venv";
    case Packaging::machine:
      return "machine";
  }
  return "archive";
}

std::optional<Packaging> packaging_for(const lock::LockedPackage& package, Packaging preferred) {
  return choose(of_packaging(package, Packaging::archive), of_packaging(package, Packaging::wheel),
                preferred, nullptr);
}

bool InstallPlan::nothing_to_do() const {
  return removed.empty() && std::all_of(packages.begin(), packages.end(),
                                        [](const PlannedPackage& p) { return p.unchanged; });
}

Result<InstallPlan> plan_install(const lock::PlatformLock& lock,
                                 const std::optional<PrefixState>& installed, Packaging preferred,
                                 bool reinstall) {
  std::map<std::string, const PackageReceipt*> receipts;
  if (installed) {
    for (const auto& receipt : installed->packages)
      receipts[receipt.name] = &receipt;
  }
  InstallPlan plan;
  std::set<std::string> wanted;
  const auto closure = python_closure(lock);
  for (const auto& package : lock.packages) {
    const auto version = package.version.original();
    if (package.external) {
      // The machine's Python becomes a venv in the prefix; anything else
      // external is the machine's business.
      if (auto venv = plan_venv(package, receipt_of(receipts, package.name))) {
        wanted.insert(package.name);
        plan.packages.push_back(*std::move(venv));
      }
      continue;
    }
    if (package.artifacts.empty()) {
      if (!closure.contains(package.name)) {
        plan.skipped.push_back(fmt::format(
            "{} {} is a Python package and the lock has no Python closure for this platform; "
            "run `envkit lock` on a machine of this platform",
            package.name, version));
      }
      continue;
    }
    const auto archives = of_packaging(package, Packaging::archive);
    const auto wheels = of_packaging(package, Packaging::wheel);
    // Without archives or wheels: NVIDIA's runfile (CUDA before 11.4.2), or sources
    // (zlib, CPython) built at install with the host's compiler.
    const auto* runfile = find_kind(package, ArtifactKind::runfile);
    if (archives.empty() && wheels.empty() && runfile && !specs::unpackable(*runfile)) {
      return runfile_without_layout(package, *runfile);
    }
    const auto it = receipts.find(package.name);
    const PackageReceipt* receipt = it == receipts.end() ? nullptr : it->second;
    if (auto kept = reinstall ? std::nullopt : kept_stand_in(package, receipt)) {
      wanted.insert(package.name);
      plan.packages.push_back(*std::move(kept));
      continue;
    }
    const auto packaging = !archives.empty() || !wheels.empty()
                               ? choose(archives, wheels, preferred, receipt)
                           : runfile ? std::optional(Packaging::runfile)
                                     : std::optional(Packaging::source);
    PlannedPackage planned{.name = package.name,
                           .version = version,
                           .build = package.build,
                           .packaging = *packaging,
                           .artifacts = of_packaging(package, *packaging)};
    const auto& other = *packaging == Packaging::archive ? wheels : archives;
    if (!other.empty() && components_of(other) == components_of(planned.artifacts))
      planned.fallback = other;
    planned.unchanged = receipt && receipt->version == version && receipt->build == package.build &&
                        receipt_hashes(*receipt) == hashes_of(planned.artifacts);
    split_provided(planned, closure);
    wanted.insert(package.name);
    plan.packages.push_back(std::move(planned));
  }
  if (auto added = plan_wheels(lock, receipts, plan, wanted); !added) return added.error();
  if (reinstall) {
    for (auto& package : plan.packages)
      package.unchanged = false;
  }
  for (const auto& [name, receipt] : receipts) {
    if (!wanted.contains(name)) plan.removed.push_back(name);
  }
  return plan;
}

}  // namespace envkit::store
