#pragma once

// A machine known only through ENVKIT_OVERRIDE_* values (no driver files, nvidia-smi or
// libcuda), for the locking tests that solve for a stated driver and GPU.
#include <map>
#include <optional>
#include <string>

#include "envkit/gpu/host_probe.hpp"

namespace envkit::test {

inline gpu::ProbeSources override_machine(std::map<std::string, std::string> variables) {
  return {.variable = [variables](const env::Variable& v) -> std::optional<std::string> {
            const auto it = variables.find(std::string(v.name));
            if (it == variables.end()) return std::nullopt;
            return it->second;
          },
          .read_file = [](const std::filesystem::path&) { return std::optional<std::string>(); },
          .query_nvidia_smi = [] { return std::optional<sys::ProcessOutput>(); },
          .query_libcuda = {}};
}

}  // namespace envkit::test
