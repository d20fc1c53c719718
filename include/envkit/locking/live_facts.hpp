#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/recipes/database.hpp"
#include "envkit/recipes/import_pypi.hpp"
#include "envkit/recipes/live_index.hpp"
#include "envkit/solve/solve.hpp"

// Today's index as a layer of the recipe database (docs/recipes.md, "Today's index"):
// when a lock reads the package index again, how a download mirror and the cache take
// part, and what the lock learns from it besides facts (releases the index does not serve).
namespace envkit::locking {

struct LockInputs;

// When the overlay is read again (uv's cache semantics: --refresh, --offline, a TTL).
struct LiveFactsPolicy {
  bool offline = false;  // never ask the index: the overlay as cached, of any age, or none
  bool refresh = false;  // ask the index now, however fresh the overlay is
  std::chrono::seconds ttl{600};
  std::int64_t now = 0;  // seconds since the epoch
};

struct LiveFactsRequest {
  std::filesystem::path cache_root;
  std::string index_url;                // the index the lock resolves from (its origin URL)
  std::vector<std::string> frameworks;  // of recipes::kLiveFrameworks
  LiveFactsPolicy policy;
  // Asks the index (net::fetch through the mirror in production; a fake in unit tests).
  recipes::FetchIndexPage fetch;
  std::function<std::string(const std::string&)> origin_of;  // undoes the mirror; may be empty
};

struct LiveFacts {
  std::optional<recipes::LiveState> state;  // the overlay laid over the database; nullopt: none
  bool read_now = false;                    // the index was read by this call
  std::vector<std::string> warnings;        // what the user should know, one sentence each
};

// Lays the index's overlay over `database`: the cached one while it is younger than the
// TTL and covers the frameworks, else one read from the index now. A read that fails
// keeps the previous overlay (or none) with a warning naming the URL; `offline` with no
// overlay says the built-in database answers alone. ENVKIT_NO_LIVE_INDEX=1 skips it all.
[[nodiscard]] Result<LiveFacts> add_live_facts(recipes::Database& database,
                                               const LiveFactsRequest& request);

// The frameworks the overlay is read for: the manifest's framework when it is one the
// overlay knows.
[[nodiscard]] std::vector<std::string> live_frameworks(const LockInputs& inputs);

// Releases of the framework the overlay's index does not serve, as builds the solver
// cannot use: only when that index is the only one the lock resolves from (another
// index may serve them).
[[nodiscard]] Result<std::vector<solve::UnavailableBuild>> releases_not_served(
    const recipes::Database& database, const LockInputs& inputs, const recipes::LiveState& state);

// net::fetch as the importers ask: through `mirror` (https://HOST/PATH as
// MIRROR/HOST/PATH) when one is given. Wheel METADATA and byte ranges of wheels, which never
// change, are kept under `files_cache` and read from there again.
[[nodiscard]] recipes::FetchIndexPage index_fetch(std::optional<std::string> mirror,
                                                  std::optional<std::filesystem::path> files_cache);

}  // namespace envkit::locking
