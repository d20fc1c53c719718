#pragma once

#include <string>
#include <string_view>

#include "envkit/core/result.hpp"
#include "envkit/recipes/recipe.hpp"

// The recipe database's YAML files (docs/recipes.md). A package's facts —
// versions, builds, requirements, machine facts, components — live in one
// file the solver reads quickly; each version's artifacts live in files of
// their own, read only when a version is locked, installed or checked.
namespace envkit::recipes {

// Which artifacts an artifacts file holds: what the offline importers make
// (archives, runfiles, sources), what `import pypi-nvidia` makes (wheels), or all of
// them (a live overlay's files, where a new CUDA release has its components and wheels).
enum class ArtifactSet : std::uint8_t { offline, wheels, all };

[[nodiscard]] bool belongs_to(const Artifact& artifact, ArtifactSet set);

// `<name>.yaml`: everything but the artifacts. Deterministic: the same recipe
// gives the same bytes.
[[nodiscard]] std::string write_facts(const Recipe& recipe);
// `<name>/<version>.yaml` (offline) or `pypi/<name>/<version>.yaml` (wheels):
// the version's artifacts of that set; "" when it has none.
[[nodiscard]] std::string write_artifacts(const RecipeVersion& version, ArtifactSet set);

// Parses a facts file. Errors name file:line:column.
[[nodiscard]] Result<Recipe> read_facts(std::string_view text, std::string_view file);
// Parses an artifacts file and adds its artifacts to the matching version and
// builds of `recipe` (which must have them: an artifact of an unknown version
// or build is an error).
[[nodiscard]] Result<void> read_artifacts(std::string_view text, std::string_view file,
                                          Recipe& recipe);

}  // namespace envkit::recipes
