// Where the files of NVIDIA's CUDA runfiles land (docs/runfiles.md, "Layout").
// Their payloads hold a whole CUDA installation tree (bin/, include/, lib64/,
// nvvm/, extras/CUPTI/, targets/x86_64-linux/) per era:
//   9.x-10.0   run_files/cuda-linux.<ver>-<build>.run, a runfile holding the tree
//   10.1/10.2  builds/cuda-toolkit/<tree> and builds/cublas/<tree>
//   11.x       builds/<component>/<tree>, one folder per redist component
// Only the components the lock names are placed, into the redist archives'
// layout (lib64 -> lib); the driver, samples, docs and Nsight never land.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <utility>

#include "layout_paths.hpp"

namespace envkit::archive::detail {

namespace {

// Library name (before .so / .a, without _static*) -> the redist component that
// ships it. The shared libraries follow NVIDIA's redist archives as listed in
// ../shared/upstream/nvidia-redist-archive-features/lookup_db_soname_to_package.json
// (tests/unit/archive/runfile_layout_test.cpp checks this table against it where
// the folder exists); the static-only libraries are those of the same archives.
constexpr std::array<std::pair<std::string_view, std::string_view>, 28> kLibraryComponents = {{
    {"libcublas", "libcublas"},         {"libcublasLt", "libcublas"},
    {"libnvblas", "libcublas"},         {"libcudart", "cuda_cudart"},
    {"libcudadevrt", "cuda_cudart"},    {"libculibos", "cuda_cudart"},
    {"libcuda", "cuda_cudart"},  // lib64/stubs/libcuda.so, the link-time stub
    {"libcufft", "libcufft"},           {"libcufftw", "libcufft"},
    {"libcurand", "libcurand"},         {"libcusolver", "libcusolver"},
    {"libcusolverMg", "libcusolver"},   {"liblapack", "libcusolver"},
    {"libmetis", "libcusolver"},        {"libcusparse", "libcusparse"},
    {"libnvrtc", "cuda_nvrtc"},         {"libnvrtc-builtins", "cuda_nvrtc"},
    {"libcupti", "cuda_cupti"},         {"libnvperf_host", "cuda_cupti"},
    {"libnvperf_target", "cuda_cupti"}, {"libpcsamplingutil", "cuda_cupti"},
    {"libcheckpoint", "cuda_cupti"},    {"libnvptxcompiler", "cuda_nvcc"},
    {"libnvToolsExt", "cuda_nvtx"},     {"libnvjpeg", "libnvjpeg"},
    {"libnvJitLink", "libnvjitlink"},   {"libaccinj64", "cuda_nvprof"},
    {"libcuinj64", "cuda_nvprof"},
}};

// What nvcc runs to compile and link (the cuda_nvcc archive's bin/).
constexpr std::array<std::string_view, 9> kNvccTools = {"nvcc",      "nvcc.profile", "ptxas",
                                                        "fatbinary", "nvlink",       "cudafe",
                                                        "cudafe++",  "bin2c",        "nvprune"};

bool wants(const LayoutTarget& target, std::string_view component) {
  return std::find(target.components.begin(), target.components.end(), component) !=
         target.components.end();
}

// `libcublas_static.a` -> `libcublas`; `libcudart.so.9.0.176` -> `libcudart`.
std::string_view library_base(std::string_view file) {
  auto base = file.substr(0, std::min(file.find(".so"), file.find(".a")));
  for (std::string_view suffix : {"_static_nocallback", "_static"}) {
    if (base.ends_with(suffix)) return base.substr(0, base.size() - suffix.size());
  }
  return base;
}

// lib64/<rest> and targets/x86_64-linux/lib/<rest>: a library of a wanted
// component (or, in a component's own folder, any) goes to lib/.
std::optional<std::string> place_library(const LayoutTarget& target, std::string_view rest,
                                         std::string_view folder_component) {
  if (rest.empty() || rest.ends_with('/')) return std::nullopt;  // folders come with their files
  const auto file =
      rest.substr(rest.rfind('/') == std::string_view::npos ? 0 : rest.rfind('/') + 1);
  const auto component =
      folder_component.empty() ? component_of_library(file) : std::optional(folder_component);
  if (!component || !wants(target, *component)) return std::nullopt;
  return fmt::format("lib/{}", rest);
}

// A CUDA installation tree's path -> the prefix, or nullopt to leave it out.
// `folder_component`: the tree is one component's (11.x builds/<component>/).
std::optional<std::string> place_tree_path(const LayoutTarget& target, std::string_view path,
                                           std::string_view folder_component) {
  if (path.ends_with('/')) return std::nullopt;  // folders are made on the way to files
  const auto [first, rest] = split_first(path);
  if (rest.empty()) {
    // Top-level files: the licence and the release's version file; installer
    // scripts and symlinks named lib64/include (11.x) are left out.
    if (first == "EULA.txt" || first == "LICENSE") return licence_path(target, first);
    if (first == "version.txt" || first == "version.json") return std::string(first);
    return std::nullopt;
  }
  if (first == "include") return fmt::format("include/{}", rest);
  if (first == "lib64" || first == "lib") return place_library(target, rest, folder_component);
  if (first == "bin") {
    const bool nvcc = wants(target, "cuda_nvcc");
    const bool tool = std::find(kNvccTools.begin(), kNvccTools.end(), rest) != kNvccTools.end();
    if (nvcc && (tool || rest.starts_with("crt/"))) return fmt::format("bin/{}", rest);
    return std::nullopt;
  }
  if (first == "nvvm") {
    if (!wants(target, "cuda_nvcc")) return std::nullopt;
    return std::string(path);
  }
  if (first == "extras") {
    const auto [extra, below] = split_first(rest);
    if (extra != "CUPTI" || !wants(target, "cuda_cupti")) return std::nullopt;
    const auto [sub, file] = split_first(below);
    if (sub == "include") return fmt::format("include/{}", file);
    if (sub == "lib64" || sub == "lib") return place_library(target, file, "cuda_cupti");
    return std::nullopt;
  }
  if (first == "targets") {
    const auto [arch, below] = split_first(rest);
    if (arch != "x86_64-linux") return std::nullopt;
    const auto [sub, file] = split_first(below);
    if (sub == "include") return fmt::format("include/{}", file);
    if (sub == "lib") return place_library(target, file, folder_component);
    return std::nullopt;
  }
  return std::nullopt;  // doc/, samples/, jre/, libnsight/, nsight*/, share/, tools/, src/
}

// builds/<folder>/<tree>: 10.1/10.2's cuda-toolkit and cublas hold whole trees
// whose libraries say which component they are; 11.x folders are components.
std::optional<std::string> place_builds_path(const LayoutTarget& target, std::string_view path) {
  const auto [builds, rest] = split_first(path);
  if (builds != "builds") return std::nullopt;
  const auto [folder, tree] = split_first(rest);
  if (tree.empty()) return std::nullopt;
  if (folder == "cuda-toolkit" || folder == "cublas") return place_tree_path(target, tree, {});
  if (!wants(target, folder)) return std::nullopt;
  return place_tree_path(target, tree, folder);
}

constexpr std::string_view kToolkitRunfiles = "run_files/cuda-linux";

}  // namespace

std::optional<std::string_view> component_of_library(std::string_view file) {
  const auto base = library_base(file);
  for (const auto& [library, component] : kLibraryComponents) {
    if (library == base) return component;
  }
  return std::nullopt;
}

bool is_cuda_toolkit_runfile(std::string_view entry_path) {
  return entry_path.starts_with(kToolkitRunfiles) && entry_path.ends_with(".run") &&
         entry_path.find('/', kToolkitRunfiles.size()) == std::string_view::npos;
}

PathMap cuda_runfile_map(const LayoutTarget& target) {
  if (target.layout == specs::Layout::cuda_runfile_builds) {
    return [target](std::string_view path) { return place_builds_path(target, path); };
  }
  // 9.x-10.0: only the nested toolkit runfile's entries, which arrive as
  // run_files/cuda-linux.<ver>-<build>/<tree>.
  return [target](std::string_view path) -> std::optional<std::string> {
    const auto [folder, rest] = split_first(path);
    if (folder != "run_files") return std::nullopt;
    const auto [runfile, tree] = split_first(rest);
    if (!runfile.starts_with(kToolkitRunfiles.substr(std::string_view("run_files/").size())) ||
        tree.empty()) {
      return std::nullopt;
    }
    return place_tree_path(target, tree, {});
  };
}

PathMap cuda_patch_map(const LayoutTarget& target) {
  return [target](std::string_view path) { return place_tree_path(target, path, {}); };
}

}  // namespace envkit::archive::detail
