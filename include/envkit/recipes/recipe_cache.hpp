#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "envkit/recipes/recipe.hpp"

// Parsed recipes kept between runs (docs/recipes.md, "The recipe cache"): reading
// the YAML of a package's facts and of a version's artifacts is most of what
// `envkit lock` does, and the files rarely change. An entry is the Recipe that
// Database::facts() or Database::load_version() made of some files, in a compact
// binary form, under a key derived from the sha256 of those files' bytes (their
// paths relative to the database included) and this format's number, so that
// an edited file is a new key and never a stale answer. The YAML stays the
// source of truth: an entry that is missing, truncated, of another format or
// fails its checksum is a miss, and the files are parsed again.
namespace envkit::recipes {

// Bump when Recipe (or a type in it) gains a field, or when reading a file into
// a Recipe changes: entries of another format are never read.
inline constexpr std::uint32_t kRecipeCacheFormat = 3;

// The encoding of `recipe`: a header (magic, format, the payload's sha256), then
// every field. The same recipe gives the same bytes.
[[nodiscard]] std::string encode_recipe(const Recipe& recipe);
// The recipe `bytes` encode; nullopt unless they are a whole, intact encoding of
// this format (wrong magic or format, checksum mismatch, truncated, trailing bytes,
// a value out of range, a version that does not parse).
[[nodiscard]] std::optional<Recipe> decode_recipe(std::string_view bytes);

// The entries in one folder (`<cache>/recipes/v<format>`). Reading never fails (a
// missing or unreadable folder is an empty cache); writing is best effort (a
// read-only cache just keeps nothing), atomic (temp file, then rename) and checked
// (an encoding that does not decode to itself is not written).
class RecipeCache {
 public:
  explicit RecipeCache(std::filesystem::path cache_root);

  [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }
  // The entry for `key` (a hex digest), or nullopt.
  [[nodiscard]] std::optional<Recipe> load(std::string_view key) const;
  void store(std::string_view key, const Recipe& recipe) const;

 private:
  [[nodiscard]] std::filesystem::path file_of(std::string_view key) const;
  std::filesystem::path dir_;
};

}  // namespace envkit::recipes
