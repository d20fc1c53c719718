#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/specs/version.hpp"
#include "envkit/store/records.hpp"

// `envkit smoke --framework` and doctor's framework check: the prefix's own
// Python imports PyTorch, TensorFlow or JAX (share/envkit/smoke/framework_smoke.py),
// trains a small network where there is a GPU, and says which CUDA libraries
// the process really loaded (its /proc/self/maps). envkit checks those are the
// prefix's, one copy of each, of the versions the lock names.
namespace envkit::smoke {

// ------------------------------------------------------------ loaded libraries

// One file a process had mapped, from /proc/<pid>/maps.
struct MappedFile {
  std::filesystem::path path;
  std::string device;  // `08:01`: with the inode, which file it is (hard links are one)
  std::uint64_t inode = 0;
};

// Each file-backed mapping's file once, in the maps' order (by address). Lines
// without a path ([heap], anonymous) or with inode 0 are left out; a path
// may hold spaces; ` (deleted)` (a file replaced while mapped) is taken off.
[[nodiscard]] std::vector<MappedFile> parse_proc_maps(std::string_view maps);

// A CUDA library's name and the version its file name carries:
// `libcublasLt.so.12.4.5.8` -> {libcublasLt, 12.4.5.8}; a wheel's vendored copy
// `libcudart-d0da41ae.so.11.0` -> {libcudart, 11.0}; `libcudnn_ops.so.9` ->
// {libcudnn_ops, 9}; the driver's `libcuda.so.1` -> {libcuda, 1}. nullopt for
// any other file.
[[nodiscard]] std::optional<std::pair<std::string, std::string>> cuda_library_name(
    std::string_view file_name);

// What the lock (and the prefix's receipts) say the CUDA stack is.
struct LockedStack {
  std::optional<specs::Version> cuda;   // `12.4.1`
  std::optional<specs::Version> cudnn;  // `9.1.0.70`
  // `external:` in the manifest: the machine provides it, so its libraries
  // are expected from outside the prefix.
  bool cuda_external = false;
  bool cudnn_external = false;
};

// The installed `cuda` and `cudnn` packages' versions (receipts first, the
// lock's where nothing is installed) and which the lock takes from the machine.
[[nodiscard]] LockedStack locked_stack(const std::optional<store::PrefixState>& state,
                                       const std::optional<lock::PlatformLock>& locked);

// locked_stack() of the prefix's receipts and the lock file at `lock_file`
// (this platform's part; no file: no lock).
[[nodiscard]] Result<LockedStack> locked_stack_of(const std::filesystem::path& prefix,
                                                  const std::filesystem::path& lock_file);

struct LoadedLibrary {
  std::string name;  // libcublasLt
  std::filesystem::path path;
  bool in_prefix = false;
  std::string version;  // what the file name carries: `12`, `12.4.127`, `9.1.0`
};

struct LibraryProblem {
  enum class Kind : std::uint8_t {
    outside_prefix,     // a CUDA library loaded from outside the prefix
    duplicate,          // two different files of one library loaded
    version,            // a library's or the framework's version is not the lock's
    driver_stub,        // the toolkit's stub libcuda loaded instead of the driver's
    framework_outside,  // the framework itself imported from outside the prefix
  };
  Kind kind = Kind::outside_prefix;
  std::string message;
  std::filesystem::path path;  // the file it is about (for duplicates, the outside or second one)
};

// The versions the framework states (share/envkit/smoke/framework_smoke.py).
struct FrameworkFacts {
  std::string name;                             // torch, tensorflow, jax; empty: none imported
  std::optional<std::filesystem::path> module;  // its __init__.py
  std::optional<std::string> cuda;              // torch.version.cuda, TF's build info, jax's
  std::optional<std::string> cudnn;             // `9.1.0`
};

struct LibraryReport {
  std::vector<LoadedLibrary> libraries;  // in the maps' order, one per file
  std::vector<LibraryProblem> problems;
};

// The CUDA libraries among `mapped` and what is wrong with them against the
// prefix and the lock: each from the prefix (libcuda, the driver's, excepted;
// external packages' expected outside), one file per library, sonames and
// stated versions of the lock's CUDA major and cuDNN release.
[[nodiscard]] LibraryReport check_loaded_libraries(std::span<const MappedFile> mapped,
                                                   const std::filesystem::path& prefix,
                                                   const LockedStack& locked,
                                                   const FrameworkFacts& framework);

// ------------------------------------------------------------ the script

struct FrameworkResult {
  std::string status;  // pass, fail or skip
  std::string reason;
  // The JSON object: the script's, its /proc/self/maps snapshots replaced by
  // `libraries` and `problems`; for a skip or failure envkit saw itself,
  // {"status", "reason"} made here.
  std::string json;
  LibraryReport libraries;
  std::string framework;  // torch, tensorflow, jax; empty when none imported
};

struct FrameworkOptions {
  std::filesystem::path prefix;
  std::filesystem::path script;  // framework_smoke.py
  bool cpu_only = false;
  // No training: import, start CUDA where a GPU is, report the libraries. The
  // result is a skip for `skip_reason` (no GPU), unless something is wrong.
  bool libraries_only = false;
  std::string skip_reason;
  LockedStack locked;
  std::map<std::string, std::optional<std::string>> environment;  // the prefix's
  std::chrono::seconds timeout = std::chrono::minutes(10);
};

// Runs the script with the prefix's bin/python3. A prefix without its own
// Python skips (the framework part needs one); so does one where no
// framework is installed. A library problem fails a run that would have
// passed or skipped. Never an error: what went wrong is in the result.
[[nodiscard]] FrameworkResult run_framework_smoke(const FrameworkOptions& options);

}  // namespace envkit::smoke
