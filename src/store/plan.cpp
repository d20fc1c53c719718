#include "envkit/store/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "envkit/core/text.hpp"

namespace envkit::store {

namespace {

using recipes::Artifact;
using recipes::ArtifactKind;

std::optional<Packaging> packaging_of(ArtifactKind kind) {
  if (kind == ArtifactKind::archive) return Packaging::archive;
  if (kind == ArtifactKind::wheel) return Packaging::wheel;
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

std::set<std::string> hashes_of(const std::vector<Artifact>& artifacts) {
  std::set<std::string> hashes;
  for (const auto& artifact : artifacts)
    hashes.insert(artifact.sha256);
  return hashes;
}

const Artifact* find_kind(const lock::LockedPackage& package, ArtifactKind kind) {
  const auto it = std::find_if(package.artifacts.begin(), package.artifacts.end(),
                               [&](const Artifact& artifact) { return artifact.kind == kind; });
  return it == package.artifacts.end() ? nullptr : &*it;
}

Error runfile_only(const lock::LockedPackage& package, const Artifact& runfile) {
  return Error::failed(fmt::format("{} {} cannot be installed by envkit yet", package.name,
                                   package.version.original()))
      .because(fmt::format("NVIDIA ships {} {} only as a runfile installer ({}); envkit unpacks "
                           "redistributable archives and wheels, which exist from CUDA 11.4.2 on",
                           package.name, package.version.original(), runfile.url))
      .hint(
          "allow a newer CUDA in envkit.yaml (e.g. `cuda: \">=11.4.2\"`) if the framework "
          "permits, or install this CUDA yourself and declare `external: {cuda: system}`");
}

std::set<std::string> receipt_hashes(const PackageReceipt& receipt) {
  std::set<std::string> hashes;
  for (const auto& artifact : receipt.artifacts)
    hashes.insert(artifact.sha256);
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

}  // namespace

std::string_view to_string(Packaging packaging) {
  return packaging == Packaging::archive ? "archive" : "wheel";
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
                                 const std::optional<PrefixState>& installed, Packaging preferred) {
  std::map<std::string, const PackageReceipt*> receipts;
  if (installed) {
    for (const auto& receipt : installed->packages)
      receipts[receipt.name] = &receipt;
  }
  InstallPlan plan;
  std::set<std::string> wanted;
  for (const auto& package : lock.packages) {
    const auto version = package.version.original();
    if (package.external) continue;  // the machine provides it
    if (package.artifacts.empty()) {
      plan.skipped.push_back(
          fmt::format("{} {} is a Python package; envkit does not install Python packages yet",
                      package.name, version));
      continue;
    }
    const auto archives = of_packaging(package, Packaging::archive);
    const auto wheels = of_packaging(package, Packaging::wheel);
    if (archives.empty() && wheels.empty()) {
      if (const auto* runfile = find_kind(package, ArtifactKind::runfile))
        return runfile_only(package, *runfile);
      plan.skipped.push_back(fmt::format(
          "{} {} is built from source, which envkit does not do yet; the prefix has no {}",
          package.name, version, package.name));
      continue;
    }
    const auto it = receipts.find(package.name);
    const PackageReceipt* receipt = it == receipts.end() ? nullptr : it->second;
    const auto packaging = choose(archives, wheels, preferred, receipt);
    PlannedPackage planned{.name = package.name,
                           .version = version,
                           .build = package.build,
                           .packaging = *packaging,
                           .artifacts = *packaging == Packaging::archive ? archives : wheels};
    const auto& other = *packaging == Packaging::archive ? wheels : archives;
    if (!other.empty() && components_of(other) == components_of(planned.artifacts))
      planned.fallback = other;
    planned.unchanged = receipt && receipt->version == version && receipt->build == package.build &&
                        receipt_hashes(*receipt) == hashes_of(planned.artifacts);
    wanted.insert(package.name);
    plan.packages.push_back(std::move(planned));
  }
  for (const auto& [name, receipt] : receipts) {
    if (!wanted.contains(name)) plan.removed.push_back(name);
  }
  return plan;
}

}  // namespace envkit::store
