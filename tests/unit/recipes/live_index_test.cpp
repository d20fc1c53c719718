// Today's index as a layer of the database: the layer's facts and artifacts merge over the
// database's, the digest a lock records depends only on what the layer says of its versions,
// and the overlay's state survives a round trip.
#include "envkit/recipes/live_index.hpp"

#include <catch2/catch.hpp>

#include "envkit/recipes/recipe_io.hpp"
#include "envkit/sys/fs.hpp"
#include "recipes_test_support.hpp"
#include "support/spec_literals.hpp"
#include "support/temp_dir.hpp"

using namespace envkit;
using namespace envkit::recipes;
namespace fs = std::filesystem;
using envkit::test::spec;
using envkit::test::v;
using envkit::test::versions_of;

namespace {

Recipe torch_with(std::vector<std::string> versions, std::string cuda = ">=12.1,<13") {
  Recipe torch{.name = "torch", .sources = {"test"}};
  for (const auto& version : versions) {
    torch.versions.push_back(
        RecipeVersion{.version = v(version),
                      .builds = {Build{.id = "cu121",
                                       .requires_ = {{"cuda", spec(cuda)}},
                                       .platforms = {specs::Platform::linux_x86_64}}}});
  }
  return torch;
}

Recipe cuda_with_wheel(std::string_view version) {
  Build build{.platforms = {specs::Platform::linux_x86_64}};
  build.artifacts.push_back(Artifact{.platform = specs::Platform::linux_x86_64,
                                     .component = "cuda_cudart",
                                     .kind = ArtifactKind::wheel,
                                     .url = "https://files.example.test/cudart.whl",
                                     .sha256 = std::string(64, 'c'),
                                     .size = 10,
                                     .format = "whl",
                                     .layout = Layout::nvidia_wheel,
                                     .wheel_root = "nvidia/cu13"});
  return Recipe{
      .name = "cuda",
      .versions = {RecipeVersion{
          .version = v(version), .components = {{"cuda_cudart", "13.2.86"}}, .builds = {build}}}};
}

struct Fixture {
  test::TempDir dir;
  fs::path base = dir.path() / "recipes";
  fs::path cache = dir.path() / "cache";

  Fixture() {
    REQUIRE(write_recipe(base, torch_with({"2.1.0", "2.1.2"}), ArtifactSet::offline));
    REQUIRE(write_recipe(
        base,
        Recipe{.name = "cuda",
               .default_components = {"cuda_cudart"},
               .versions = {RecipeVersion{.version = v("12.4.1"), .builds = {Build{}}}}},
        ArtifactSet::offline));
  }

  // An overlay of the index holding `recipes`, written as a read at `read_at`.
  LiveState overlay(std::vector<Recipe> recipes, std::int64_t read_at = 1795910400) const {
    LiveImport imported{.recipes = std::move(recipes),
                        .state = {.index_url = "https://pypi.example.test/simple",
                                  .frameworks = {"torch"},
                                  .releases = {{"torch", {"2.1.2", "2.15.0"}}}}};
    auto written = write_live_overlay(overlay_dir(), std::move(imported), read_at);
    REQUIRE(written);
    return *written;
  }
  [[nodiscard]] fs::path overlay_dir() const {
    return live_overlay_dir(cache, "https://pypi.example.test/simple");
  }
  [[nodiscard]] Database database() const {
    auto db = Database::open(base);
    REQUIRE(db);
    return *std::move(db);
  }
};

}  // namespace

TEST_CASE("a layer's releases and builds are merged over the database", "[live-index]") {
  Fixture fixture;
  const auto state =
      fixture.overlay({torch_with({"2.15.0"}, ">=13.2,<14"), cuda_with_wheel("13.2.2")});
  auto db = fixture.database();
  db.add_layer(live_layer(fixture.overlay_dir(), state));
  const auto facts = db.facts("torch");
  REQUIRE(facts);
  CHECK(versions_of(**facts) == std::vector<std::string>{"2.1.0", "2.1.2", "2.15.0"});
  // A version only the layer has loads with its components and wheel.
  auto cuda = db.load_version("cuda", v("13.2.2"));
  REQUIRE(cuda);
  CHECK(cuda->versions.at(0).components == std::vector<Component>{{"cuda_cudart", "13.2.86"}});
  REQUIRE(cuda->versions.at(0).builds.at(0).artifacts.size() == 1);
  CHECK(cuda->versions.at(0).builds.at(0).artifacts[0].kind == ArtifactKind::wheel);
  // Where each fact came from.
  REQUIRE(db.layer_of("torch", v("2.15.0")) != nullptr);
  CHECK(db.layer_of("torch", v("2.15.0"))->source ==
        "https://pypi.example.test/simple (read 2026-11-29)");
  CHECK(db.layer_of("cuda", v("13.2.2")) != nullptr);
  CHECK(db.layer_of("torch", v("2.1.2")) == nullptr);
}

TEST_CASE("a lock's recipe digest depends only on what the layer says of its versions",
          "[live-index]") {
  Fixture fixture;
  auto plain = fixture.database();
  const std::vector<specs::Version> locked = {v("2.1.2")};
  const auto before = plain.digest("torch", locked);
  REQUIRE(before);

  // The index adds a release: a lock of 2.1.2 is not stale for it.
  auto with_new = fixture.database();
  with_new.add_layer(live_layer(fixture.overlay_dir(), fixture.overlay({torch_with({"2.15.0"})})));
  CHECK(*with_new.digest("torch", locked) == *before);

  // The index says something new of 2.1.2 itself (its CUDA): that lock is stale.
  auto with_changed = fixture.database();
  with_changed.add_layer(
      live_layer(fixture.overlay_dir(), fixture.overlay({torch_with({"2.1.2"}, ">=12.4,<13")})));
  CHECK(*with_changed.digest("torch", locked) != *before);
}

TEST_CASE("the overlay's state round-trips and a new read replaces the layer", "[live-index]") {
  Fixture fixture;
  const auto first = fixture.overlay({torch_with({"2.15.0"})}, 1000);
  const auto second = fixture.overlay({torch_with({"2.16.0"})}, 2000);
  auto read = read_live_state(fixture.overlay_dir());
  REQUIRE(read);
  REQUIRE(*read);
  CHECK((*read)->read_at == 2000);
  CHECK((*read)->layer == second.layer);
  CHECK((*read)->releases.at("torch") == std::vector<std::string>{"2.1.2", "2.15.0"});
  CHECK((*read)->covers("torch"));
  CHECK_FALSE((*read)->covers("jax"));
  // The replaced layer stays for a reader still on it; a third read removes it.
  CHECK(fs::is_directory(fixture.overlay_dir() / first.layer));
  (void)fixture.overlay({torch_with({"2.16.0"})}, 3000);
  CHECK_FALSE(fs::exists(fixture.overlay_dir() / first.layer));
}

TEST_CASE("an overlay state that is not envkit's is an error naming it", "[live-index]") {
  Fixture fixture;
  fs::create_directories(fixture.overlay_dir());
  REQUIRE(sys::write_file_atomic(fixture.overlay_dir() / "state.json", "<html>garbage</html>"));
  auto read = read_live_state(fixture.overlay_dir());
  REQUIRE_FALSE(read);
  CHECK_THAT(read.error().message(), Catch::Matchers::Contains("state.json"));
  REQUIRE_FALSE(read.error().hints().empty());
}

TEST_CASE("each index has an overlay folder of its own", "[live-index]") {
  const fs::path cache = "/cache";
  const auto pypi = live_overlay_dir(cache, "https://pypi.org/simple");
  CHECK(pypi.parent_path() == cache / "recipes" / "live");
  CHECK(pypi.filename().string().starts_with("pypi.org-simple-"));
  CHECK(live_overlay_dir(cache, "https://pypi.org/simple/") != pypi);
  // Credentials never reach a folder name.
  CHECK(live_overlay_dir(cache, "https://user:secret@mirror.lan/simple")
            .filename()
            .string()
            .find("secret") == std::string::npos);
}
