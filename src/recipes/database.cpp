#include "envkit/recipes/database.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <future>
#include <set>
#include <string>

#include "envkit/core/env_vars.hpp"
#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/sys/fs.hpp"
#include "yaml_source.hpp"

namespace envkit::recipes {

namespace fs = std::filesystem;

namespace {

std::string file_name_of(const specs::Version& version) {
  return version.original() + ".yaml";
}

// The overlay folders, merged over <name>.yaml in this order: PyPI's facts and
// wheels, then the source releases of pyenv's definitions.
constexpr std::string_view kPypiOverlay = "pypi";
constexpr std::string_view kSourceOverlay = "pyenv";
constexpr std::array<std::string_view, 2> kOverlays = {kPypiOverlay, kSourceOverlay};

fs::path overlay_path(const fs::path& dir, std::string_view overlay, std::string_view name) {
  return dir / overlay / (std::string(name) + ".yaml");
}

// A prebuilt binary wins over building from source: a source artifact is
// dropped where the same build has an archive of its component for its
// platform (python-build-standalone beside a python.org tarball).
void prefer_prebuilt(Recipe& recipe) {
  for (auto& version : recipe.versions) {
    for (auto& build : version.builds) {
      std::set<std::pair<specs::Platform, std::string>> prebuilt;
      for (const auto& a : build.artifacts) {
        if (a.kind == ArtifactKind::archive) prebuilt.emplace(a.platform, a.component);
      }
      std::erase_if(build.artifacts, [&](const Artifact& a) {
        return a.kind == ArtifactKind::source && prebuilt.contains({a.platform, a.component});
      });
    }
  }
}

// Reads a facts file of package `name` (`<name>.yaml` or its overlay).
Result<Recipe> read_facts_file(const fs::path& path, std::string_view name) {
  auto text = yaml::read_file(path);
  if (!text) return text.error();
  auto recipe = read_facts(*text, path.string());
  if (!recipe) return recipe;
  if (recipe->name != name) {
    return Error::input(
               fmt::format("{} names the package {}", path.string(), text::quoted(recipe->name)))
        .hint(fmt::format("a facts file is named after its package: {}.yaml", recipe->name));
  }
  return recipe;
}

Error unknown_package(std::string_view name, const fs::path& dir,
                      const std::vector<std::string>& names) {
  Error error =
      Error::input(fmt::format("no recipe for {} in {}", text::quoted(name), dir.string()));
  const std::vector<std::string_view> known(names.begin(), names.end());
  if (auto guess = text::did_you_mean(name, known)) {
    error.hint(fmt::format("did you mean {}?", text::quoted(*guess)));
  }
  return error;
}

// Hashes `relative` (a path under `dir`) into `hash` as `<path>\0<length>\0<bytes>`;
// a file that is not there adds nothing unless `required`.
Result<void> hash_file(core::Sha256& hash, const fs::path& dir, const fs::path& relative,
                       bool required) {
  const fs::path path = dir / relative;
  std::error_code ec;
  if (!required && !fs::exists(path, ec)) return {};
  auto bytes = yaml::read_file(path);
  if (!bytes) return bytes.error();
  hash.update(relative.generic_string());
  hash.update(std::string_view("\0", 1));
  hash.update(std::to_string(bytes->size()));
  hash.update(std::string_view("\0", 1));
  hash.update(*bytes);
  return {};
}

Result<void> add_artifacts_from(const fs::path& path, Recipe& recipe) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return {};
  auto text = yaml::read_file(path);
  if (!text) return text.error();
  return read_artifacts(*text, path.string(), recipe);
}

}  // namespace

Result<Database> Database::open(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return Error::input(fmt::format("recipe database {} is not a directory", dir.string()))
        .hint("pass `--recipes DIR` or set ENVKIT_RECIPES");
  }
  Database db;
  db.dir_ = dir;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") {
      db.names_.push_back(entry.path().stem().string());
    }
  }
  if (ec) return Error::failed(fmt::format("cannot list {}", dir.string())).because(ec.message());
  // A package read from PyPI alone (jax) has its overlay and no <name>.yaml under it.
  std::error_code no_overlays;
  for (const auto& entry : fs::directory_iterator(dir / "pypi", no_overlays)) {
    const auto name = entry.path().stem().string();
    if (entry.is_regular_file() && entry.path().extension() == ".yaml" &&
        std::find(db.names_.begin(), db.names_.end(), name) == db.names_.end()) {
      db.names_.push_back(name);
    }
  }
  std::sort(db.names_.begin(), db.names_.end());
  return db;
}

bool Database::contains(std::string_view name) const {
  return std::binary_search(names_.begin(), names_.end(), name);
}

namespace {

// A package's facts file with its pypi/ and pyenv/ overlays merged in; the pypi/ overlay
// alone for a package that has no facts file of its own (jax).
Result<Recipe> read_merged_facts(const fs::path& dir, std::string_view name) {
  std::error_code ec;
  const auto base = dir / (std::string(name) + ".yaml");
  if (!fs::exists(base, ec)) {
    return read_facts_file(overlay_path(dir, kPypiOverlay, name), name);
  }
  auto recipe = read_facts_file(base, name);
  if (!recipe) return recipe.error();
  for (const auto folder : kOverlays) {
    if (const auto overlay = overlay_path(dir, folder, name); fs::exists(overlay, ec)) {
      auto refined = read_facts_file(overlay, name);
      if (!refined) return refined.error();
      merge_into(*recipe, *refined);
    }
  }
  return recipe;
}

}  // namespace

Result<const Recipe*> Database::facts(std::string_view name) const {
  if (auto it = cache_.find(name); it != cache_.end()) return it->second.get();
  if (!contains(name)) return unknown_package(name, dir_, names_);
  auto recipe = read_merged_facts(dir_, name);
  if (!recipe) return recipe.error();
  auto [it, inserted] =
      cache_.emplace(std::string(name), std::make_unique<Recipe>(*std::move(recipe)));
  return it->second.get();
}

void Database::prefetch(std::span<const std::string> names) const {
  std::vector<std::string> wanted;
  for (const auto& name : names) {
    if (contains(name) && !cache_.contains(name) &&
        std::find(wanted.begin(), wanted.end(), name) == wanted.end()) {
      wanted.push_back(name);
    }
  }
  if (wanted.size() < 2) return;  // nothing to overlap
  std::vector<std::future<Result<Recipe>>> parsed;
  for (const auto& name : wanted) {
    parsed.push_back(
        std::async(std::launch::async, [this, name] { return read_merged_facts(dir_, name); }));
  }
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    // A file that fails is left out: facts() reads it again and reports the error.
    if (auto recipe = parsed[i].get()) {
      cache_.emplace(wanted[i], std::make_unique<Recipe>(*std::move(recipe)));
    }
  }
}

Result<Recipe> Database::load_full(std::string_view name) const {
  auto facts_of = facts(name);
  if (!facts_of) return facts_of.error();
  Recipe recipe = **facts_of;
  if (auto added = add_version_files(recipe); !added) return added.error();
  return recipe;
}

Result<Recipe> Database::load_version(std::string_view name, const specs::Version& version) const {
  auto facts_of = facts(name);
  if (!facts_of) return facts_of.error();
  const RecipeVersion* found = (*facts_of)->find(version);
  if (found == nullptr) {
    return Error::input(fmt::format("{} has no version {}", name, text::quoted(version.original())))
        .hint(fmt::format("`envkit recipes list {}` lists them", name));
  }
  Recipe recipe = **facts_of;
  recipe.versions = {*found};
  if (auto added = add_version_files(recipe); !added) return added.error();
  return recipe;
}

Result<std::string> Database::digest(std::string_view name,
                                     std::span<const specs::Version> versions) const {
  if (!contains(name)) return unknown_package(name, dir_, names_);
  const std::string package(name);
  std::vector<std::string> files;
  for (const auto& version : versions)
    files.push_back(file_name_of(version));
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());

  core::Sha256 hash;
  // <name>.yaml exists, or for a package read from PyPI alone (jax) its pypi/ overlay.
  std::error_code ec;
  const bool overlay_only = !fs::exists(dir_ / (package + ".yaml"), ec);
  if (auto hashed = hash_file(hash, dir_, package + ".yaml", !overlay_only); !hashed) {
    return hashed.error();
  }
  for (const auto folder : kOverlays) {
    const bool required = overlay_only && folder == kPypiOverlay;
    if (auto hashed = hash_file(hash, dir_, fs::path(folder) / (package + ".yaml"), required);
        !hashed) {
      return hashed.error();
    }
  }
  for (const auto& file : files) {
    if (auto hashed = hash_file(hash, dir_, fs::path(package) / file, false); !hashed) {
      return hashed.error();
    }
    for (const auto folder : kOverlays) {
      if (auto hashed = hash_file(hash, dir_, fs::path(folder) / package / file, false); !hashed) {
        return hashed.error();
      }
    }
  }
  return "sha256:" + hash.hex_digest();
}

Result<void> Database::add_version_files(Recipe& recipe) const {
  for (const auto& version : std::vector<RecipeVersion>(recipe.versions)) {
    const auto file = file_name_of(version.version);
    if (auto added = add_artifacts_from(dir_ / recipe.name / file, recipe); !added) return added;
    for (const auto folder : kOverlays) {
      if (auto added = add_artifacts_from(dir_ / folder / recipe.name / file, recipe); !added) {
        return added;
      }
    }
  }
  prefer_prebuilt(recipe);
  canonicalize(recipe);
  return {};
}

namespace {

// Writes each version's artifacts of `set` into `versions_dir`/<version>.yaml;
// the files of versions that left the recipe are removed.
Result<void> write_version_files(const fs::path& versions_dir, const Recipe& recipe,
                                 ArtifactSet set) {
  std::error_code ec;
  std::set<std::string> wanted;
  for (const auto& version : recipe.versions) {
    const std::string text = write_artifacts(version, set);
    if (text.empty()) continue;
    fs::create_directories(versions_dir, ec);
    const auto file = file_name_of(version.version);
    wanted.insert(file);
    if (auto written = sys::write_file_atomic(versions_dir / file, text); !written) return written;
  }
  // A version that left the recipe must not leave its artifacts behind.
  if (fs::is_directory(versions_dir, ec)) {
    for (const auto& entry : fs::directory_iterator(versions_dir, ec)) {
      if (entry.path().extension() == ".yaml" &&
          !wanted.contains(entry.path().filename().string())) {
        fs::remove(entry.path(), ec);
      }
    }
  }
  return {};
}

Result<void> write_overlay_facts(const fs::path& path, const Recipe& recipe) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) {
    return Error::failed(fmt::format("cannot create {}", path.parent_path().string()))
        .because(ec.message());
  }
  return sys::write_file_atomic(path, write_facts(recipe));
}

}  // namespace

Result<void> write_recipe(const fs::path& dir, const Recipe& recipe, ArtifactSet set) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (set == ArtifactSet::offline) {
    if (auto written = sys::write_file_atomic(dir / (recipe.name + ".yaml"), write_facts(recipe));
        !written) {
      return written;
    }
  }
  return write_version_files(
      set == ArtifactSet::wheels ? dir / kPypiOverlay / recipe.name : dir / recipe.name, recipe,
      set);
}

Result<void> write_facts_overlay(const fs::path& dir, const Recipe& recipe) {
  return write_overlay_facts(overlay_path(dir, kPypiOverlay, recipe.name), recipe);
}

Result<void> write_source_overlay(const fs::path& dir, const Recipe& recipe) {
  if (auto written = write_overlay_facts(overlay_path(dir, kSourceOverlay, recipe.name), recipe);
      !written) {
    return written;
  }
  return write_version_files(dir / kSourceOverlay / recipe.name, recipe, ArtifactSet::offline);
}

fs::path default_database_dir(const std::optional<fs::path>& flag) {
  if (flag) return *flag;
  if (auto from_env = env::get(env::kRecipes); from_env && !from_env->empty()) return *from_env;
  if (auto installed = sys::installed_data_dir("recipes")) return *installed;
  return fs::path(ENVKIT_SOURCE_RECIPES_DIR);
}

}  // namespace envkit::recipes
