#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"

// Compiling the smoke program (share/envkit/smoke/smoke.cu) with the prefix's
// own nvcc, cuDNN and cuBLAS, once per distinct input: the binary is cached
// under a content hash of everything that goes into it (docs/smoke.md).
namespace envkit::smoke {

// Where the program's sources are: `<exe>/../share/envkit/smoke` for an
// installed envkit, else the source tree's share/envkit/smoke.
[[nodiscard]] std::filesystem::path sources_dir();

// What the build takes from the prefix, checked before anything runs.
struct Toolchain {
  std::filesystem::path prefix;
  std::filesystem::path nvcc;  // prefix/bin/nvcc
  // How to link each library: `-lcudnn`, or `-l:libcudnn.so.9` where the prefix
  // has only the versioned file (wheels carry no development links).
  std::vector<std::string> link_flags;
};

// Checks that `prefix` (an installed prefix) holds bin/nvcc, cudnn.h (or
// cudnn_version.h), libcudnn and libcublas. The error names every part
// missing and how to get it.
[[nodiscard]] Result<Toolchain> check_prefix(const std::filesystem::path& prefix);

// How to link library `name` given the file names in the prefix's lib/:
// `-lNAME` when libNAME.so is there, else `-l:libNAME.so.N` for the newest
// versioned one; nullopt when there is neither.
[[nodiscard]] std::optional<std::string> link_flag(std::string_view name,
                                                   std::span<const std::string> lib_files);

// Everything the binary depends on; a change to any of them is another binary.
struct CacheKeyInputs {
  std::string smoke_cu;                 // the sources' bytes
  std::string smoke_model;              // smoke_model.hpp
  std::string nvcc_version;             // `nvcc --version`
  std::vector<std::string> nvcc_flags;  // -gencode ... and the link flags
  std::string host_compiler;            // path
  std::string host_compiler_version;    // its `--version`
  std::string prefix_packages;          // BuildRequest::prefix_packages
};

// The sha256 (hex) of the inputs, each length-prefixed so no two differ only in
// where one ends and the next begins.
[[nodiscard]] std::string cache_key(const CacheKeyInputs& inputs);

struct BuildRequest {
  Toolchain toolchain;
  std::filesystem::path sources;  // the folder of smoke.cu (sources_dir())
  std::vector<std::string> gencode;
  // What is installed in the prefix, down to each artifact's sha256 (from its
  // receipts): another cuDNN or CUDA is another binary; an unrelated reinstall is not.
  std::string prefix_packages;
  std::filesystem::path cache_dir;  // envkit's cache; binaries go to <cache_dir>/smoke/<key>/
  // The prefix's environment for nvcc, as changes to this process's
  // (PATH with the prefix's bin/ first, so nvcc finds its own ptxas and cicc).
  std::map<std::string, std::optional<std::string>> environment;
  std::function<void(std::string_view)> say;  // progress for the user
};

struct Built {
  std::filesystem::path binary;
  bool reused = false;        // found in the cache, not compiled now
  std::string host_compiler;  // as given to nvcc: `gcc` (its default) or a path to g++-N
  std::filesystem::path log;  // nvcc's output of the compile that made it
};

// The cached binary for these inputs, else compiles it (into a temporary name,
// renamed into place). When nvcc refuses the default host compiler as too new,
// retries with the newest `g++-N` on PATH that it accepts. A failed compile is
// ErrorCode::failed with the log's last lines and its path.
[[nodiscard]] Result<Built> build(const BuildRequest& request);

// The last `count` lines of `text`, for showing the end of a long log.
[[nodiscard]] std::string last_lines(std::string_view text, std::size_t count);

}  // namespace envkit::smoke
