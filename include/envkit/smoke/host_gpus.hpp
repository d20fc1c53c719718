#pragma once

#include <optional>
#include <string>
#include <vector>

#include "envkit/gpu/host_facts.hpp"
#include "envkit/specs/platform.hpp"

// What `envkit smoke` takes from the host probe before it builds anything.
namespace envkit::smoke {

// Why the GPU test cannot run here, or nullopt when a driver and at least one
// GPU were found. Names where envkit looked (or the override that said so) and
// that `--cpu-only` runs the CPU half.
[[nodiscard]] std::optional<std::string> skip_reason(const gpu::HostFacts& facts);

// The GPUs' distinct compute capabilities, oldest first.
[[nodiscard]] std::vector<specs::ComputeCapability> distinct_capabilities(
    const gpu::HostFacts& facts);

// nvcc's `-gencode` flags for `capabilities` (distinct, oldest first): machine
// code for each (`arch=compute_86,code=sm_86`), and PTX of the newest
// (`arch=compute_90,code=compute_90`) so a newer GPU can compile it at load
// time. Empty for no capabilities: nvcc's default target, which includes PTX.
[[nodiscard]] std::vector<std::string> gencode_flags(
    const std::vector<specs::ComputeCapability>& capabilities);

}  // namespace envkit::smoke
