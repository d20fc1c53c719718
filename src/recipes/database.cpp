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
#include "envkit/recipes/recipe_cache.hpp"
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

// One database file as read: its path relative to the database and its bytes
// (nullopt: not there). Parsing and hashing use the same bytes, so a recipe is
// cached under the digest of exactly what it was made of.
struct FileText {
  fs::path relative;
  std::optional<std::string> text;
};

// Parses a facts file of package `name` (`<name>.yaml` or its overlay).
Result<Recipe> parse_facts_file(const fs::path& dir, const FileText& file, std::string_view name) {
  const fs::path path = dir / file.relative;
  auto recipe = read_facts(*file.text, path.string());
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

// Reads `relative` (a path under `dir`) into `files`; a file that is not there
// is recorded as absent unless `required`.
Result<void> read_into(std::vector<FileText>& files, const fs::path& dir, fs::path relative,
                       bool required) {
  const fs::path path = dir / relative;
  std::error_code ec;
  if (!required && !fs::exists(path, ec)) {
    files.push_back({std::move(relative), std::nullopt});
    return {};
  }
  auto bytes = yaml::read_file(path);
  if (!bytes) return bytes.error();
  files.push_back({std::move(relative), *std::move(bytes)});
  return {};
}

// The files that describe `package` for a lock, in the digest's order: <name>.yaml (or,
// for a package read from PyPI alone, its pypi/ overlay), the pypi/ and pyenv/ overlays,
// then for each of `version_files` its offline, pypi/ and pyenv/ files.
Result<std::vector<FileText>> package_files(const fs::path& dir, const std::string& package,
                                            std::span<const std::string> version_files) {
  std::vector<FileText> files;
  std::error_code ec;
  const bool overlay_only = !fs::exists(dir / (package + ".yaml"), ec);
  if (auto read = read_into(files, dir, package + ".yaml", !overlay_only); !read) {
    return read.error();
  }
  for (const auto folder : kOverlays) {
    const bool required = overlay_only && folder == kPypiOverlay;
    if (auto read = read_into(files, dir, fs::path(folder) / (package + ".yaml"), required);
        !read) {
      return read.error();
    }
  }
  for (const auto& file : version_files) {
    if (auto read = read_into(files, dir, fs::path(package) / file, false); !read) {
      return read.error();
    }
    for (const auto folder : kOverlays) {
      if (auto read = read_into(files, dir, fs::path(folder) / package / file, false); !read) {
        return read.error();
      }
    }
  }
  return files;
}

// sha256 (hex) over `files` as `<path>\0<length>\0<bytes>` each; an absent file adds nothing.
std::string digest_of(const std::vector<FileText>& files) {
  core::Sha256 hash;
  for (const auto& file : files) {
    if (!file.text) continue;
    hash.update(file.relative.generic_string());
    hash.update(std::string_view("\0", 1));
    hash.update(std::to_string(file.text->size()));
    hash.update(std::string_view("\0", 1));
    hash.update(*file.text);
  }
  return hash.hex_digest();
}

// Where a package's facts files end in package_files(): the version files follow.
constexpr std::size_t kFactsFiles = 1 + kOverlays.size();

// The recipe cache's key for what `files` make of `what` (`facts <name>` or
// `version <name> <version>`): the same files read for another purpose are another entry.
std::string cache_key(std::string_view what, const std::vector<FileText>& files) {
  std::string keyed(what);
  keyed += '\0';
  keyed += digest_of(files);
  return core::sha256_hex(keyed);
}

Result<void> add_artifacts_from(const fs::path& dir, const FileText& file, Recipe& recipe) {
  if (!file.text) return {};
  return read_artifacts(*file.text, (dir / file.relative).string(), recipe);
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
// alone for a package that has no facts file of its own (jax). `files` as package_files().
Result<Recipe> parse_merged_facts(const fs::path& dir, std::span<const FileText> files,
                                  std::string_view name) {
  if (!files[0].text) return parse_facts_file(dir, files[1], name);
  auto recipe = parse_facts_file(dir, files[0], name);
  if (!recipe) return recipe.error();
  for (std::size_t i = 1; i < kFactsFiles; ++i) {
    if (!files[i].text) continue;
    auto refined = parse_facts_file(dir, files[i], name);
    if (!refined) return refined.error();
    merge_into(*recipe, *refined);
  }
  return recipe;
}

// The merged facts of `name` with the key they are cached under: from the recipe
// cache where it has them, else parsed (and then kept there).
struct LoadedFacts {
  Recipe recipe;
  std::string key;
};

Result<LoadedFacts> load_merged_facts(const fs::path& dir, const std::string& name,
                                      const RecipeCache* cache) {
  auto files = package_files(dir, name, {});
  if (!files) return files.error();
  auto key = cache_key("facts " + name, *files);
  if (cache) {
    if (auto cached = cache->load(key)) return LoadedFacts{*std::move(cached), std::move(key)};
  }
  auto recipe = parse_merged_facts(dir, *files, name);
  if (!recipe) return recipe.error();
  if (cache) cache->store(key, *recipe);
  return LoadedFacts{*std::move(recipe), std::move(key)};
}

}  // namespace

void Database::use_cache(const fs::path& cache_root) {
  recipe_cache_ = std::make_shared<const RecipeCache>(cache_root);
}

Result<const Recipe*> Database::facts(std::string_view name) const {
  if (auto it = cache_.find(name); it != cache_.end()) return &it->second.recipe;
  if (!contains(name)) return unknown_package(name, dir_, names_);
  auto loaded = load_merged_facts(dir_, std::string(name), recipe_cache_.get());
  if (!loaded) return loaded.error();
  auto [it, inserted] =
      cache_.emplace(std::string(name), Loaded{std::move(loaded->recipe), std::move(loaded->key)});
  return &it->second.recipe;
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
  std::vector<std::future<Result<LoadedFacts>>> parsed;
  for (const auto& name : wanted) {
    parsed.push_back(std::async(std::launch::async, [this, name] {
      return load_merged_facts(dir_, name, recipe_cache_.get());
    }));
  }
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    // A file that fails is left out: facts() reads it again and reports the error.
    if (auto loaded = parsed[i].get()) {
      cache_.emplace(wanted[i], Loaded{std::move(loaded->recipe), std::move(loaded->key)});
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
  if (!contains(name)) return unknown_package(name, dir_, names_);
  const std::string package(name);
  const std::string version_file[] = {file_name_of(version)};
  auto files = package_files(dir_, package, version_file);
  if (!files) return files.error();
  const auto key = cache_key(fmt::format("version {} {}", package, version.original()), *files);
  if (recipe_cache_) {
    if (auto cached = recipe_cache_->load(key)) return *std::move(cached);
  }
  auto facts_of = facts(name);
  if (!facts_of) return facts_of.error();
  const RecipeVersion* found = (*facts_of)->find(version);
  if (found == nullptr) {
    return Error::input(fmt::format("{} has no version {}", name, text::quoted(version.original())))
        .hint(fmt::format("`envkit recipes list {}` lists them", name));
  }
  Recipe recipe = **facts_of;
  recipe.versions = {*found};
  // The version's files as read above, in package_files() order.
  for (std::size_t i = kFactsFiles; i < files->size(); ++i) {
    if (auto added = add_artifacts_from(dir_, (*files)[i], recipe); !added) return added.error();
  }
  prefer_prebuilt(recipe);
  canonicalize(recipe);
  // Kept only when the facts were made of the same bytes as read here (a file
  // edited in between is read again next time).
  const std::vector<FileText> facts_files(files->begin(), files->begin() + kFactsFiles);
  if (recipe_cache_ && cache_.at(package).key == cache_key("facts " + package, facts_files)) {
    recipe_cache_->store(key, recipe);
  }
  return recipe;
}

Result<std::string> Database::digest(std::string_view name,
                                     std::span<const specs::Version> versions) const {
  if (!contains(name)) return unknown_package(name, dir_, names_);
  std::vector<std::string> version_files;
  for (const auto& version : versions)
    version_files.push_back(file_name_of(version));
  std::sort(version_files.begin(), version_files.end());
  version_files.erase(std::unique(version_files.begin(), version_files.end()), version_files.end());
  auto files = package_files(dir_, std::string(name), version_files);
  if (!files) return files.error();
  return "sha256:" + digest_of(*files);
}

Result<void> Database::add_version_files(Recipe& recipe) const {
  for (const auto& version : std::vector<RecipeVersion>(recipe.versions)) {
    const auto file = file_name_of(version.version);
    std::vector<FileText> files;
    if (auto read = read_into(files, dir_, fs::path(recipe.name) / file, false); !read) return read;
    for (const auto folder : kOverlays) {
      if (auto read = read_into(files, dir_, fs::path(folder) / recipe.name / file, false); !read)
        return read;
    }
    for (const auto& read : files) {
      if (auto added = add_artifacts_from(dir_, read, recipe); !added) return added;
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
