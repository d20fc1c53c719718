#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/recipes/import_pypi.hpp"
#include "envkit/recipes/recipe.hpp"

// JAX's CUDA builds as PyPI states them (recipes/pypi/jax.yaml). Each jax
// release's wheel METADATA names its CUDA extras: `jax[cuda12]` requires
// jaxlib, jax-cuda12-plugin and (up to 0.4.29) the NVIDIA wheels; from 0.4.30
// `jax-cuda12-plugin[with-cuda]`, whose own METADATA names them. An extra
// `cudaNN` whose NVIDIA runtime and cuDNN requirements the metadata states is
// a build `cudaNN` of that release. Extras that need `jaxlib==V+cuda12.cudnn89`
// (Google's find-links page, not an index) are left out, each with a note.
namespace envkit::recipes {

// One `Requires-Dist:` of a METADATA text, with the extra its marker names.
struct MetadataRequirement {
  std::string project;              // PEP 503 normalized
  std::vector<std::string> extras;  // `jax-cuda12-plugin[with_cuda]` -> {"with-cuda"}
  std::string spec;                 // as written, without parentheses
  std::string extra;                // `extra == 'cuda12'` -> cuda12 (normalized); "" = none
};

// The headers of a METADATA text that decide jax's builds.
struct WheelMetadata {
  std::string name;                         // as written; "" when absent
  std::string version;                      // as written; "" when absent
  std::string requires_python;              // "" when absent
  std::vector<std::string> provides_extra;  // normalized (PEP 685)
  std::vector<MetadataRequirement> requires_dist;
};

// Reads the headers (up to the first blank line). A requirement that does not
// parse as PEP 508 is an error naming `source` and its line.
[[nodiscard]] Result<WheelMetadata> parse_wheel_metadata(std::string_view text,
                                                         std::string_view source);

// What one jax release became.
struct JaxRelease {
  std::string version;
  std::string wheel;  // the jax wheel whose metadata was read
  bool metadata_read = false;
  std::vector<std::string> builds;  // ids made (cuda12, ...)
  std::vector<std::string> notes;   // what was left out and why
};

struct PypiJaxImport {
  Recipe jax;  // the overlay: versions with at least one CUDA build on linux-x86_64
  std::vector<JaxRelease> releases;
  std::size_t metadata_read = 0;  // METADATA texts read (PEP 658 or from the wheel)
};

// Asks the index for the pages of jax and of each jax-cudaNN-plugin its extras
// name, and for the METADATA of one wheel per release (jax's py3 wheel; the
// plugin's manylinux x86_64 wheel where the extra defers to it).
[[nodiscard]] Result<PypiJaxImport> import_pypi_jax(const PypiImportOptions& options);

}  // namespace envkit::recipes
