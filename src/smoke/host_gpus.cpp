#include "envkit/smoke/host_gpus.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace envkit::smoke {

namespace {

constexpr std::string_view kCpuOnlyNote =
    "the smoke test needs a GPU; `--cpu-only` runs the CPU half";

// "86" for 8.6, as nvcc spells architectures.
std::string arch_digits(const specs::ComputeCapability& capability) {
  return fmt::format("{}{}", capability.major, capability.minor);
}

}  // namespace

std::optional<std::string> skip_reason(const gpu::HostFacts& facts) {
  if (!facts.driver) {
    const bool overridden = facts.driver_source.kind == gpu::Provenance::Kind::override_variable;
    const auto where =
        overridden ? facts.driver_source.where + "=none" : facts.driver_source.to_string();
    return fmt::format("no NVIDIA driver on this machine ({}): {}", where, kCpuOnlyNote);
  }
  if (facts.gpus.empty()) {
    return fmt::format("the NVIDIA driver {} is installed, but no GPU was found ({}): {}",
                       facts.driver->original(), facts.gpus_source.to_string(), kCpuOnlyNote);
  }
  return std::nullopt;
}

std::vector<specs::ComputeCapability> distinct_capabilities(const gpu::HostFacts& facts) {
  std::vector<specs::ComputeCapability> capabilities;
  for (const auto& gpu : facts.gpus)
    capabilities.push_back(gpu.compute_capability);
  std::sort(capabilities.begin(), capabilities.end());
  capabilities.erase(std::unique(capabilities.begin(), capabilities.end()), capabilities.end());
  return capabilities;
}

std::vector<std::string> gencode_flags(const std::vector<specs::ComputeCapability>& capabilities) {
  std::vector<std::string> flags;
  for (const auto& capability : capabilities) {
    const auto digits = arch_digits(capability);
    flags.push_back("-gencode");
    flags.push_back(fmt::format("arch=compute_{0},code=sm_{0}", digits));
  }
  if (!capabilities.empty()) {
    const auto newest = arch_digits(*std::max_element(capabilities.begin(), capabilities.end()));
    flags.push_back("-gencode");
    flags.push_back(fmt::format("arch=compute_{0},code=compute_{0}", newest));
  }
  return flags;
}

}  // namespace envkit::smoke
