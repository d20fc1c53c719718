#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/specs/artifact.hpp"
#include "envkit/specs/platform.hpp"
#include "envkit/specs/version.hpp"
#include "envkit/specs/version_spec.hpp"

// The recipe database model (docs/recipes.md). Importers build these values
// from upstream metadata; recipe_io reads and writes them as YAML; the solver
// and the lock read them. Nothing here is invented: a fact upstream does not
// give is absent (nullopt / empty), never guessed.
namespace envkit::recipes {

// Artifacts are a spec shared with archive, lock and store (specs/artifact.hpp);
// recipes name them as their own.
using specs::Artifact;
using specs::ArtifactKind;
using specs::BuildSystem;
using specs::Layout;
using specs::parse_artifact_kind;
using specs::parse_build_system;
using specs::parse_layout;
using specs::RunfilePatch;
using specs::to_string;

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
  // Minimum glibc per Linux platform: what the build's manylinux wheels need
  // (manylinux2014 -> 2.17, manylinux_2_28 -> 2.28). A machine with an older glibc
  // installs them and fails at import, so the solver checks it like the driver.
  std::map<specs::Platform, specs::Version> min_glibc;
  // The versions upstream tested this build with (torch 2.1 cu121: cuda 12.1,
  // cudnn 8.9.2.26); the solver prefers them within the allowed range.
  std::map<std::string, std::string> tested;
  // GPU compute capabilities the build supports, where known. For a framework build,
  // those it ships SASS for (PyTorch's TORCH_CUDA_ARCH_LIST): a GPU runs it when one
  // has its major and a minor no higher than its own.
  std::vector<specs::ComputeCapability> cuda_arch;
  // Virtual architectures the build ships PTX for (`12.0+PTX`): the driver JIT-compiles
  // it for any GPU of that compute capability or newer. Empty: none, or not known.
  std::vector<specs::ComputeCapability> cuda_ptx;
  // Platforms the build exists for (those with artifacts, or, for frameworks,
  // those the upstream tables list).
  std::vector<specs::Platform> platforms;
  std::vector<Artifact> artifacts;
  // Platforms where the build exists only as NVIDIA runfile installers envkit cannot
  // unpack (`layout: none`, no era), so that the solver knows without reading the
  // artifact files (written from `artifacts`).
  std::vector<specs::Platform> runfile_only;
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

// Whether envkit can install `build` on `platform`: it has an archive, a wheel, sources
// or an NVIDIA runfile with its era's layout there (CUDA 9.0-11.4.1: cuda_runfile.hpp),
// or no artifacts at all (a framework, which pip installs). A runfile with `layout: none`
// is not installable.
[[nodiscard]] bool installable_on(const Build& build, specs::Platform platform);

// The platforms where `build` has artifacts and all are runfiles envkit cannot unpack
// (`layout: none`); `build.runfile_only` when it carries no artifacts (facts read alone).
[[nodiscard]] std::vector<specs::Platform> runfile_only_platforms(const Build& build);

// Whether `build` has kernels a GPU of `capability` runs: SASS of its major with a
// minor no higher than its own, or PTX of a compute capability no higher than its own.
// A build with no arch list is not known to lack any (true).
[[nodiscard]] bool has_kernels_for(const Build& build, specs::ComputeCapability capability);

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
