#include "envkit/doctor/host_checks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "envkit/gpu/host_probe.hpp"

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
  if (host.wsl) text += ", the Windows driver through WSL 2";
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

// On WSL the driver is the Windows one: it is installed and upgraded there, and
// a Linux driver (or kernel module) installed inside WSL breaks WSL's libcuda.
constexpr std::string_view kWslDriverNote =
    "WSL 2 uses the Windows driver through /dev/dxg: install nothing NVIDIA inside WSL";

// `the NVIDIA driver`, or on WSL `the NVIDIA driver on Windows (...)`.
std::string the_driver(const gpu::HostFacts& host) {
  if (!host.wsl) return "the NVIDIA driver";
  return fmt::format("the NVIDIA driver on Windows ({})", kWslDriverNote);
}

// WSL without a driver: WSL 1 (no GPU at all), or WSL 2 whose Windows driver is missing.
Finding no_driver_on_wsl(const gpu::HostFacts& host, const StackNeeds& needs, bool minimum_known) {
  const auto& wsl = *host.wsl;
  if (!wsl.gpu_device) {
    return error("driver",
                 fmt::format("this is WSL ({}) without {}: WSL 1, or a WSL without GPU support; "
                             "CUDA runs only in WSL 2",
                             wsl.evidence, gpu::kWslGpuDevice),
                 "in Windows, `wsl --update`, then `wsl --set-version <distro> 2` and `wsl "
                 "--shutdown`; the NVIDIA driver is installed in Windows, never inside WSL");
  }
  auto message = fmt::format(
      "no NVIDIA driver reached through WSL 2 ({} exists, but neither libcuda.so.1 nor "
      "nvidia-smi under {} answered; {})",
      gpu::kWslGpuDevice, gpu::kWslLibDir, host.driver_source.to_string());
  if (minimum_known) {
    message += fmt::format("; the locked CUDA {} needs a driver {}", version_text(*needs.cuda),
                           describe_minimum(needs));
  }
  return error("driver", message,
               fmt::format("install the NVIDIA driver for your GPU on Windows{} ({}), then `wsl "
                           "--shutdown` and reopen WSL",
                           minimum_known ? " " + describe_minimum(needs) : "", kWslDriverNote));
}

}  // namespace

Findings check_driver(const gpu::HostFacts& host, const StackNeeds& needs) {
  const bool minimum_known = needs.cuda && (needs.min_driver || needs.min_driver_compat);
  if (!host.driver && host.wsl) return {no_driver_on_wsl(host, needs, minimum_known)};
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
        fmt::format("upgrade {}{}, or lock a CUDA this driver runs: `envkit lock` "
                    "on this machine (without a `system: driver` that says otherwise)",
                    the_driver(host),
                    needs.min_driver ? " to >= " + version_text(*needs.min_driver) : ""))};
  }
  if (needs.min_driver && driver < *needs.min_driver) {
    return {warn(
        "driver",
        fmt::format("the driver {} runs CUDA {} only through minor-version "
                    "compatibility (natively it needs >= {}): PTX from a newer toolkit "
                    "cannot be JIT-compiled and some APIs are missing",
                    describe_driver(host), version_text(cuda), version_text(*needs.min_driver)),
        fmt::format("upgrade {} to >= {} for full support", the_driver(host),
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
                 host.wsl ? fmt::format("check `{}/nvidia-smi` and that Windows' Device Manager "
                                        "shows the GPU; then `wsl --shutdown` and reopen WSL",
                                        gpu::kWslLibDir)
                          : "check `nvidia-smi`; in a container, pass the GPU through "
                            "(`--gpus all`)")};
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
