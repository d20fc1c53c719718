#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/recipes/recipe.hpp"
#include "envkit/recipes/recipe_io.hpp"

namespace envkit::recipes {

class RecipeCache;

// A layer of facts laid over the database's own files, in the same format: facts
// overlays `<name>.yaml` (merged like pypi/'s, `replaces` included) and artifacts
// `<name>/<version>.yaml`. The live overlay of a package index is one (live_index.hpp):
// what the index serves today wins over what envkit was built with.
struct Layer {
  std::filesystem::path dir;
  // How a lock names where the facts came from: "https://pypi.org/simple (read 2026-11-29)".
  std::string source;
};

// A recipe database directory (docs/recipes.md):
//   <name>.yaml                  facts of a package (what the solver reads)
//   <name>/<version>.yaml        archives, runfiles, sources of a version
//   pypi/<name>/<version>.yaml   NVIDIA wheels of a version (`import pypi-nvidia`)
//   pypi/<name>.yaml             facts read from PyPI (`import pypi-torch`, `pypi-tensorflow`,
//                                `pypi-jax`): an overlay merged over <name>.yaml, its versions
//                                replacing those it `replaces`; the package's only facts where
//                                it has no <name>.yaml (jax)
//   pyenv/<name>.yaml            facts overlay of source releases (`import pyenv`: CPython
//   pyenv/<name>/<version>.yaml  from python.org), merged after pypi/; where a build has an
//                                archive for a platform, its source artifact there is dropped
// then each Layer added, in order. Packages are read on first use, artifacts only when
// asked for.
class Database {
 public:
  [[nodiscard]] static Result<Database> open(const std::filesystem::path& dir);

  [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }
  // Keeps parsed facts and versions in the recipe cache under `cache_root` (envkit's
  // cache folder, recipe_cache.hpp) and reads them from there when the files are
  // unchanged. Without it every file is parsed.
  void use_cache(const std::filesystem::path& cache_root);
  [[nodiscard]] const std::vector<std::string>& names() const { return names_; }
  // Lays `layer` over the database (and over the layers added before it).
  void add_layer(Layer layer);
  [[nodiscard]] const std::vector<Layer>& layers() const { return layers_; }
  // The topmost layer that states facts or artifacts of `name` `version`; nullptr when
  // the database's own files alone describe it.
  [[nodiscard]] const Layer* layer_of(std::string_view name, const specs::Version& version) const;
  [[nodiscard]] bool contains(std::string_view name) const;

  // The facts `<name>.yaml` gives alone, before any overlay: the tables the PyPI importers
  // refine (not cached).
  [[nodiscard]] Result<Recipe> tables(std::string_view name) const;
  // The package's facts without artifacts (pypi/ and pyenv/<name>.yaml merged over them); cached.
  [[nodiscard]] Result<const Recipe*> facts(std::string_view name) const;
  // Reads the facts of several packages at once, each file parsed on its own
  // thread, so that the facts() calls that follow find them cached. Parse
  // errors surface from those facts() calls.
  void prefetch(std::span<const std::string> names) const;
  // The package with every version's components and artifacts (offline and wheels).
  [[nodiscard]] Result<Recipe> load_full(std::string_view name) const;
  // The package with only `version`, with its components and artifacts: what
  // locking or installing one version reads.
  [[nodiscard]] Result<Recipe> load_version(std::string_view name,
                                            const specs::Version& version) const;
  // "sha256:<hex>" over the raw bytes of the database files that describe
  // `name` for a lock: the facts file, its pypi/ and pyenv/ overlays when
  // present, and for each of `versions` its offline, pypi/ and pyenv/
  // per-version files when present. Each file is hashed with its path relative to the database and
  // its length, in a fixed order, so any change to those files changes it. Of a layer, only
  // what it says of `versions` counts (its facts of them and their artifact files): a
  // release the index adds does not make a lock of another one stale.
  // A version's files are named by its original spelling (`8.9.7.29.yaml`);
  // the order and repetitions of `versions` do not matter.
  [[nodiscard]] Result<std::string> digest(std::string_view name,
                                           std::span<const specs::Version> versions) const;

 private:
  // Reads the per-version files of every version `recipe` holds.
  [[nodiscard]] Result<void> add_version_files(Recipe& recipe) const;

  // Facts read in this process, with the recipe cache's key for them.
  struct Loaded {
    Recipe recipe;
    std::string key;
  };

  std::filesystem::path dir_;
  std::vector<std::string> names_;
  std::vector<Layer> layers_;
  std::shared_ptr<const RecipeCache> recipe_cache_;
  mutable std::map<std::string, Loaded, std::less<>> cache_;
};

// Writes `recipe` into the database at `dir`: with ArtifactSet::offline the
// facts file and the offline artifact files (stale version files of the
// package are removed); with ArtifactSet::wheels only the wheel files under
// pypi/. Every file is written atomically and deterministically.
[[nodiscard]] Result<void> write_recipe(const std::filesystem::path& dir, const Recipe& recipe,
                                        ArtifactSet set);

// Writes `recipe` (facts only) as the overlay pypi/<name>.yaml of the database at
// `dir`, atomically; Database::facts() merges it over <name>.yaml.
[[nodiscard]] Result<void> write_facts_overlay(const std::filesystem::path& dir,
                                               const Recipe& recipe);

// Writes `recipe` as the source overlay of the database at `dir`: its facts as
// pyenv/<name>.yaml and its artifacts as pyenv/<name>/<version>.yaml (stale
// version files removed), atomically. Not touched by `import upstream`.
[[nodiscard]] Result<void> write_source_overlay(const std::filesystem::path& dir,
                                                const Recipe& recipe);

// Writes `recipe` as the Debian overlay (debian/<name>.yaml, debian/<name>/<version>.yaml),
// merged after pyenv/: each artifact there is a recorded one at Debian's URL, which the
// merge makes its `also-at` (import_debian_python.hpp).
[[nodiscard]] Result<void> write_debian_overlay(const std::filesystem::path& dir,
                                                const Recipe& recipe);

// The database envkit uses: --recipes, else $ENVKIT_RECIPES, else the one
// installed beside the executable (<prefix>/share/envkit/recipes), else the
// source tree's (a development build).
[[nodiscard]] std::filesystem::path default_database_dir(
    const std::optional<std::filesystem::path>& flag);

}  // namespace envkit::recipes
