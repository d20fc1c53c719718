#pragma once

#include <optional>
#include <string>
#include <vector>

#include "envkit/doctor/finding.hpp"
#include "envkit/gpu/host_facts.hpp"
#include "envkit/specs/platform.hpp"
#include "envkit/specs/version.hpp"

// Checks 1 and 2: the machine's driver and GPUs against what the locked stack
// needs. Pure: facts in, findings out.
namespace envkit::doctor {

// What the locked CUDA (and framework) ask of the machine, from the recipe
// database. Everything optional: a lock without CUDA, or facts upstream lacks.
struct StackNeeds {
  std::optional<specs::Version> cuda;
  std::optional<specs::Version> min_driver;         // natively
  std::optional<specs::Version> min_driver_compat;  // minor-version compatibility
  std::vector<specs::ComputeCapability> cuda_arch;  // the CUDA release's, where known
  struct Framework {
    std::string name;  // `torch 2.4.1 (cu121)`
    std::vector<specs::ComputeCapability> cuda_arch;
  };
  std::vector<Framework> frameworks;
};

// 1: no driver, or one too old for the locked CUDA ("CUDA driver version is
// insufficient for CUDA runtime version"): names both versions and the minimum.
[[nodiscard]] Findings check_driver(const gpu::HostFacts& host, const StackNeeds& needs);

// 2: each GPU's compute capability against the CUDA release and framework builds.
[[nodiscard]] Findings check_gpu_arch(const gpu::HostFacts& host, const StackNeeds& needs);

}  // namespace envkit::doctor
