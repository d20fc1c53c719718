#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "envkit/activation/activation.hpp"
#include "envkit/doctor/finding.hpp"
#include "envkit/elf/dependency_check.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/project/stack_tree.hpp"
#include "envkit/store/cache.hpp"
#include "envkit/store/records.hpp"

// Checks 3 to 7: the installed prefix, its libraries, the environment around
// it, the lock, and one copy of each CUDA library.
namespace envkit::doctor {

// A CUDA or cuDNN the lock leaves to the machine (`external:`), and what envkit found of it.
struct ExternalStack {
  std::string package;         // cuda or cudnn
  specs::Version locked;       // the lock's version
  project::TreeLookup lookup;  // where the machine's was looked for, what it holds
};

// 3: every library in the prefix finds what it needs (ELF DT_NEEDED resolved
// as the loader would, prefix first); `expected` (libcudart.so, libcudnn.so,
// libcublas.so: what the lock promises) are in the prefix's lib/. A package in
// `externals` is not in the prefix: the machine's tree must hold the locked
// version (and cuDNN's library), and a missing library of it is the tree's to
// provide; those findings name the tree and never send the user to `envkit install`,
// which leaves an external package alone.
[[nodiscard]] Findings check_libraries(const std::filesystem::path& prefix,
                                       const elf::DependencyReport& report,
                                       std::span<const std::string> expected,
                                       std::span<const ExternalStack> externals = {});

// 4: folders on the inherited LD_LIBRARY_PATH that hold a CUDA library the
// prefix has too, ahead of the prefix's (programs started without `envkit run`
// load theirs), and what activation warns of (LD_PRELOAD, a soname the
// prefix lacks).
[[nodiscard]] Findings check_shadowing(const std::filesystem::path& prefix,
                                       const activation::Environment& inherited);

// `nvcc --version` of the nvcc at a path; nullopt when it cannot run.
using NvccVersion = std::function<std::optional<std::string>(const std::filesystem::path& nvcc)>;

// 5: the prefix's nvcc and its CUDA runtime are one release; CUDA_HOME,
// CUDA_PATH and PATH's nvcc (inherited) do not point at another CUDA.
[[nodiscard]] Findings check_toolkit(const std::filesystem::path& prefix,
                                     const activation::Environment& inherited,
                                     const NvccVersion& nvcc_version);

// The release in `nvcc --version` output (`release 12.4, V12.4.131` -> 12.4.131).
[[nodiscard]] std::optional<specs::Version> parse_nvcc_release(std::string_view output);

// 6: the prefix holds what the lock says (package and version), and every
// file matches its receipt (type, size, sha256). `locked`: the lock's packages
// for this platform, nullopt without a lock.
[[nodiscard]] Findings check_prefix(const std::filesystem::path& prefix,
                                    const std::optional<store::PrefixState>& state,
                                    const std::optional<lock::PlatformLock>& locked);

// 6b: the cache entries the prefix was linked from still stand as envkit
// unpacked them (a stat of each file against its stamp): a file written through
// the prefix's hard link changed the cache's copy, which new environments would
// get. An error per package naming the files; nothing when every entry stands.
[[nodiscard]] Findings check_cache_entries(const store::PrefixState& state,
                                           const store::Cache& cache);

// 7: one CUDA per environment. The regular files of CUDA, cuDNN and NCCL
// libraries (by soname stem: libcudart, libcublasLt, libcudnn_ops, libnccl,
// ...) in the prefix's lib/, lib64/ (unless a link to lib/) and every `lib`
// folder under lib/python3.X/site-packages/nvidia/, grouped by library
// (libcudart.so.12 and libcudart.so.12.4.127 are one library). A library
// present as two or more different files (another inode and other bytes: size,
// then sha256) is an error `cuda-duplicate-library` naming each file
// (relative to the prefix) with the version its name carries; hard links and
// identical copies are one file. One ok finding when there is none.
[[nodiscard]] Findings check_duplicate_libraries(const std::filesystem::path& prefix);

}  // namespace envkit::doctor
