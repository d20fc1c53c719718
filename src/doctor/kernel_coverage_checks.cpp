#include <fmt/format.h>

#include <map>

#include "envkit/core/text.hpp"
#include "envkit/doctor/kernel_checks.hpp"

namespace envkit::doctor {

namespace {

using elf::Runs;

std::string gpu_text(elf::Arch gpu) {
  return fmt::format("compute capability {}", elf::capability_text(gpu));
}

// What covers `gpu`, with the recipe database's concrete build where it knows one.
std::string fix_for(const store::KernelVerdict& verdict, const KernelFacts& facts) {
  auto fix =
      fmt::format("install a {} build with {}", verdict.name, store::what_covers(verdict.gpu));
  if (facts.covering_build) {
    if (auto build = facts.covering_build(verdict.name, verdict.gpu)) {
      fix += fmt::format(" (the recipe database lists {} with kernels for {})", *build,
                         elf::capability_text(verdict.gpu));
    }
  }
  if (verdict.runs == Runs::ptx_too_new) fix += ", or upgrade the NVIDIA driver";
  if (!facts.from_lock) fix += "; `envkit lock` on this machine picks one where it can";
  return fix;
}

// One ok finding per GPU: which packages run there and how.
Finding covered(elf::Arch gpu, const std::vector<std::string>& sass,
                const std::vector<std::string>& jit) {
  std::vector<std::string> parts;
  if (!sass.empty()) parts.push_back("SASS in " + text::join(sass, ", "));
  if (!jit.empty()) parts.push_back("PTX the driver JIT-compiles in " + text::join(jit, ", "));
  return ok("kernels", fmt::format("kernels for {}: {}", gpu_text(gpu), text::join(parts, "; ")));
}

// The recipe database's list against the binaries: capabilities it lists that
// no file has a kernel for. The binaries win.
std::optional<Finding> declared_disagreement(const store::PackageReceipt& package,
                                             const KernelFacts& facts) {
  const auto declared = facts.declared.find(package.name);
  if (declared == facts.declared.end() || declared->second.empty()) return std::nullopt;
  std::vector<std::string> missing;
  for (const auto& capability : declared->second) {
    const auto arch = elf::arch_of(capability.major, capability.minor);
    const store::KernelTargets one{.gpus = {arch}, .driver_ptx_isa = {}, .source = {}};
    for (const auto& verdict : store::judge_kernels({&package, 1}, one)) {
      if (verdict.runs == Runs::no_kernel) missing.push_back(capability.to_string());
    }
  }
  if (missing.empty()) return std::nullopt;
  std::vector<std::string> listed;
  for (const auto& capability : declared->second)
    listed.push_back(capability.to_string());
  return warn("kernels",
              fmt::format("the recipe database says {} has kernels for compute capabilities {}, "
                          "but its binaries hold {}, nothing for {}: the binaries win",
                          store::package_label(package), text::join(listed, ", "),
                          store::describe(package.kernels->coverage), text::join(missing, ", ")),
              "none needed here: doctor and install judge GPUs by what the files hold, not by "
              "the recipe database");
}

}  // namespace

Findings check_kernel_coverage(const store::PrefixState& state, const KernelFacts& facts) {
  Findings findings;
  for (const auto& package : state.packages) {
    if (!package.kernels) continue;
    for (const auto& file : package.kernels->files) {
      if (file.error.empty()) continue;
      findings.push_back(
          warn("kernels",
               fmt::format("cannot read the kernels of {} in {}: {}", file.path,
                           store::package_label(package), file.error),
               "reinstall it (`envkit install --reinstall`); if it stays, report the file with "
               "`envkit debug fatbin FILE`"));
    }
    if (auto disagreement = declared_disagreement(package, facts))
      findings.push_back(std::move(*disagreement));
  }
  const auto verdicts = store::judge_kernels(state.packages, facts.targets);
  // A lock's capabilities are the machines' only when envkit.yaml states them;
  // otherwise they are the recipe database's claims, which the binaries overrule.
  const bool gaps_are_errors = !facts.from_lock || facts.lock_states_machines;
  std::map<elf::Arch, std::pair<std::vector<std::string>, std::vector<std::string>>> runs_by_gpu;
  for (const auto& verdict : verdicts) {
    auto& [sass, jit] = runs_by_gpu[verdict.gpu];
    if (verdict.runs == Runs::sass) {
      sass.push_back(verdict.package);
      continue;
    }
    if (verdict.runs == Runs::ptx_jit) {
      jit.push_back(verdict.package);
      continue;
    }
    auto message = store::describe_gap(verdict, facts.targets.driver_ptx_isa);
    if (facts.from_lock) message += fmt::format(" ({})", facts.targets.source);
    auto fix = fix_for(verdict, facts);
    findings.push_back(gaps_are_errors ? error("kernels", std::move(message), std::move(fix))
                                       : warn("kernels", std::move(message), std::move(fix)));
  }
  for (const auto& [gpu, runs] : runs_by_gpu) {
    if (!runs.first.empty() || !runs.second.empty())
      findings.push_back(covered(gpu, runs.first, runs.second));
  }
  return findings;
}

}  // namespace envkit::doctor
