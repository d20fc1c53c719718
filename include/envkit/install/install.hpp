#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/install/sources.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/net/reachability.hpp"
#include "envkit/net/transport.hpp"
#include "envkit/store/cache.hpp"
#include "envkit/store/kernel_scan.hpp"
#include "envkit/store/link.hpp"
#include "envkit/store/plan.hpp"

// `envkit install`: make a prefix match the lock. Artifacts are filled into
// the cache (in parallel), a new generation of the prefix is linked from the
// cache, and the prefix is switched to it in one rename.
namespace envkit::install {

struct InstallOptions {
  std::filesystem::path prefix;
  specs::Platform platform = specs::host_platform();
  // nullptr: offline, the cache only (and say what is missing).
  net::Transport* transport = nullptr;
  std::vector<std::string> mirrors;
  int jobs = 8;
  store::Packaging preferred = store::Packaging::archive;
  // `packaging: auto`: `preferred` where its host answers, the other where only
  // its host does, said with -v only; false: `preferred`, the other taken when it
  // cannot be had and said so (`fell_back`).
  bool auto_packaging = false;
  // How hosts are asked whether they answer, before anything is downloaded
  // (install/sources.hpp): the per-network cache file, its time to live, --refresh.
  net::ReachabilityOptions reachability;
  std::optional<store::LinkMode> link_mode;  // nullopt: the best that works
  // Place every package afresh from the cache, even those already installed:
  // puts back files deleted or changed in the prefix (`envkit doctor` finds them).
  bool reinstall = false;
  // Compile the new Python packages' .py files to bytecode (`--compile-bytecode`);
  // the .pyc files are in the receipts and in each package's RECORD.
  bool compile_bytecode = false;
  // Where the project is: `external: {python: ./tools/python}` starts here.
  std::filesystem::path project_dir;
  // The GPUs the new generation's CUDA files must have kernels for (docs/doctor.md,
  // "Kernel coverage"): install stops before the switch when a package has none for
  // one. No GPUs: nothing is judged; the kernels are read into the receipts anyway.
  store::KernelTargets kernel_targets;
  // envkit's cache folder: what each artifact's files hold is remembered there by
  // its sha256 (store/kernel_cache.hpp); empty: not remembered.
  std::filesystem::path kernel_cache_dir;
  // Human progress lines ("waiting for ...", "unpacked ...").
  std::function<void(const std::string&)> note;
  // What -v adds: where each package comes from and why (may be empty).
  std::function<void(const std::string&)> detail;
};

struct InstallReport {
  std::filesystem::path prefix;
  int generation = 0;
  bool changed = false;
  std::string link_mode;               // how files came from the cache ("" when none moved)
  std::vector<std::string> added;      // "cuda 12.4.1 (archive)"
  std::vector<std::string> removed;    // "cudnn 8.9.7.29"
  std::vector<std::string> unchanged;  // "zlib 1.3.1"
  std::vector<std::string> skipped;    // one sentence each
  std::vector<std::string> fell_back;  // "cuda: installed from wheels, archives unreachable"
  // "python 3.11.16: the machine's /usr/bin/python3.11 (3.11.2) stands in: github.com is not
  // reachable": the machine's interpreter or library in place of the lock's artifacts.
  std::vector<std::string> stand_ins;
  // Where each package to install came from and why, decided before downloading
  // (empty offline: the cache only).
  std::vector<SourceDecision> sources;
  std::vector<std::string> warnings;  // what the user should know about the result
  std::uint64_t downloaded_bytes = 0;
  std::size_t files = 0;  // in the new generation
};

[[nodiscard]] Result<InstallReport> install(const lock::Lockfile& lockfile,
                                            const store::Cache& cache,
                                            const InstallOptions& options);

}  // namespace envkit::install
