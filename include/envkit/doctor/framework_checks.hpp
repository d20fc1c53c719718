#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "envkit/activation/activation.hpp"
#include "envkit/doctor/finding.hpp"
#include "envkit/smoke/framework.hpp"

// Check 8: the prefix's PyTorch, TensorFlow or JAX, imported by the prefix's
// Python in the prefix's environment (as `envkit run` gives it), loads its
// CUDA libraries from the prefix, one copy each, of the lock's versions
// (share/envkit/smoke/framework_smoke.py --libraries-only; docs/doctor.md).
namespace envkit::doctor {

// The framework installed in the prefix (a `torch`, `tensorflow` or `jax`
// package folder in lib/python3.*/site-packages), nullopt when none is.
[[nodiscard]] std::optional<std::string> installed_framework(const std::filesystem::path& prefix);

// The findings of one probe: an error per problem (a library from outside the
// prefix, two copies of one, a version other than the lock's, the stub
// libcuda, the framework imported from elsewhere) with a fix for its cause,
// read from `inherited` (LD_LIBRARY_PATH, LD_PRELOAD, PYTHONPATH); an error when
// the import fails; one ok finding when every library is the prefix's.
[[nodiscard]] Findings framework_findings(const smoke::FrameworkResult& result,
                                          const std::filesystem::path& prefix,
                                          const activation::Environment& inherited);

// Runs the probe when the prefix has a framework (nothing when it has none; an
// ok note when it has no Python of its own to import it with), bounded by
// `timeout`.
[[nodiscard]] Findings check_framework(const std::filesystem::path& prefix,
                                       const smoke::LockedStack& locked,
                                       const activation::Environment& inherited,
                                       std::chrono::seconds timeout = std::chrono::seconds(120));

}  // namespace envkit::doctor
