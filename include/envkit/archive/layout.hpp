#pragma once

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "envkit/archive/extract.hpp"
#include "envkit/core/result.hpp"
#include "envkit/specs/artifact.hpp"

// How each packaging's entries map into a prefix that works as a CUDA root
// (docs/how-it-works.md, "Layout").
namespace envkit::archive {

struct LayoutTarget {
  specs::Layout layout = specs::Layout::nvidia_redist;
  std::string package;     // `cuda`, `cudnn`, `python`: names the licence folder
  std::string component;   // `cuda_cudart`, `cudnn`: names the licence folder
  std::string wheel_root;  // wheels: `nvidia/cuda_runtime`, `nvidia/cu13`
  // Runfiles: the CUDA components to place (`cuda_cudart`, `libcublas`); the rest of
  // the installer (driver, samples, docs, Nsight) is never written.
  std::vector<std::string> components;
};

// The options that unpack `target`'s archive straight into prefix layout:
// strip_components and map set; the limits left as in `base`.
[[nodiscard]] ExtractOptions layout_options(const LayoutTarget& target, ExtractOptions base = {});

// The options that unpack one of NVIDIA's patch runfiles for `target` (a runfile
// layout) over the release it patches: its payload is a toolkit tree, placed like
// the release's own (docs/runfiles.md).
[[nodiscard]] ExtractOptions runfile_patch_options(const LayoutTarget& target,
                                                   ExtractOptions base = {});

// Wheels cannot hold symlinks: under `root`/lib, for every versioned shared
// library (libcudart.so.12, libcudnn.so.9.1.0) without its links, makes the
// usual soname and development links (libcudart.so -> libcudart.so.12).
// Returns the links it made, relative to `root`.
// `only`, when given, limits this to the libraries of those names (a prefix's
// lib/ also holds other packages' libraries, which are not to be touched).
[[nodiscard]] Result<std::vector<ExtractedEntry>> add_library_links(
    const std::filesystem::path& root, const std::set<std::string>* only = nullptr);

// python-build-standalone has bin/python3 and bin/pip3; users also type
// `python` and `pip`: under `root`/bin, makes python -> python3 and
// pip -> pip3 where they are missing. Returns the links it made.
[[nodiscard]] Result<std::vector<ExtractedEntry>> add_python_links(
    const std::filesystem::path& root);

}  // namespace envkit::archive
