#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/specs/version.hpp"

// What a machine's CUDA or cuDNN installation really holds, read from its files: the
// truth the manifest's `external: {cuda: ..., cudnn: ...}` is checked against at lock
// and install (locking/external_check.hpp) and that doctor names when an external
// library is missing.
namespace envkit::project {

// One file of an installation that states the package's version.
struct VersionEvidence {
  // As precise as the file is: 12.4.1 (version.json), 12.4 (cuda.h), 12 (libcudart.so.12).
  specs::Version version;
  std::filesystem::path file;
  std::string says;      // what in it: `CUDA_VERSION 13000`, `"cuda": {"version": "12.4.1"}`
  bool library = false;  // a library's file name (the loader's view), not a header or note
};

// Whether `stated` and `found` agree on the release numbers both give: 13.0.88 and 13.0
// agree, 9.0.176 and 13.0 do not, 7.3.0.29 and 7.3.0 agree.
[[nodiscard]] bool versions_agree(const specs::Version& stated, const specs::Version& found);

// `#define CUDA_VERSION 13000` in cuda.h: 13.0 (MAJOR * 1000 + MINOR * 10).
[[nodiscard]] std::optional<specs::Version> parse_cuda_h_version(std::string_view text);
// `CUDA Version 9.0.176` in version.txt (CUDA 10.2 and older).
[[nodiscard]] std::optional<specs::Version> parse_cuda_version_txt(std::string_view text);
// CUDNN_MAJOR, CUDNN_MINOR and CUDNN_PATCHLEVEL in cudnn_version.h (cuDNN 8 and newer) or
// cudnn.h (cuDNN 7 and older): 9.1.0.
[[nodiscard]] std::optional<specs::Version> parse_cudnn_header_version(std::string_view text);
// The version a library's file name carries: libcudart.so.9.0 is 9.0, libcudnn.so.7.3.0 is
// 7.3.0, libcudart.so.13 is 13; libcudart.so.11.0 is 11 (every CUDA 11 runtime has that
// soname). nullopt for another stem or no version (`libcudart.so`).
[[nodiscard]] std::optional<specs::Version> library_file_version(std::string_view file_name,
                                                                 std::string_view stem);

// The library whose file name carries `package`'s version: libcudart.so (cuda), libcudnn.so
// (cudnn).
[[nodiscard]] std::string_view stack_library_stem(std::string_view package);

// Every file under `root` that states the version of `package` (`cuda` or `cudnn`), headers
// and notes first (most precise first), then the libraries:
//   cuda:  version.json, version.txt, include/cuda.h, libcudart.so.*
//   cudnn: include/cudnn_version.h, include/cudnn.h, libcudnn.so.*
// with libraries in lib64/, lib/, lib/x86_64-linux-gnu/, lib/aarch64-linux-gnu/ and
// targets/*/lib/. Unreadable files are skipped; empty when nothing states it.
[[nodiscard]] std::vector<VersionEvidence> stack_versions_in(std::string_view package,
                                                             const std::filesystem::path& root);

// What in `found` (stack_versions_in) contradicts `stated`: the first header or note when it
// disagrees; else, when there are libraries and none agrees, the first library. nullopt
// when the tree holds the stated version (or states nothing).
[[nodiscard]] std::optional<VersionEvidence> contradiction(
    const specs::Version& stated, const std::vector<VersionEvidence>& found);

// The folder an `external:` value (`written`: a version, `system` or a path) names, if it
// names one: a path (relative to `base`; an nvcc file stands for the folder above its
// bin/), or for cuda `system` the folder above nvcc on PATH's bin/.
[[nodiscard]] std::optional<std::filesystem::path> named_tree(std::string_view package,
                                                              std::string_view written,
                                                              const std::filesystem::path& base);

// Where a machine's CUDA or cuDNN is looked for.
struct TreeSearch {
  // The folder `external:` names for the package (relative paths already resolved): the
  // only place looked in when set.
  std::optional<std::filesystem::path> named;
  // cuDNN: the folder `external:` names for CUDA, looked in first.
  std::optional<std::filesystem::path> beside;
  std::optional<std::string> cuda_home;       // $CUDA_HOME
  std::optional<std::string> cuda_path;       // $CUDA_PATH
  std::optional<std::filesystem::path> nvcc;  // nvcc on PATH: its folder's parent is a CUDA
  std::vector<std::filesystem::path> defaults{"/usr/local/cuda"};
  // cuDNN from the distribution's packages (/usr/include/cudnn_version.h).
  std::vector<std::filesystem::path> system_roots{"/usr"};
  // Never taken as the machine's (an envkit prefix: activation points CUDA_HOME at it).
  std::vector<std::filesystem::path> exclude;

  // This machine's: CUDA_HOME, CUDA_PATH and nvcc on PATH from the environment.
  [[nodiscard]] static TreeSearch from_host();
};

// The installation found for a package, and where envkit looked.
struct TreeLookup {
  std::optional<std::filesystem::path> root;  // nullopt: none found
  std::string found_by;                       // `CUDA_HOME`, `nvcc on PATH`, `envkit.yaml`
  std::vector<VersionEvidence> versions;      // stack_versions_in(root)
  // Each place asked, in order, and why it was passed over when it was:
  // `/opt/cuda (CUDA_HOME): does not exist`.
  std::vector<std::string> looked;
};

// The first place of `search` that states `package`'s version (stack_versions_in), in
// order: `named` alone when set; else `beside` (cuDNN), CUDA_HOME, CUDA_PATH, the folder
// above nvcc's bin/, the defaults and, for cuDNN, the system roots.
[[nodiscard]] TreeLookup find_stack(std::string_view package, const TreeSearch& search);

// `package`'s name as users read it: CUDA, cuDNN.
[[nodiscard]] std::string_view stack_display_name(std::string_view package);

}  // namespace envkit::project
