// The recipe cache (recipe_cache.hpp): what it keeps reads back as the recipe the
// YAML makes, a damaged or foreign entry is never read, and a changed file is read again.
#include "envkit/recipes/recipe_cache.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "envkit/recipes/database.hpp"
#include "envkit/recipes/recipe_io.hpp"
#include "envkit/sys/fs.hpp"
#include "support/envkit_runner.hpp"
#include "support/temp_dir.hpp"

using namespace envkit;
using namespace envkit::recipes;
namespace fs = std::filesystem;

namespace {

Database open_database(const fs::path& dir) {
  auto db = Database::open(dir);
  if (!db) FAIL(db.error().to_string());
  return *std::move(db);
}

// Everything the YAML writers say of `recipe`: its facts and each version's artifact files.
std::string as_yaml(const Recipe& recipe) {
  std::string out = write_facts(recipe);
  for (const auto& version : recipe.versions) {
    for (const auto set : {ArtifactSet::offline, ArtifactSet::wheels}) {
      for (const auto& component : version.components)
        out += component.name + "=" + component.version + "\n";
      out += write_artifacts(version, set);
    }
  }
  return out;
}

std::vector<fs::path> cache_files(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ignored;
  for (const auto& entry : fs::directory_iterator(dir, ignored)) {
    if (entry.path().extension() == ".bin") files.push_back(entry.path());
  }
  return files;
}

// The same recipe, field by field as far as the encoding goes (it keeps versions' spelling).
void require_same(const Recipe& a, const Recipe& b) {
  REQUIRE(encode_recipe(a) == encode_recipe(b));
  REQUIRE(as_yaml(a) == as_yaml(b));
}

}  // namespace

TEST_CASE("recipe cache: every package of the committed database reads back as itself",
          "[recipes][recipe-cache]") {
  const auto db = open_database(test::source_dir() / "recipes");
  for (const auto& name : db.names()) {
    INFO(name);
    auto full = db.load_full(name);
    REQUIRE(full);
    const auto bytes = encode_recipe(*full);
    const auto decoded = decode_recipe(bytes);
    REQUIRE(decoded);
    require_same(*decoded, *full);
    CHECK(decoded->versions.size() == full->versions.size());
  }
}

TEST_CASE("recipe cache: a damaged or foreign entry is not read", "[recipes][recipe-cache]") {
  const auto db = open_database(test::source_dir() / "recipes");
  auto cuda = db.facts("cuda");
  REQUIRE(cuda);
  const auto bytes = encode_recipe(**cuda);
  REQUIRE(decode_recipe(bytes));

  CHECK_FALSE(decode_recipe(""));
  CHECK_FALSE(decode_recipe("not a recipe at all"));
  for (const auto keep : {bytes.size() - 1, bytes.size() / 2, std::size_t{20}, std::size_t{90}})
    CHECK_FALSE(decode_recipe(std::string_view(bytes).substr(0, keep)));
  CHECK_FALSE(decode_recipe(bytes + "x"));
  for (const auto at : {bytes.size() - 1, bytes.size() / 2, std::size_t{100}}) {
    auto flipped = bytes;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x01);
    INFO("byte " << at);
    CHECK_FALSE(decode_recipe(flipped));
  }
  auto other_format = bytes;
  other_format[std::string_view("envkit-recipe\n").size()] =
      static_cast<char>(kRecipeCacheFormat + 1);
  CHECK_FALSE(decode_recipe(other_format));
}

TEST_CASE("recipe cache: a database reads the same with it, from it, and when it is damaged",
          "[recipes][recipe-cache]") {
  const test::TempDir dir;
  const auto recipes = dir.path() / "recipes";
  fs::copy(test::source_dir() / "recipes", recipes, fs::copy_options::recursive);
  const auto cache_root = dir.path() / "cache";
  const auto cache_dir = RecipeCache(cache_root).dir();
  const auto version = specs::Version::parse("12.4.1").value();

  const auto plain = open_database(recipes);
  auto facts = plain.facts("cuda");
  REQUIRE(facts);
  auto locked = plain.load_version("cuda", version);
  REQUIRE(locked);
  REQUIRE(!locked->versions.front().builds.front().artifacts.empty());

  const auto read_all = [&](std::string_view what) {
    INFO(what);
    auto db = open_database(recipes);
    db.use_cache(cache_root);
    auto cached_facts = db.facts("cuda");
    REQUIRE(cached_facts);
    require_same(**cached_facts, **facts);
    auto cached_version = db.load_version("cuda", version);
    REQUIRE(cached_version);
    require_same(*cached_version, *locked);
  };
  read_all("first, filling the cache");
  const auto files = cache_files(cache_dir);
  REQUIRE(files.size() == 2);  // cuda's facts, cuda 12.4.1
  read_all("from the cache");

  for (const auto& file : files) {
    auto bytes = sys::read_file(file).value();
    bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x20);
    REQUIRE(sys::write_file_atomic(file, bytes));
  }
  read_all("from a damaged cache");
  // Damaged entries are written again, whole.
  for (const auto& file : files)
    CHECK(decode_recipe(sys::read_file(file).value()));

  for (const auto& file : files)
    REQUIRE(sys::write_file_atomic(file, ""));
  read_all("from emptied entries");
}

TEST_CASE("recipe cache: an edited file is read again, never answered from the cache",
          "[recipes][recipe-cache]") {
  const test::TempDir dir;
  const auto recipes = dir.path() / "recipes";
  fs::copy(test::source_dir() / "recipes", recipes, fs::copy_options::recursive);
  const auto cache_root = dir.path() / "cache";
  const auto read_versions = [&] {
    auto db = open_database(recipes);
    db.use_cache(cache_root);
    auto zlib = db.facts("zlib");
    REQUIRE(zlib);
    std::vector<std::string> versions;
    for (const auto& v : (*zlib)->versions)
      versions.push_back(v.version.original());
    return versions;
  };
  const auto before = read_versions();
  REQUIRE(read_versions() == before);  // from the cache
  REQUIRE(std::find(before.begin(), before.end(), "1.2.11") != before.end());

  // 1.2.11 leaves the facts file.
  auto text = sys::read_file(recipes / "zlib.yaml").value();
  const std::string entry =
      "  - version: \"1.2.11\"\n    builds:\n      - platforms: [linux-x86_64, linux-aarch64]\n";
  const auto at = text.find(entry);
  REQUIRE(at != std::string::npos);
  text.erase(at, entry.size());
  REQUIRE(sys::write_file_atomic(recipes / "zlib.yaml", text));
  const auto after = read_versions();
  CHECK(after.size() == before.size() - 1);
  CHECK(std::find(after.begin(), after.end(), "1.2.11") == after.end());
}

TEST_CASE("recipe cache: a cache folder that cannot be made is no cache, and no error",
          "[recipes][recipe-cache]") {
  const test::TempDir dir;
  // A file where the cache folder would be: nothing can be written under it.
  const auto cache_root = dir.write("cache", "a file, not a folder");
  auto db = open_database(test::source_dir() / "recipes");
  db.use_cache(cache_root);
  const auto plain = open_database(test::source_dir() / "recipes");
  for (int i = 0; i < 2; ++i) {
    auto facts = db.facts("zlib");
    REQUIRE(facts);
    require_same(**facts, **plain.facts("zlib"));
    auto version = db.load_version("zlib", specs::Version::parse("1.3.1").value());
    REQUIRE(version);
    require_same(*version, *plain.load_version("zlib", specs::Version::parse("1.3.1").value()));
  }
  CHECK(fs::is_regular_file(cache_root));
}
