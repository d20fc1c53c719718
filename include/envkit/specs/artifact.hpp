#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/specs/platform.hpp"

// A downloadable file of a package and how it is unpacked into a prefix.
// Recipes list them, the lock records them, archive and store act on them.
namespace envkit::specs {

// What an artifact is, which decides what `install` can do with it.
enum class ArtifactKind : std::uint8_t {
  archive,  // NVIDIA redist / legacy cuDNN / python-build-standalone archive
  wheel,    // a wheel on PyPI (NVIDIA's CUDA and cuDNN wheels)
  runfile,  // an NVIDIA .run installer (CUDA before 11.4.2): a makeself archive envkit unpacks
  source,   // a source tarball built at install (zlib, CPython from python.org)
};

// How an archive's entries map into the prefix.
enum class Layout : std::uint8_t {
  nvidia_redist,           // strip the single top folder; {bin,include,lib,...} land in the prefix
  cudnn_legacy,            // cuda/include -> include, cuda/lib64 -> lib (legacy cuDNN .tgz)
  python_standalone,       // python/ -> prefix (python-build-standalone install_only)
  python_standalone_full,  // python/install/ -> prefix (its "full" archives; the build tree, not)
  nvidia_wheel,            // nvidia/<name>/... or nvidia/cu13/... -> prefix
  source_tree,             // strip the single top folder into a build directory
  // NVIDIA runfiles (docs/install.md, "Runfiles"), by the era of their payload:
  cuda_runfile_nested,  // 9.x-10.0: run_files/cuda-linux.<ver>-<build>.run holds the toolkit tree
  cuda_runfile_builds,  // 10.1-11.x: builds/<component>/ (10.1/10.2: cuda-toolkit/ and cublas/)
  none,                 // not unpacked (a runfile of a lock written before envkit unpacked them)
};

// How a source artifact is built (docs/recipes.md). Absent on an artifact:
// detected from the unpacked tree (a `configure` script first, else CMakeLists.txt).
enum class BuildSystem : std::uint8_t {
  configure,  // ./configure --prefix=P; make; make install
  cmake,      // cmake -S . -B build; cmake --build build; cmake --install build
  // CPython the way pyenv builds it: ./configure --prefix=P --enable-shared
  // --with-ensurepip=install with an $ORIGIN rpath, make, make install (docs/python.md)
  cpython,
};

[[nodiscard]] std::string_view to_string(ArtifactKind kind);
[[nodiscard]] std::string_view to_string(Layout layout);
[[nodiscard]] std::optional<ArtifactKind> parse_artifact_kind(std::string_view text);
[[nodiscard]] std::optional<Layout> parse_layout(std::string_view text);
// Every layout's name, for messages: "nvidia-redist, cudnn-legacy, ... or none".
[[nodiscard]] std::string layout_choices();
[[nodiscard]] std::string_view to_string(BuildSystem build_system);
[[nodiscard]] std::optional<BuildSystem> parse_build_system(std::string_view text);

// One of NVIDIA's patch runfiles for a CUDA release (9.0 has four), applied in order
// over the release's own runfile.
struct RunfilePatch {
  std::string url;
  std::string sha256;
  std::optional<std::uint64_t> size;

  friend bool operator==(const RunfilePatch&, const RunfilePatch&) = default;
};

struct Artifact {
  specs::Platform platform = specs::Platform::linux_x86_64;
  std::string component;  // CUDA component (`cuda_cudart`) or the package name itself
  ArtifactKind kind = ArtifactKind::archive;
  std::string url;
  std::string sha256;                 // 64 lowercase hex digits
  std::optional<std::uint64_t> size;  // bytes, where upstream gives it
  std::string format;                 // tar.xz, tar.gz, tgz, zip, whl, run
  Layout layout = Layout::nvidia_redist;
  // For wheels: the folder inside the wheel that maps to the prefix
  // (`nvidia/cuda_runtime`, `nvidia/cu13`).
  std::string wheel_root;
  // For sources: how to build them; nullopt = detect from the unpacked tree.
  std::optional<BuildSystem> build_system;
  // For runfiles: the CUDA components inside (recipes: all it holds; the lock: those
  // placed), named like the redist components (`cuda_cudart`, `libcublas`).
  std::vector<std::string> components;
  // For runfiles: NVIDIA's patches, applied in this order after the runfile itself.
  std::vector<RunfilePatch> patches;
  // Other URLs of the same file (the same sha256), tried after `url` and the mirrors:
  // Debian's archive carries python.org's CPython tarballs (docs/recipes.md, "also-at").
  std::vector<std::string> also_at;

  friend bool operator==(const Artifact&, const Artifact&) = default;
};

// Whether envkit can place `artifact`: every artifact but a runfile recorded without
// the layout of its era (`layout: none`, as envkit wrote runfiles before it unpacked them).
[[nodiscard]] bool unpackable(const Artifact& artifact);

// Whether `artifact` holds CUDA component `component`: it is that component's
// archive or wheel, or a runfile naming it among its components.
[[nodiscard]] bool holds_component(const Artifact& artifact, std::string_view component);

}  // namespace envkit::specs
