#pragma once

#include "envkit/core/result.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/locking/inputs.hpp"
#include "envkit/locking/python_closure.hpp"

// What envkit's kernel cache knows of a lock's Python wheels (their coverage, read from
// their binaries at an earlier install: store/kernel_cache.hpp), judged against the GPUs the
// solver locks for (envkit.yaml's `system.cuda-arch`, else ENVKIT_OVERRIDE_CUDA_ARCH or this
// machine's) before anything is downloaded (docs/solver.md, "Kernel architectures").
namespace envkit::locking {

// For each wheel of `lockfile`'s closures whose sha256 the cache under `inputs.cache_root`
// knows: a GPU that none of its kernels runs on (no SASS of its major with a minor no
// higher, no PTX) rules out the framework's build (an unavailable build and a note in
// `findings`: the solver takes another release or build) and fails the lock for any other
// wheel, naming the wheel, what it holds and the GPU. NVIDIA's library wheels (`nvidia-*`)
// are not judged: each library covers what it supports (cuSPARSELt from sm_80), and the
// lock's CUDA and cuDNN are the recipe database's to judge. Nothing without a cache or GPUs.
[[nodiscard]] Result<void> check_cached_kernels(const LockInputs& inputs,
                                                const lock::Lockfile& lockfile,
                                                ClosureFindings& findings);

}  // namespace envkit::locking
