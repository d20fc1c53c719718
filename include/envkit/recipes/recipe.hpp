#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/specs/platform.hpp"
#include "envkit/specs/version.hpp"
#include "envkit/specs/version_spec.hpp"

// The recipe database model (docs/recipes.md). Importers build these values
// from upstream metadata; recipe_io reads and writes them as YAML; the solver
// and the lock read them. Nothing here is invented: a fact upstream does not
// give is absent (nullopt / empty), never guessed.
namespace envkit::recipes {

// What an artifact is, which decides what `install` can do with it.
enum class ArtifactKind : std::uint8_t {
  archive,  // NVIDIA redist / legacy cuDNN / python-build-standalone archive
  wheel,    // a wheel on PyPI (NVIDIA's CUDA and cuDNN wheels)
  runfile,  // an NVIDIA .run installer (CUDA before 11.4.2): recorded, not unpacked
  source,   // a source tarball built at install (zlib)
};

// How an archive's entries map into the prefix.
enum class Layout : std::uint8_t {
  nvidia_redist,      // strip the single top folder; {bin,include,lib,...} land in the prefix
  cudnn_legacy,       // cuda/include -> include, cuda/lib64 -> lib (legacy cuDNN .tgz)
  python_standalone,  // python/ -> prefix (python-build-standalone install_only)
  nvidia_wheel,       // nvidia/<name>/... or nvidia/cu13/... -> prefix
  source_tree,        // strip the single top folder into a build directory
  none,               // not unpacked (runfile)
};

// How a source artifact is built (docs/recipes.md). Absent on an artifact:
// detected from the unpacked tree (a `configure` script first, else CMakeLists.txt).
enum class BuildSystem : std::uint8_t {
  configure,  // ./configure --prefix=P; make; make install
  cmake,      // cmake -S . -B build; cmake --build build; cmake --install build
};

[[nodiscard]] std::string_view to_string(ArtifactKind kind);
[[nodiscard]] std::string_view to_string(Layout layout);
[[nodiscard]] std::optional<ArtifactKind> parse_artifact_kind(std::string_view text);
[[nodiscard]] std::optional<Layout> parse_layout(std::string_view text);
[[nodiscard]] std::string_view to_string(BuildSystem build_system);
[[nodiscard]] std::optional<BuildSystem> parse_build_system(std::string_view text);

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

  friend bool operator==(const Artifact&, const Artifact&) = default;
};

// One CUDA component of a CUDA release: cuda_cudart 12.4.127.
struct Component {
  std::string name;
  std::string version;  // as upstream spells it
  friend bool operator==(const Component&, const Component&) = default;
};

// A build of a version: torch 2.1.2 `cu121`, cuDNN 9.1.0.70 `cuda12`. Versions
// without variants have one build with an empty id.
struct Build {
  std::string id;
  // Requirements on other packages (canonical name -> PEP 440 spec; an empty
  // spec means any version).
  std::map<std::string, specs::VersionSpec> requires_;
  // Requirements that apply only on some platforms (package of `requires_` ->
  // those platforms); a requirement absent here applies on every platform.
  // cuDNN 9 links zlib on Linux only.
  std::map<std::string, std::vector<specs::Platform>> requires_only_on;
  // Minimum NVIDIA driver per platform (CUDA), text as upstream spells it:
  // natively (NVIDIA's toolkit/driver table) and through minor-version
  // compatibility (the family minimum: 11.x >= 450.80.02, 12.x >= 525.60.13, ...).
  std::map<specs::Platform, specs::Version> min_driver;
  std::map<specs::Platform, specs::Version> min_driver_compat;
  // The versions upstream tested this build with (torch 2.1 cu121: cuda 12.1,
  // cudnn 8.9.2.26); the solver prefers them within the allowed range.
  std::map<std::string, std::string> tested;
  // GPU compute capabilities the build supports, where known.
  std::vector<specs::ComputeCapability> cuda_arch;
  // Platforms the build exists for (those with artifacts, or, for frameworks,
  // those the upstream tables list).
  std::vector<specs::Platform> platforms;
  std::vector<Artifact> artifacts;
  // Frameworks: the package index whose plain release (`torch==2.4.1`, no local
  // `+cu124` label) is this build: PyPI carries one CUDA build of each torch
  // release. Empty: not known. Other builds are on their own indexes.
  std::string wheel_index;
};

// The index PyPI's own wheels come from.
inline constexpr std::string_view kPypiIndex = "https://pypi.org/simple";

// The requirements of `build` that apply on `platform`: those `requires_only_on`
// does not restrict, and those it restricts to a list holding `platform`.
[[nodiscard]] std::map<std::string, specs::VersionSpec> requirements_on(const Build& build,
                                                                        specs::Platform platform);

struct RecipeVersion {
  specs::Version version;  // original() keeps upstream's spelling (8.9.7.29)
  std::optional<std::string> release_date;
  std::vector<Component> components;  // CUDA only
  std::vector<Build> builds;          // at least one
};

struct Recipe {
  std::string name;  // canonical: cuda, cudnn, python, zlib, torch, tensorflow, tensorflow-gpu
  // Where the facts came from (upstream files, tables), for people reading the database.
  std::vector<std::string> sources;
  // CUDA: the components a framework needs by default (runtime, compiler, math libraries).
  std::vector<std::string> default_components;
  std::vector<RecipeVersion> versions;  // sorted, oldest first
  // An overlay's versions that refine coarser ones (`2.1.0`, `2.1.2` refine `2.1`): the
  // versions of the base named here (by original spelling) are dropped when this is merged.
  std::vector<std::string> replaces;

  [[nodiscard]] const RecipeVersion* find(const specs::Version& version) const;
};

// The text of one upstream file and the name it goes by inside the upstream
// folder (for errors and Recipe::sources). Importers take these, never paths.
struct SourceText {
  std::string_view text;
  std::string_view file;
};

// Overlays `update` onto `base`: versions are matched by version, builds by id,
// artifacts by (platform, component, kind); facts `update` gives replace the
// old ones, facts it leaves out are kept. A requirement `update` gives replaces
// the old one together with its platforms (`requires_only_on`). Versions of `base` that
// `update.replaces` names are removed first. Sources are united. The result is sorted (versions
// ascending, builds by id, artifacts by platform/component/kind).
void merge_into(Recipe& base, const Recipe& update);

// Sorts versions, builds and artifacts into the canonical order.
void canonicalize(Recipe& recipe);

}  // namespace envkit::recipes
