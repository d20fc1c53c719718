#include "envkit/doctor/host_checks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace envkit::doctor {

namespace {

using specs::ComputeCapability;
using specs::Version;

std::string version_text(const Version& version) {
  return version.original();
}

// `550.54.15 (supports CUDA up to 12.4)`, the CUDA part when libcuda said it
std::string describe_driver(const gpu::HostFacts& host) {
  std::string text = version_text(*host.driver);
  if (host.driver_cuda)
    text += fmt::format(" (supports CUDA up to {})", host.driver_cuda->original());
  return text;
}

// What the locked CUDA needs, in words: `≥ 550.54.14 (≥ 525.60.13 through
// minor-version compatibility)`.
std::string describe_minimum(const StackNeeds& needs) {
  if (needs.min_driver && needs.min_driver_compat) {
    return fmt::format(">= {} (>= {} through minor-version compatibility)",
                       version_text(*needs.min_driver), version_text(*needs.min_driver_compat));
  }
  if (needs.min_driver) return ">= " + version_text(*needs.min_driver);
  return ">= " + version_text(*needs.min_driver_compat);
}

// The driver's CUDA is an older major than the locked one: no compatibility
// mode bridges majors.
bool older_major(const gpu::HostFacts& host, const Version& cuda) {
  return host.driver_cuda && host.driver_cuda->major() < cuda.major();
}

std::string gpu_name(const gpu::Gpu& gpu) {
  return gpu.name.value_or("the GPU");
}

std::string capability_list(const std::vector<ComputeCapability>& capabilities) {
  std::string text;
  for (const auto& capability : capabilities)
    text += (text.empty() ? "" : ", ") + capability.to_string();
  return text;
}

// One GPU against one supported list; nullopt when it is on it.
std::optional<Finding> arch_finding(const gpu::Gpu& gpu, const std::string& what,
                                    std::vector<ComputeCapability> supported) {
  std::sort(supported.begin(), supported.end());
  const auto capability = gpu.compute_capability;
  if (supported.empty() ||
      std::find(supported.begin(), supported.end(), capability) != supported.end()) {
    return std::nullopt;
  }
  const auto shown =
      fmt::format("{} (compute capability {})", gpu_name(gpu), capability.to_string());
  if (capability < supported.front()) {
    return error("gpu-arch",
                 fmt::format("{} is older than {} supports (oldest: {}): kernels fail with \"no "
                             "kernel image is available for execution on the device\"",
                             shown, what, supported.front().to_string()),
                 fmt::format("lock an older release that still supports {}: `envkit lock` on "
                             "this machine (or `system: cuda-arch: [\"{}\"]` in envkit.yaml)",
                             capability.to_string(), capability.to_string()));
  }
  if (capability > supported.back()) {
    return warn("gpu-arch",
                fmt::format("{} is newer than {} knows (newest: {}): only code shipped as PTX "
                            "runs, compiled by the driver at start-up",
                            shown, what, supported.back().to_string()),
                fmt::format("lock a newer release that supports {}: `envkit lock` on this "
                            "machine picks one",
                            capability.to_string()));
  }
  return warn("gpu-arch",
              fmt::format("{} is not in the list {} supports ({})", shown, what,
                          capability_list(supported)),
              "check that the build runs on this GPU, or lock another release with `envkit lock`");
}

}  // namespace

Findings check_driver(const gpu::HostFacts& host, const StackNeeds& needs) {
  const bool minimum_known = needs.cuda && (needs.min_driver || needs.min_driver_compat);
  if (!host.driver) {
    auto message =
        fmt::format("no NVIDIA driver on this machine ({})", host.driver_source.to_string());
    if (minimum_known) {
      message += fmt::format("; the locked CUDA {} needs a driver {}", version_text(*needs.cuda),
                             describe_minimum(needs));
    }
    return {error("driver", message,
                  minimum_known
                      ? fmt::format("install an NVIDIA driver {}", describe_minimum(needs))
                      : "install the NVIDIA driver for your GPU")};
  }
  if (!needs.cuda) {
    return {ok("driver", fmt::format("NVIDIA driver {} ({})", describe_driver(host),
                                     host.driver_source.to_string()))};
  }
  const auto& cuda = *needs.cuda;
  const auto& driver = *host.driver;
  const auto& least = needs.min_driver_compat ? needs.min_driver_compat : needs.min_driver;
  if ((least && driver < *least) || older_major(host, cuda)) {
    return {error(
        "driver",
        fmt::format("CUDA driver version is insufficient for CUDA runtime version: the driver is "
                    "{}, the locked CUDA {} needs {}",
                    describe_driver(host), version_text(cuda),
                    minimum_known ? describe_minimum(needs)
                                  : fmt::format("a driver for CUDA {}", cuda.major())),
        fmt::format("upgrade the NVIDIA driver{}, or lock a CUDA this driver runs: `envkit lock` "
                    "on this machine (without a `system: driver` that says otherwise)",
                    needs.min_driver ? " to >= " + version_text(*needs.min_driver) : ""))};
  }
  if (needs.min_driver && driver < *needs.min_driver) {
    return {warn(
        "driver",
        fmt::format("the driver {} runs CUDA {} only through minor-version "
                    "compatibility (natively it needs >= {}): PTX from a newer toolkit "
                    "cannot be JIT-compiled and some APIs are missing",
                    describe_driver(host), version_text(cuda), version_text(*needs.min_driver)),
        fmt::format("upgrade the NVIDIA driver to >= {} for full support",
                    version_text(*needs.min_driver)))};
  }
  return {
      ok("driver", fmt::format("NVIDIA driver {} runs the locked CUDA {}{}", describe_driver(host),
                               version_text(cuda),
                               minimum_known ? " (needs " + describe_minimum(needs) + ")" : ""))};
}

Findings check_gpu_arch(const gpu::HostFacts& host, const StackNeeds& needs) {
  if (host.gpus.empty()) {
    if (!host.driver) return {};  // the driver finding says it
    return {warn("gpu-arch",
                 fmt::format("the NVIDIA driver {} is loaded but no GPU was found ({})",
                             version_text(*host.driver), host.gpus_source.to_string()),
                 "check `nvidia-smi`; in a container, pass the GPU through (`--gpus all`)")};
  }
  Findings findings;
  std::set<std::pair<std::string, ComputeCapability>> seen;  // 8 identical GPUs, one finding
  for (const auto& gpu : host.gpus) {
    if (!seen.insert({gpu_name(gpu), gpu.compute_capability}).second) continue;
    const auto before = findings.size();
    if (needs.cuda) {
      if (auto found = arch_finding(gpu, "CUDA " + version_text(*needs.cuda), needs.cuda_arch)) {
        findings.push_back(std::move(*found));
      }
    }
    for (const auto& framework : needs.frameworks) {
      if (auto found = arch_finding(gpu, framework.name, framework.cuda_arch)) {
        findings.push_back(std::move(*found));
      }
    }
    if (findings.size() == before) {
      findings.push_back(
          ok("gpu-arch", fmt::format("{} (compute capability {}) is supported{}", gpu_name(gpu),
                                     gpu.compute_capability.to_string(),
                                     needs.cuda ? " by the locked stack" : "")));
    }
  }
  return findings;
}

}  // namespace envkit::doctor
