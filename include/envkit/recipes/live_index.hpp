#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/recipes/database.hpp"
#include "envkit/recipes/import_pypi.hpp"

// The live overlay (docs/recipes.md, "Today's index"): what a package index serves now,
// read by the database's own importers into a Layer laid over the built-in database.
// The database is memory (driver tables, tested builds, runfiles, compute capabilities);
// the index says which releases exist today and what their wheels pin. Kept in envkit's
// cache, one folder per index:
//   <cache>/recipes/live/<host-path>-<hash>/state.json   the index, when it was read, for
//                                                        which frameworks, what it serves
//   <cache>/recipes/live/<host-path>-<hash>/layer-<id>/  the Layer (database format)
namespace envkit::recipes {

// The frameworks the live overlay reads; NVIDIA's CUDA and cuDNN wheels are read always.
inline constexpr std::string_view kLiveFrameworks[] = {"jax", "tensorflow", "tensorflow-gpu",
                                                       "torch"};
inline constexpr int kLiveStateFormat = 1;

struct LiveState {
  std::string index_url;                // the index read, without credentials
  std::int64_t read_at = 0;             // seconds since the epoch
  std::string layer;                    // the layer folder's name inside the overlay folder
  std::vector<std::string> frameworks;  // what was read besides NVIDIA's wheels, sorted
  // framework -> the final releases the index serves a wheel of (a release it does not
  // serve cannot be installed from it, whatever the database remembers)
  std::map<std::string, std::vector<std::string>> releases;
  std::vector<std::string> notes;     // facts the index does not state, taken from memory
  std::vector<std::string> problems;  // releases left out, and why

  // "2026-11-29" (UTC), how locks name the day the facts were read.
  [[nodiscard]] std::string read_date() const;
  [[nodiscard]] bool covers(std::string_view framework) const;
};

struct LiveImport {
  std::vector<Recipe> recipes;  // what the index adds: facts and wheel artifacts per package
  LiveState state;              // read_at and layer not set yet
};

// Runs the importers against `options.index_url` for what `database` does not know:
// NVIDIA's CUDA and cuDNN releases newer than it, and of each of `frameworks` (names of
// kLiveFrameworks) the releases it lacks or knows only from the tables. Errors name the
// URL that failed; a release that contradicts itself is a problem, not an error.
[[nodiscard]] Result<LiveImport> import_live(const Database& database,
                                             const PypiImportOptions& options,
                                             std::vector<std::string> frameworks);

// The overlay folder of `index_url` under envkit's cache folder.
[[nodiscard]] std::filesystem::path live_overlay_dir(const std::filesystem::path& cache_root,
                                                     std::string_view index_url);

// The overlay's state; nullopt when there is none (or it is of another format). A
// state.json that does not parse is an error naming it.
[[nodiscard]] Result<std::optional<LiveState>> read_live_state(
    const std::filesystem::path& overlay);

// Writes `imported` as a new layer folder, then state.json naming it (atomically), then
// removes layers older than the one it replaces: a reader sees the old overlay or the new
// one, and a failed write leaves the old one. Returns the state written.
[[nodiscard]] Result<LiveState> write_live_overlay(const std::filesystem::path& overlay,
                                                   LiveImport imported, std::int64_t read_at);

// The overlay as a Layer of the database.
[[nodiscard]] Layer live_layer(const std::filesystem::path& overlay, const LiveState& state);

}  // namespace envkit::recipes
