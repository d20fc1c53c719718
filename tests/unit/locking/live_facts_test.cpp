// When a lock reads today's index again (uv's cache semantics: a TTL, --refresh,
// --offline), what a failed read leaves, and which framework releases the index does not
// serve. The index is a fake in memory; the database a small one in a temporary folder.
#include "envkit/locking/live_facts.hpp"

#include <stdlib.h>

#include <catch2/catch.hpp>

#include "envkit/locking/inputs.hpp"
#include "envkit/recipes/recipe_io.hpp"
#include "support/spec_literals.hpp"
#include "support/temp_dir.hpp"
#include "unit/recipes/recipes_test_support.hpp"

namespace envkit::locking {
namespace {

using test::spec;
using test::v;
namespace fs = std::filesystem;

constexpr std::int64_t kNow = 1795910400;  // 2026-11-29

struct Fixture {
  test::TempDir dir;
  fs::path database_dir = dir.path() / "recipes";
  test::FakeIndex index;
  int reads = 0;  // project pages asked for
  bool down = false;

  Fixture() {
    recipes::Build cu121{.id = "cu121",
                         .requires_ = {{"cuda", spec(">=12.1,<13")}},
                         .platforms = {specs::Platform::linux_x86_64},
                         .wheel_index = std::string(recipes::kPypiIndex)};
    REQUIRE(recipes::write_recipe(
        database_dir,
        recipes::Recipe{.name = "torch",
                        .versions = {{.version = v("2.4.0"), .builds = {cu121}},
                                     {.version = v("2.4.1"), .builds = {cu121}}}},
        recipes::ArtifactSet::offline));
    index.add("torch", "application/vnd.pypi.simple.v1+json",
              test::json_page({"torch-2.4.1-cp312-cp312-manylinux_2_28_x86_64.whl"}));
  }

  [[nodiscard]] recipes::Database database() const {
    auto db = recipes::Database::open(database_dir);
    REQUIRE(db);
    return *std::move(db);
  }

  LiveFacts add(recipes::Database& db, LiveFactsPolicy policy) {
    policy.now = policy.now == 0 ? kNow : policy.now;
    auto fetch = index.fetcher();
    const LiveFactsRequest request{
        .cache_root = dir.path() / "cache",
        .index_url = test::fake_index_url(),
        .frameworks = {"torch"},
        .policy = policy,
        .fetch = [this, fetch](const std::string& url, const std::vector<std::string>& headers)
            -> Result<recipes::IndexResponse> {
          if (down) return Error::failed("cannot fetch " + url).because("Could not resolve host");
          if (url.ends_with("/")) ++reads;
          return fetch(url, headers);
        },
        .origin_of = {}};
    auto live = add_live_facts(db, request);
    REQUIRE(live);
    return *std::move(live);
  }
};

}  // namespace

TEST_CASE("the overlay is read once per TTL, again with --refresh", "[live-facts]") {
  Fixture fixture;
  auto first = fixture.database();
  const auto read = fixture.add(first, {});
  CHECK(read.read_now);
  REQUIRE(read.state);
  CHECK(read.state->releases.at("torch") == std::vector<std::string>{"2.4.1"});
  const int after_first = fixture.reads;
  CHECK(after_first > 0);

  auto second = fixture.database();
  const auto cached = fixture.add(second, {.ttl = std::chrono::seconds(600), .now = kNow + 599});
  CHECK_FALSE(cached.read_now);
  CHECK(cached.state);
  CHECK(fixture.reads == after_first);

  auto expired = fixture.database();
  CHECK(fixture.add(expired, {.ttl = std::chrono::seconds(600), .now = kNow + 600}).read_now);
  auto refreshed = fixture.database();
  CHECK(fixture.add(refreshed, {.refresh = true, .now = kNow + 601}).read_now);
  CHECK(fixture.reads == 3 * after_first);
}

TEST_CASE("offline, a lock uses the overlay of any age, or says there is none", "[live-facts]") {
  Fixture fixture;
  auto empty = fixture.database();
  const auto none = fixture.add(empty, {.offline = true});
  CHECK_FALSE(none.state);
  CHECK(fixture.reads == 0);
  REQUIRE(none.warnings.size() == 1);
  CHECK_THAT(none.warnings[0], Catch::Matchers::Contains("offline") &&
                                   Catch::Matchers::Contains("built with answers alone"));

  auto online = fixture.database();
  (void)fixture.add(online, {});
  const int reads = fixture.reads;
  auto later = fixture.database();
  const auto old = fixture.add(later, {.offline = true, .now = kNow + 86400 * 30});
  CHECK(old.state);
  CHECK(fixture.reads == reads);
}

TEST_CASE("a read that fails keeps the previous overlay and names the index", "[live-facts]") {
  Fixture fixture;
  auto online = fixture.database();
  (void)fixture.add(online, {});
  fixture.down = true;
  auto offline = fixture.database();
  const auto kept = fixture.add(offline, {.refresh = true, .now = kNow + 3600});
  CHECK_FALSE(kept.read_now);
  REQUIRE(kept.state);
  CHECK(kept.state->read_at == kNow);
  REQUIRE(kept.warnings.size() == 1);
  CHECK_THAT(kept.warnings[0], Catch::Matchers::Contains(test::fake_index_url()) &&
                                   Catch::Matchers::Contains("Could not resolve host") &&
                                   Catch::Matchers::Contains("read on 2026-11-29"));
  CHECK(offline.layers().size() == 1);
}

TEST_CASE("framework releases the index does not serve cannot be locked", "[live-facts]") {
  Fixture fixture;
  auto db = fixture.database();
  const auto live = fixture.add(db, {});
  REQUIRE(live.state);
  fixture.dir.write("envkit.yaml", "framework: torch\n");
  LockInputs inputs{.manifest_path = fixture.dir.path() / "envkit.yaml"};
  inputs.manifest.framework = manifest::FrameworkRequirement{"torch", {}};
  inputs.manifest.indexes = {test::fake_index_url()};
  auto unserved = releases_not_served(db, inputs, *live.state);
  REQUIRE(unserved);
  REQUIRE(unserved->size() == 1);
  CHECK(unserved->at(0).version == "2.4.0");
  CHECK_THAT(unserved->at(0).reason, Catch::Matchers::Contains("serves no torch 2.4.0") &&
                                         Catch::Matchers::Contains(test::fake_index_url()));
  // Another index may serve it: then nothing is ruled out.
  inputs.manifest.indexes.push_back("https://download.pytorch.org/whl/cu121");
  unserved = releases_not_served(db, inputs, *live.state);
  REQUIRE(unserved);
  CHECK(unserved->empty());
}

TEST_CASE("ENVKIT_NO_LIVE_INDEX=1 leaves the database as built", "[live-facts]") {
  Fixture fixture;
  ::setenv("ENVKIT_NO_LIVE_INDEX", "1", 1);
  auto db = fixture.database();
  const auto live = fixture.add(db, {});
  ::unsetenv("ENVKIT_NO_LIVE_INDEX");
  CHECK_FALSE(live.state);
  CHECK(fixture.reads == 0);
  CHECK(db.layers().empty());
}

}  // namespace envkit::locking

namespace envkit::locking {

TEST_CASE("an index that answers garbage is a warning naming the page, and the database answers",
          "[live-facts]") {
  Fixture fixture;
  fixture.index.add("torch", "application/vnd.pypi.simple.v1+json", "{\"files\": [garbage");
  auto db = fixture.database();
  const auto live = fixture.add(db, {});
  CHECK_FALSE(live.state);
  CHECK(db.layers().empty());
  REQUIRE(live.warnings.size() == 1);
  CHECK_THAT(live.warnings[0], Catch::Matchers::Contains(test::fake_index_url("torch/")) &&
                                   Catch::Matchers::Contains("built with answers alone"));
}

}  // namespace envkit::locking
