#pragma once

#include "envkit/core/result.hpp"
#include "envkit/gpu/host_probe.hpp"
#include "envkit/lock/lockfile.hpp"

namespace envkit::locking {

// Whether this machine meets what a lock solved without envkit.yaml `system:`
// needs of a machine (its `system:` section): a driver in `driver`
// (`>=525.60.13`), GPUs the stack has code for (`cuda-arch`), a glibc in
// `glibc` (`>=2.28`, from the closure's manylinux wheels). An error naming the
// first unmet requirement, with a hint. What the machine does not reveal (no
// driver, no GPU) passes: install puts the stack in place and `envkit doctor`
// says what is missing to run it.
[[nodiscard]] Result<void> check_machine(const lock::Lockfile& lockfile,
                                         const gpu::ProbeSources& sources);

// This machine's glibc: ENVKIT_OVERRIDE_GLIBC, else the running C library's (`2.36`).
[[nodiscard]] std::string host_glibc(const gpu::ProbeSources& sources);

}  // namespace envkit::locking
