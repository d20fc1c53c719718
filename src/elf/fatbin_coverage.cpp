// What a set of fatbinaries runs on, and whether a GPU gets a kernel from it
// (CUDA's compatibility rules: docs/fatbin.md, "Which GPU runs what").
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>

#include "envkit/elf/fatbin.hpp"

namespace envkit::elf {

namespace {

// How far the targets of one arch reach, narrowest first: merging keeps the widest.
enum class Reach { arch_specific, family_specific, portable };

Reach reach_of(const FatbinEntry& entry) {
  if (entry.arch_specific) return Reach::arch_specific;
  if (entry.family_specific) return Reach::family_specific;
  return Reach::portable;
}

using Reaches = std::map<Arch, Reach>;

void widen(Reaches& reaches, Arch arch, Reach reach) {
  auto [it, added] = reaches.try_emplace(arch, reach);
  if (!added) it->second = std::max(it->second, reach);
}

bool contains(const std::vector<Arch>& archs, Arch arch) {
  return std::find(archs.begin(), archs.end(), arch) != archs.end();
}

Reaches reaches_of(const std::vector<Arch>& all, const std::vector<Arch>& arch_specific,
                   const std::vector<Arch>& family_specific) {
  Reaches reaches;
  for (const Arch arch : all) {
    const Reach reach = contains(arch_specific, arch)     ? Reach::arch_specific
                        : contains(family_specific, arch) ? Reach::family_specific
                                                          : Reach::portable;
    widen(reaches, arch, reach);
  }
  return reaches;
}

void store(const Reaches& reaches, std::vector<Arch>& all, std::vector<Arch>& arch_specific,
           std::vector<Arch>* family_specific) {
  all.clear();
  arch_specific.clear();
  if (family_specific != nullptr) family_specific->clear();
  for (const auto& [arch, reach] : reaches) {  // a std::map: sorted, without duplicates
    all.push_back(arch);
    if (reach == Reach::arch_specific) arch_specific.push_back(arch);
    if (reach == Reach::family_specific && family_specific != nullptr) {
      family_specific->push_back(arch);
    }
  }
}

struct IsaVersion {
  unsigned major = 0;
  unsigned minor = 0;
  auto operator<=>(const IsaVersion&) const = default;
};

IsaVersion isa_version(std::string_view text) {
  IsaVersion version;
  const auto dot = text.find('.');
  const auto major = text.substr(0, dot);
  const auto minor = dot == std::string_view::npos ? std::string_view{} : text.substr(dot + 1);
  const auto number = [](std::string_view digits, unsigned& into) {
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), into);
    return error == std::errc() && end == digits.data() + digits.size();
  };
  if (!number(major, version.major) || (!minor.empty() && !number(minor, version.minor))) {
    return {};
  }
  return version;
}

// SASS of `arch` runs on `gpu`: the same major, a minor no higher (sm_80 on 8.6),
// or exactly it for arch-specific SASS.
bool sass_runs(Arch arch, Reach reach, Arch gpu) {
  if (reach == Reach::arch_specific) return arch == gpu;
  return arch / 10 == gpu / 10 && arch % 10 <= gpu % 10;
}

// PTX of `arch` JITs for `gpu`: any later GPU, only its own major for
// family-specific PTX, only exactly it for arch-specific PTX.
bool ptx_jits(Arch arch, Reach reach, Arch gpu) {
  switch (reach) {
    case Reach::arch_specific:
      return arch == gpu;
    case Reach::family_specific:
      return arch / 10 == gpu / 10 && arch <= gpu;
    case Reach::portable:
      return arch <= gpu;
  }
  return false;
}

}  // namespace

std::string capability_text(Arch arch) {
  return fmt::format("{}.{}", arch / 10, arch % 10);
}

std::optional<Arch> parse_capability(std::string_view text) {
  const auto dot = text.find('.');
  if (dot == std::string_view::npos || dot == 0 || text.size() != dot + 2) return std::nullopt;
  unsigned major = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + dot, major);
  const char minor = text[dot + 1];
  if (error != std::errc() || end != text.data() + dot || major == 0 || major > 99 || minor < '0' ||
      minor > '9') {
    return std::nullopt;
  }
  return arch_of(major, static_cast<unsigned>(minor - '0'));
}

bool ptx_isa_newer(std::string_view a, std::string_view b) {
  return isa_version(a) > isa_version(b);
}

std::string target_name(const FatbinEntry& entry) {
  const char* suffix = entry.arch_specific ? "a" : entry.family_specific ? "f" : "";
  return fmt::format("{}_{}{}", entry.kind == FatbinEntry::Kind::ptx ? "compute" : "sm", entry.arch,
                     suffix);
}

KernelCoverage coverage_of(std::span<const EmbeddedFatbin> fatbins) {
  Reaches sass, ptx;
  std::string newest;
  for (const EmbeddedFatbin& fatbin : fatbins) {
    for (const FatbinEntry& entry : fatbin.entries) {
      if (entry.kind == FatbinEntry::Kind::sass) {
        // Family-specific SASS reaches as far as plain SASS does.
        widen(sass, entry.arch, entry.arch_specific ? Reach::arch_specific : Reach::portable);
        continue;
      }
      widen(ptx, entry.arch, reach_of(entry));
      if (newest.empty() || ptx_isa_newer(entry.ptx_isa, newest)) newest = entry.ptx_isa;
    }
  }
  KernelCoverage coverage;
  store(sass, coverage.sass, coverage.sass_arch_specific, nullptr);
  store(ptx, coverage.ptx, coverage.ptx_arch_specific, &coverage.ptx_family_specific);
  coverage.newest_ptx_isa = newest;
  return coverage;
}

void KernelCoverage::merge(const KernelCoverage& other) {
  Reaches merged_sass = reaches_of(sass, sass_arch_specific, {});
  for (const auto& [arch, reach] : reaches_of(other.sass, other.sass_arch_specific, {})) {
    widen(merged_sass, arch, reach);
  }
  Reaches merged_ptx = reaches_of(ptx, ptx_arch_specific, ptx_family_specific);
  for (const auto& [arch, reach] :
       reaches_of(other.ptx, other.ptx_arch_specific, other.ptx_family_specific)) {
    widen(merged_ptx, arch, reach);
  }
  store(merged_sass, sass, sass_arch_specific, nullptr);
  store(merged_ptx, ptx, ptx_arch_specific, &ptx_family_specific);
  if (newest_ptx_isa.empty() || ptx_isa_newer(other.newest_ptx_isa, newest_ptx_isa)) {
    if (!other.newest_ptx_isa.empty()) newest_ptx_isa = other.newest_ptx_isa;
  }
}

Runs runs_on(const KernelCoverage& coverage, Arch gpu, std::string_view driver_ptx_isa) {
  for (const auto& [arch, reach] : reaches_of(coverage.sass, coverage.sass_arch_specific, {})) {
    if (sass_runs(arch, reach, gpu)) return Runs::sass;
  }
  const Reaches ptx =
      reaches_of(coverage.ptx, coverage.ptx_arch_specific, coverage.ptx_family_specific);
  const bool jits = std::any_of(ptx.begin(), ptx.end(), [&](const auto& arch_reach) {
    return ptx_jits(arch_reach.first, arch_reach.second, gpu);
  });
  if (!jits) return Runs::no_kernel;
  if (!driver_ptx_isa.empty() && ptx_isa_newer(coverage.newest_ptx_isa, driver_ptx_isa)) {
    return Runs::ptx_too_new;
  }
  return Runs::ptx_jit;
}

}  // namespace envkit::elf
