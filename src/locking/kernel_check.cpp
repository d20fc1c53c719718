#include "envkit/locking/kernel_check.hpp"

#include <fmt/format.h>

#include "envkit/elf/fatbin.hpp"
#include "envkit/specs/package_name.hpp"
#include "envkit/store/kernel_cache.hpp"
#include "envkit/store/kernel_scan.hpp"

namespace envkit::locking {

namespace {

// A wheel's own name, from its URL: "torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64.whl".
std::string file_name(const lock::PythonWheel& wheel) {
  const auto slash = wheel.url.rfind('/');
  return slash == std::string::npos ? wheel.url : wheel.url.substr(slash + 1);
}

// The lock's framework when `wheel` is its wheel.
const lock::LockedPackage* framework_wheel(const lock::PlatformLock& locked,
                                           const lock::PythonWheel& wheel) {
  for (const auto& package : locked.packages) {
    if (specs::is_framework(package.name) && package.name == wheel.name) return &package;
  }
  return nullptr;
}

}  // namespace

Result<void> check_cached_kernels(const LockInputs& inputs, const lock::Lockfile& lockfile,
                                  ClosureFindings& findings) {
  if (inputs.cache_root.empty() || inputs.facts.gpus.empty()) return {};
  for (const auto& locked : lockfile.platforms) {
    if (!locked.python) continue;
    for (const auto& wheel : locked.python->packages) {
      if (wheel.name.starts_with("nvidia-")) continue;
      const auto coverage = store::cached_coverage(inputs.cache_root, wheel.sha256);
      if (!coverage || coverage->empty()) continue;
      for (const auto& machine_gpu : inputs.facts.gpus) {
        const auto& capability = machine_gpu.capability;
        const auto gpu = elf::arch_of(capability.major, capability.minor);
        // PTX is taken to JIT: the lock's machines' drivers are not all known.
        if (elf::runs_on(*coverage, gpu) != elf::Runs::no_kernel) continue;
        const auto holds = fmt::format(
            "its wheel {} has kernels for {} (read from its binaries "
            "at an earlier install, envkit's kernel cache)",
            file_name(wheel), store::describe(*coverage));
        const auto gpu_text = elf::capability_text(gpu);
        if (const auto* framework = framework_wheel(locked, wheel)) {
          findings.unavailable.push_back(
              {.package = framework->name,
               .version = framework->version.original(),
               .build = framework->build,
               .reason = fmt::format("{}: none runs on compute capability {}", holds, gpu_text)});
          findings.notes.push_back(fmt::format(
              "{} {}{}: {}: none runs on compute capability {}; another release or build is "
              "locked",
              framework->name, framework->version.original(),
              framework->build.empty() ? "" : " (" + framework->build + ")", holds, gpu_text));
          break;
        }
        return Error::failed(fmt::format("{} {} has no kernels for compute capability {} (the "
                                         "lock's GPUs): {}",
                                         wheel.name, wheel.version, gpu_text, holds))
            .because(fmt::format("a GPU of compute capability {} needs {}", gpu_text,
                                 store::what_covers(gpu)))
            .hint(fmt::format("require a release of {} built for compute capability {} in the "
                              "project's Python requirements, or leave {} out; `envkit debug "
                              "fatbin FILE` lists what a library holds",
                              wheel.name, gpu_text, wheel.name));
      }
    }
  }
  return {};
}

}  // namespace envkit::locking
