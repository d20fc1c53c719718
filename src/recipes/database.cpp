#include "envkit/recipes/database.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <future>
#include <set>
#include <string>

#include "envkit/core/env_vars.hpp"
#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/sys/fs.hpp"

namespace envkit::recipes {

namespace fs = std::filesystem;

namespace {

std::string file_name_of(const specs::Version& version) {
  return version.original() + ".yaml";
}

fs::path overlay_path(const fs::path& dir, std::string_view name) {
  return dir / "pypi" / (std::string(name) + ".yaml");
}

// Reads a facts file of package `name` (`<name>.yaml` or its overlay).
Result<Recipe> read_facts_file(const fs::path& path, std::string_view name) {
  auto text = sys::read_file(path);
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
  auto bytes = sys::read_file(path);
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
  auto text = sys::read_file(path);
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

// A package's facts file with its pypi/ overlay merged in; the overlay alone for a
// package that has no facts file of its own.
Result<Recipe> read_merged_facts(const fs::path& dir, std::string_view name) {
  std::error_code ec;
  const auto base = dir / (std::string(name) + ".yaml");
  if (!fs::exists(base, ec)) return read_facts_file(overlay_path(dir, name), name);
  auto recipe = read_facts_file(base, name);
  if (!recipe) return recipe.error();
  if (const auto overlay = overlay_path(dir, name); fs::exists(overlay, ec)) {
    auto refined = read_facts_file(overlay, name);
    if (!refined) return refined.error();
    merge_into(*recipe, *refined);
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
  // One of the two facts files exists (open() listed the package from it).
  std::error_code ec;
  const bool overlay_only = !fs::exists(dir_ / (package + ".yaml"), ec);
  if (auto hashed = hash_file(hash, dir_, package + ".yaml", !overlay_only); !hashed) {
    return hashed.error();
  }
  if (auto hashed = hash_file(hash, dir_, fs::path("pypi") / (package + ".yaml"), overlay_only);
      !hashed) {
    return hashed.error();
  }
  for (const auto& file : files) {
    for (const fs::path& relative : {fs::path(package) / file, fs::path("pypi") / package / file}) {
      if (auto hashed = hash_file(hash, dir_, relative, false); !hashed) return hashed.error();
    }
  }
  return "sha256:" + hash.hex_digest();
}

Result<void> Database::add_version_files(Recipe& recipe) const {
  for (const auto& version : std::vector<RecipeVersion>(recipe.versions)) {
    const auto file = file_name_of(version.version);
    for (const fs::path& path : {dir_ / recipe.name / file, dir_ / "pypi" / recipe.name / file}) {
      if (auto added = add_artifacts_from(path, recipe); !added) return added;
    }
  }
  canonicalize(recipe);
  return {};
}

Result<void> write_recipe(const fs::path& dir, const Recipe& recipe, ArtifactSet set) {
  const fs::path versions_dir =
      set == ArtifactSet::wheels ? dir / "pypi" / recipe.name : dir / recipe.name;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (set == ArtifactSet::offline) {
    if (auto written = sys::write_file_atomic(dir / (recipe.name + ".yaml"), write_facts(recipe));
        !written) {
      return written;
    }
  }
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

Result<void> write_facts_overlay(const fs::path& dir, const Recipe& recipe) {
  const fs::path path = overlay_path(dir, recipe.name);
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) {
    return Error::failed(fmt::format("cannot create {}", path.parent_path().string()))
        .because(ec.message());
  }
  return sys::write_file_atomic(path, write_facts(recipe));
}

fs::path default_database_dir(const std::optional<fs::path>& flag) {
  if (flag) return *flag;
  if (auto from_env = env::get(env::kRecipes); from_env && !from_env->empty()) return *from_env;
  if (auto installed = sys::installed_data_dir("recipes")) return *installed;
  return fs::path(ENVKIT_SOURCE_RECIPES_DIR);
}

}  // namespace envkit::recipes
