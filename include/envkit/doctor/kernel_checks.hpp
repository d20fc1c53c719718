#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "envkit/doctor/finding.hpp"
#include "envkit/specs/platform.hpp"
#include "envkit/store/kernel_scan.hpp"
#include "envkit/store/records.hpp"

// Check 8: kernel coverage, read from the binaries (docs/doctor.md). Pure:
// the receipts' kernels and the GPUs in, findings out.
namespace envkit::doctor {

struct KernelFacts {
  // This machine's GPUs; without one, the capabilities envkit.lock states.
  store::KernelTargets targets;
  bool from_lock = false;
  // The lock's `system.cuda-arch` are the machines' GPUs (envkit.yaml `system:`),
  // not what the recipe database says the stack has code for.
  bool lock_states_machines = false;
  // The recipe database's architecture list of a package's locked build, by package name.
  std::map<std::string, std::vector<specs::ComputeCapability>> declared;
  // A build the recipe database says has kernels for a GPU ("torch 2.3.1 (cu121)"),
  // nullopt when it knows none; may be empty.
  std::function<std::optional<std::string>(const std::string& package, elf::Arch gpu)>
      covering_build;
};

// 8: for each GPU, each package whose files hold fatbinaries has SASS for it,
// PTX the driver can JIT, or nothing (an error naming the package, the files,
// what they hold and what would cover it). Where the recipe database's list
// disagrees with the binaries, the binaries win and a warning says so. Files
// whose fatbinaries cannot be read are a warning each.
[[nodiscard]] Findings check_kernel_coverage(const store::PrefixState& state,
                                             const KernelFacts& facts);

}  // namespace envkit::doctor
