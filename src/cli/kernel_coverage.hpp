#pragma once

// What `envkit install`'s kernel gate and `envkit doctor`'s kernel check judge
// against (docs/doctor.md, "Kernel coverage"): the GPUs, the driver's PTX ISA,
// and what the recipe database says of each locked build.
#include <filesystem>

#include "command.hpp"
#include "envkit/doctor/kernel_checks.hpp"
#include "envkit/gpu/host_facts.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/recipes/database.hpp"

namespace envkit::cli {

// The install gate's GPUs: this machine's; without one, the lock's
// `system.cuda-arch` when envkit.yaml `system:` stated them (the machines it
// serves). Otherwise none: a GPU-less machine installs what the recipe database
// claims, and doctor says where the binaries disagree.
[[nodiscard]] store::KernelTargets install_kernel_targets(const Context& context,
                                                          const gpu::HostFacts& host,
                                                          const lock::Lockfile& lockfile);

// doctor's kernel findings for the prefix at `prefix` with receipts `state`
// (receipts of an envkit that did not read kernels are read now), judged for
// this machine's GPUs or, without one, those the project's envkit.lock states.
[[nodiscard]] doctor::Findings kernel_findings(const Context& context, const gpu::HostFacts& host,
                                               const std::filesystem::path& prefix,
                                               store::PrefixState state);

// The recipe database's build of a locked package, or nullptr where it has none.
[[nodiscard]] const recipes::Build* locked_build(const recipes::Database& database,
                                                 const lock::LockedPackage& package);

}  // namespace envkit::cli
