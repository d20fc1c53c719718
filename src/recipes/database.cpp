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
// wheels, then the source releases of pyenv's definitions, then Debian's copies of
// those tarballs (their URLs become the pyenv artifacts' `also-at`).
constexpr std::string_view kPypiOverlay = "pypi";
constexpr std::string_view kSourceOverlay = "pyenv";
constexpr std::string_view kDebianOverlay = "debian";
constexpr std::array<std::string_view, 3> kOverlays = {kPypiOverlay, kSourceOverlay,
                                                       kDebianOverlay};

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

// One database file as read: where it is, the name it goes by in digests (its path
// relative to the database; `live/...` in a layer) and its bytes (nullopt: not there).
// Parsing and hashing use the same bytes, so a recipe is cached under the digest of
// exactly what it was made of.
struct FileText {
  fs::path path;
  std::string name;
  std::optional<std::string> text;
};

// Parses a facts file of package `name` (`<name>.yaml` or an overlay of it).
Result<Recipe> parse_facts_file(const FileText& file, std::string_view name) {
  auto recipe = read_facts(*file.text, file.path.string());
  if (!recipe) return recipe;
  if (recipe->name != name) {
    return Error::input(fmt::format("{} names the package {}", file.path.string(),
                                    text::quoted(recipe->name)))
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

// Reads `relative` (a path under `root`) into `files` under the digest name `prefix` +
// `relative`; a file that is not there is recorded as absent.
Result<void> read_into(std::vector<FileText>& files, const fs::path& root, const fs::path& relative,
                       std::string_view prefix = {}) {
  FileText file{root / relative, std::string(prefix) + relative.generic_string(), std::nullopt};
  std::error_code ec;
  if (fs::exists(file.path, ec)) {
    auto bytes = yaml::read_file(file.path);
    if (!bytes) return bytes.error();
    file.text = *std::move(bytes);
  }
  files.push_back(std::move(file));
  return {};
}

// A layer's files go by `live/<path>` in digests: never the name of a database file.
constexpr std::string_view kLayerPrefix = "live/";

// The files that describe a package: its facts (<name>.yaml, the pypi/, pyenv/ and debian/
// overlays, then each layer's <name>.yaml, in merge order) and, for each of
// `version_files`, its artifacts (offline, pypi/, pyenv/, debian/, then each layer's).
struct PackageFiles {
  std::vector<FileText> facts;
  std::vector<FileText> versions;
};

Result<PackageFiles> package_files(const fs::path& dir, std::span<const Layer> layers,
                                   const std::string& package,
                                   std::span<const std::string> version_files) {
  PackageFiles files;
  const auto read_all = [&](std::vector<FileText>& into, const fs::path& relative) -> Result<void> {
    if (auto read = read_into(into, dir, relative); !read) return read;
    for (const auto folder : kOverlays) {
      if (auto read = read_into(into, dir, fs::path(folder) / relative); !read) return read;
    }
    for (const auto& layer : layers) {
      if (auto read = read_into(into, layer.dir, relative, kLayerPrefix); !read) return read;
    }
    return {};
  };
  if (auto read = read_all(files.facts, package + ".yaml"); !read) return read.error();
  if (std::none_of(files.facts.begin(), files.facts.end(),
                   [](const FileText& f) { return f.text.has_value(); })) {
    return Error::input(
        fmt::format("no facts file of {} in {}", text::quoted(package), dir.string()));
  }
  for (const auto& file : version_files) {
    if (auto read = read_all(files.versions, fs::path(package) / file); !read) return read.error();
  }
  return files;
}

// sha256 (hex) over `files` as `<name>\0<length>\0<bytes>` each; an absent file adds nothing.
void hash_files(core::Sha256& hash, const std::vector<FileText>& files) {
  for (const auto& file : files) {
    if (!file.text) continue;
    hash.update(file.name);
    hash.update(std::string_view("\0", 1));
    hash.update(std::to_string(file.text->size()));
    hash.update(std::string_view("\0", 1));
    hash.update(*file.text);
  }
}

std::string digest_of(const std::vector<FileText>& files) {
  core::Sha256 hash;
  hash_files(hash, files);
  return hash.hex_digest();
}

// The recipe cache's key for what `files` make of `what` (`facts <name>` or
// `version <name> <version>`): the same files read for another purpose are another entry.
std::string cache_key(std::string_view what, const std::vector<FileText>& files) {
  std::string keyed(what);
  keyed += '\0';
  keyed += digest_of(files);
  return core::sha256_hex(keyed);
}

Result<void> add_artifacts_from(const FileText& file, Recipe& recipe) {
  if (!file.text) return {};
  return read_artifacts(*file.text, file.path.string(), recipe);
}

bool is_layer_file(const FileText& file) {
  return file.name.starts_with(kLayerPrefix);
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

void Database::add_layer(Layer layer) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(layer.dir, ec)) {
    const auto name = entry.path().stem().string();
    if (entry.is_regular_file() && entry.path().extension() == ".yaml" && !contains(name)) {
      names_.insert(std::upper_bound(names_.begin(), names_.end(), name), name);
    }
  }
  layers_.push_back(std::move(layer));
  cache_.clear();  // facts read before now were read without it
}

namespace {

// A package's facts: the first facts file there is (<name>.yaml; the pypi/ overlay for a
// package read from PyPI alone, jax), with every later one merged over it in order.
Result<Recipe> parse_merged_facts(std::span<const FileText> files, std::string_view name) {
  std::optional<Recipe> merged;
  for (const auto& file : files) {
    if (!file.text) continue;
    auto recipe = parse_facts_file(file, name);
    if (!recipe) return recipe.error();
    if (!merged) {
      merged = *std::move(recipe);
    } else {
      merge_into(*merged, *recipe);
    }
  }
  return *std::move(merged);
}

// The merged facts of `name` with the key they are cached under: from the recipe
// cache where it has them, else parsed (and then kept there).
struct LoadedFacts {
  Recipe recipe;
  std::string key;
};

Result<LoadedFacts> load_merged_facts(const fs::path& dir, std::span<const Layer> layers,
                                      const std::string& name, const RecipeCache* cache) {
  auto files = package_files(dir, layers, name, {});
  if (!files) return files.error();
  auto key = cache_key("facts " + name, files->facts);
  if (cache) {
    if (auto cached = cache->load(key)) return LoadedFacts{*std::move(cached), std::move(key)};
  }
  auto recipe = parse_merged_facts(files->facts, name);
  if (!recipe) return recipe.error();
  if (cache) cache->store(key, *recipe);
  return LoadedFacts{*std::move(recipe), std::move(key)};
}

}  // namespace

void Database::use_cache(const fs::path& cache_root) {
  recipe_cache_ = std::make_shared<const RecipeCache>(cache_root);
}

Result<Recipe> Database::tables(std::string_view name) const {
  std::vector<FileText> files;
  if (auto read = read_into(files, dir_, std::string(name) + ".yaml"); !read) return read.error();
  if (!files[0].text) {
    return Error::input(
        fmt::format("{} has no tables: {} does not exist", name, files[0].path.string()));
  }
  return parse_facts_file(files[0], name);
}

Result<const Recipe*> Database::facts(std::string_view name) const {
  if (auto it = cache_.find(name); it != cache_.end()) return &it->second.recipe;
  if (!contains(name)) return unknown_package(name, dir_, names_);
  auto loaded = load_merged_facts(dir_, layers_, std::string(name), recipe_cache_.get());
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
      return load_merged_facts(dir_, layers_, name, recipe_cache_.get());
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
  auto files = package_files(dir_, layers_, package, version_file);
  if (!files) return files.error();
  std::vector<FileText> all = files->facts;
  all.insert(all.end(), files->versions.begin(), files->versions.end());
  const auto key = cache_key(fmt::format("version {} {}", package, version.original()), all);
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
  for (const auto& file : files->versions) {
    if (auto added = add_artifacts_from(file, recipe); !added) return added.error();
  }
  prefer_prebuilt(recipe);
  canonicalize(recipe);
  // Kept only when the facts were made of the same bytes as read here (a file
  // edited in between is read again next time).
  if (recipe_cache_ && cache_.at(package).key == cache_key("facts " + package, files->facts)) {
    recipe_cache_->store(key, recipe);
  }
  return recipe;
}

namespace {

// What a layer's facts file says of `versions` alone, as text: a lock of those versions
// goes stale when it changes, not when the layer learns of another release.
std::optional<std::string> layer_facts_of(const FileText& file, std::string_view name,
                                          std::span<const specs::Version> versions) {
  if (!file.text) return std::nullopt;
  auto recipe = parse_facts_file(file, name);
  if (!recipe) return file.text;  // unreadable: its bytes, so that any edit counts
  Recipe subset{.name = recipe->name};
  for (const auto& version : recipe->versions) {
    if (std::find(versions.begin(), versions.end(), version.version) != versions.end())
      subset.versions.push_back(version);
  }
  if (subset.versions.empty()) return std::nullopt;
  return write_facts(subset);
}

}  // namespace

Result<std::string> Database::digest(std::string_view name,
                                     std::span<const specs::Version> versions) const {
  if (!contains(name)) return unknown_package(name, dir_, names_);
  std::vector<std::string> version_files;
  for (const auto& version : versions)
    version_files.push_back(file_name_of(version));
  std::sort(version_files.begin(), version_files.end());
  version_files.erase(std::unique(version_files.begin(), version_files.end()), version_files.end());
  auto files = package_files(dir_, layers_, std::string(name), version_files);
  if (!files) return files.error();
  std::vector<FileText> hashed;
  for (auto& file : files->facts) {
    if (is_layer_file(file)) file.text = layer_facts_of(file, name, versions);
    hashed.push_back(std::move(file));
  }
  hashed.insert(hashed.end(), files->versions.begin(), files->versions.end());
  return "sha256:" + digest_of(hashed);
}

const Layer* Database::layer_of(std::string_view name, const specs::Version& version) const {
  const std::string package(name);
  const std::string version_file[] = {file_name_of(version)};
  for (auto layer = layers_.rbegin(); layer != layers_.rend(); ++layer) {
    std::vector<FileText> files;
    if (!read_into(files, layer->dir, package + ".yaml", kLayerPrefix) ||
        !read_into(files, layer->dir, fs::path(package) / version_file[0], kLayerPrefix))
      continue;
    const std::span<const specs::Version> wanted(&version, 1);
    if (layer_facts_of(files[0], name, wanted) || files[1].text) return &*layer;
  }
  return nullptr;
}

Result<void> Database::add_version_files(Recipe& recipe) const {
  for (const auto& version : std::vector<RecipeVersion>(recipe.versions)) {
    const std::string version_file[] = {file_name_of(version.version)};
    auto files = package_files(dir_, layers_, recipe.name, version_file);
    if (!files) return files.error();
    for (const auto& file : files->versions) {
      if (auto added = add_artifacts_from(file, recipe); !added) return added;
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

Result<void> write_debian_overlay(const fs::path& dir, const Recipe& recipe) {
  if (auto written = write_overlay_facts(overlay_path(dir, kDebianOverlay, recipe.name), recipe);
      !written) {
    return written;
  }
  return write_version_files(dir / kDebianOverlay / recipe.name, recipe, ArtifactSet::offline);
}

fs::path default_database_dir(const std::optional<fs::path>& flag) {
  if (flag) return *flag;
  if (auto from_env = env::get(env::kRecipes); from_env && !from_env->empty()) return *from_env;
  if (auto installed = sys::installed_data_dir("recipes")) return *installed;
  return fs::path(ENVKIT_SOURCE_RECIPES_DIR);
}

}  // namespace envkit::recipes
