#include "envkit/recipes/database.hpp"

#include <catch2/catch.hpp>
#include <fstream>

#include "envkit/core/sha256.hpp"
#include "envkit/recipes/check.hpp"
#include "envkit/sys/fs.hpp"
#include "support/spec_literals.hpp"
#include "support/temp_dir.hpp"

using namespace envkit;
using namespace envkit::recipes;
namespace fs = std::filesystem;

using envkit::test::spec;
using envkit::test::v;

namespace {

Artifact artifact(std::string component, ArtifactKind kind, std::string url, char hash = 'a') {
  return {.platform = specs::Platform::linux_x86_64,
          .component = std::move(component),
          .kind = kind,
          .url = std::move(url),
          .sha256 = std::string(64, hash),
          .size = 10,
          .format = kind == ArtifactKind::wheel ? "whl" : "tar.xz",
          .layout = kind == ArtifactKind::wheel ? Layout::nvidia_wheel : Layout::nvidia_redist,
          .wheel_root = kind == ArtifactKind::wheel ? "nvidia/cuda_runtime" : ""};
}

Recipe cuda() {
  Build build;
  build.platforms = {specs::Platform::linux_x86_64};
  build.artifacts = {
      artifact("cuda_cudart", ArtifactKind::archive, "https://nvidia.example/cudart.tar.xz"),
      artifact("cuda_cudart", ArtifactKind::wheel, "https://pypi.example/cudart.whl", 'b')};
  return {.name = "cuda",
          .sources = {"test"},
          .default_components = {"cuda_cudart"},
          .versions = {{.version = v("12.4.1"),
                        .release_date = {},
                        .components = {{"cuda_cudart", "12.4.127"}},
                        .builds = {build}}}};
}

Recipe torch(std::string cuda_spec) {
  Build cu121;
  cu121.id = "cu121";
  cu121.requires_ = {{"cuda", spec(cuda_spec)}};
  cu121.platforms = {specs::Platform::linux_x86_64};
  return {
      .name = "torch",
      .sources = {"test"},
      .default_components = {},
      .versions = {{.version = v("2.1"), .release_date = {}, .components = {}, .builds = {cu121}}}};
}

void write_all(const fs::path& dir, const std::vector<Recipe>& recipes) {
  for (const auto& r : recipes) {
    REQUIRE(write_recipe(dir, r, ArtifactSet::offline));
    REQUIRE(write_recipe(dir, r, ArtifactSet::wheels));
  }
}

}  // namespace

TEST_CASE("a database is facts files plus per-version artifact files", "[recipes][db]") {
  test::TempDir dir;
  write_all(dir.path(), {cuda(), torch(">=12.1,<13")});
  CHECK(fs::exists(dir.path() / "cuda.yaml"));
  CHECK(fs::exists(dir.path() / "cuda" / "12.4.1.yaml"));
  CHECK(fs::exists(dir.path() / "pypi" / "cuda" / "12.4.1.yaml"));
  CHECK_FALSE(fs::exists(dir.path() / "torch"));  // no artifacts, no folder

  auto db = Database::open(dir.path());
  REQUIRE(db);
  CHECK(db->names() == std::vector<std::string>{"cuda", "torch"});
  auto facts = db->facts("cuda");
  REQUIRE(facts);
  CHECK((*facts)->versions.at(0).builds.at(0).artifacts.empty());  // facts only
  auto full = db->load_full("cuda");
  REQUIRE(full);
  CHECK(full->versions.at(0).builds.at(0).artifacts.size() == 2);

  auto missing = db->facts("cudnn");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message() == "no recipe for `cudnn` in " + dir.path().string());
  CHECK(missing.error().hints().at(0) == "did you mean `cuda`?");
}

TEST_CASE("rewriting a recipe removes versions that left it", "[recipes][db]") {
  test::TempDir dir;
  Recipe two = cuda();
  two.versions.push_back(two.versions[0]);
  two.versions[1].version = v("12.5.0");
  write_all(dir.path(), {two});
  CHECK(fs::exists(dir.path() / "cuda" / "12.5.0.yaml"));
  write_all(dir.path(), {cuda()});
  CHECK_FALSE(fs::exists(dir.path() / "cuda" / "12.5.0.yaml"));
  CHECK(fs::exists(dir.path() / "cuda" / "12.4.1.yaml"));
}

TEST_CASE("check finds what would mislead the solver or the installer", "[recipes][db][check]") {
  test::TempDir dir;
  Recipe bad = cuda();
  auto& artifacts = bad.versions[0].builds[0].artifacts;
  artifacts[0].url = "ftp://nvidia.example/cudart.tar.xz";
  artifacts[1].sha256 = "ABC";
  write_all(dir.path(), {bad, torch(">=13,<14")});
  auto db = Database::open(dir.path());
  REQUIRE(db);
  auto problems = check_database(*db);
  REQUIRE(problems);
  REQUIRE(problems->size() == 3);
  CHECK((*problems)[0].where == "cuda 12.4.1 cuda_cudart linux-x86_64 (archive)");
  CHECK((*problems)[0].message ==
        "`ftp://nvidia.example/cudart.tar.xz` is neither https nor http with a pinned sha256");
  CHECK((*problems)[1].message == "sha256 `ABC` is not 64 lowercase hex digits");
  CHECK((*problems)[2].where == "torch 2.1 cu121");
  CHECK((*problems)[2].message ==
        "requires cuda `<14,>=13`, which no version of the database meets");

  test::TempDir good;
  write_all(good.path(), {cuda(), torch(">=12.1,<13")});
  auto clean = check_database(Database::open(good.path()).value());
  REQUIRE(clean);
  CHECK(clean->empty());
}

TEST_CASE("check: http with a pinned sha256 is a warning, http without one a problem",
          "[recipes][db][check]") {
  test::TempDir dir;
  Recipe plain = cuda();
  auto& artifacts = plain.versions[0].builds[0].artifacts;
  artifacts[0].url = "http://nvidia.example/cudart.tar.xz";
  artifacts[1].url = "http://nvidia.example/nvcc.tar.xz";
  artifacts[1].sha256 = "";
  write_all(dir.path(), {plain});
  auto db = Database::open(dir.path());
  REQUIRE(db);
  std::vector<Problem> warnings;
  auto problems = check_database(*db, &warnings);
  REQUIRE(problems);
  REQUIRE(problems->size() == 2);  // the empty sha256, and its http URL without one
  CHECK((*problems)[1].message ==
        "`http://nvidia.example/nvcc.tar.xz` is neither https nor http with a pinned sha256");
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].where == "cuda 12.4.1 cuda_cudart linux-x86_64 (archive)");
  CHECK(warnings[0].message ==
        "`http://nvidia.example/cudart.tar.xz` is plain http: only its pinned sha256 guards it "
        "(envkit install warns about the host too); use https where upstream publishes it");
}

TEST_CASE("check refuses a runfile without its era's layout or its components",
          "[recipes][db][check][runfile]") {
  const auto problems_of = [](Artifact runfile) {
    test::TempDir dir;
    Recipe cuda_9{.name = "cuda", .sources = {"test"}, .default_components = {"cuda_cudart"}};
    Build build;
    build.platforms = {specs::Platform::linux_x86_64};
    build.artifacts = {std::move(runfile)};
    cuda_9.versions.push_back({.version = v("9.0.176"), .builds = {build}});
    write_all(dir.path(), {cuda_9});
    auto problems = check_database(Database::open(dir.path()).value());
    REQUIRE(problems);
    std::vector<std::string> messages;
    for (const auto& problem : *problems) {
      CHECK(problem.where == "cuda 9.0.176 cuda linux-x86_64 (runfile)");
      messages.push_back(problem.message);
    }
    return messages;
  };
  Artifact runfile = artifact("cuda", ArtifactKind::runfile, "https://nvidia.example/cuda_9.0.run");
  runfile.format = "run";
  runfile.layout = Layout::cuda_runfile_nested;
  runfile.components = {"cuda_cudart", "libcublas"};
  CHECK(problems_of(runfile).empty());

  Artifact no_era = runfile;
  no_era.layout = Layout::none;
  CHECK(problems_of(no_era) ==
        std::vector<std::string>{
            "the runfile has no layout era (`layout: none`), so envkit cannot unpack it: CUDA "
            "9.0.176's runfile is `cuda-runfile-nested`; rerun scripts/regen-recipes"});

  Artifact wrong_era = runfile;
  wrong_era.layout = Layout::cuda_runfile_builds;
  CHECK(problems_of(wrong_era) ==
        std::vector<std::string>{"layout `cuda-runfile-builds`, but CUDA 9.0.176's runfile is "
                                 "`cuda-runfile-nested`"});

  Artifact no_components = runfile;
  no_components.components.clear();
  CHECK(problems_of(no_components) ==
        std::vector<std::string>{"the runfile lists no `components:`, so envkit would not know "
                                 "what to place; rerun scripts/regen-recipes"});
}

namespace {

// Appends a comment line to a database file: a change of bytes, not of meaning.
void touch_file(const fs::path& path) {
  std::ofstream out(path, std::ios::app | std::ios::binary);
  out << "# changed\n";
}

}  // namespace

TEST_CASE("digest covers the files that describe the locked versions", "[recipes][db][digest]") {
  test::TempDir dir;
  Recipe two = cuda();
  two.versions.push_back(two.versions[0]);
  two.versions[1].version = v("12.5.0");
  write_all(dir.path(), {two, torch(">=12.1,<13")});
  const std::vector<specs::Version> locked = {v("12.4.1")};
  const auto digest_now = [&] {
    auto db = Database::open(dir.path());
    REQUIRE(db);
    auto digest = db->digest("cuda", locked);
    REQUIRE(digest);
    return *digest;
  };

  const std::string first = digest_now();
  CHECK(first.starts_with("sha256:"));
  CHECK(first.size() == 7 + 64);
  CHECK(digest_now() == first);
  // The format a lock records: per file `<relative path>\0<length>\0<bytes>`, in a fixed order.
  std::string hashed;
  for (const auto* relative : {"cuda.yaml", "cuda/12.4.1.yaml", "pypi/cuda/12.4.1.yaml"}) {
    const std::string bytes = sys::read_file(dir.path() / relative).value();
    hashed += std::string(relative) + '\0' + std::to_string(bytes.size()) + '\0' + bytes;
  }
  CHECK(first == "sha256:" + core::sha256_hex(hashed));

  SECTION("the same database gives the same digest, whatever the order of versions") {
    auto db = Database::open(dir.path()).value();
    const std::vector<specs::Version> both = {v("12.5.0"), v("12.4.1"), v("12.5.0")};
    const std::vector<specs::Version> sorted = {v("12.4.1"), v("12.5.0")};
    CHECK(db.digest("cuda", both).value() == db.digest("cuda", sorted).value());
    CHECK(db.digest("cuda", sorted).value() != first);
    CHECK(db.digest("torch", locked).value() != db.digest("cuda", locked).value());
  }
  SECTION("the facts file") {
    touch_file(dir.path() / "cuda.yaml");
    CHECK(digest_now() != first);
  }
  SECTION("the facts overlay, when it appears and when it changes") {
    REQUIRE(write_facts_overlay(dir.path(), cuda()));
    const std::string with_overlay = digest_now();
    CHECK(with_overlay != first);
    touch_file(dir.path() / "pypi" / "cuda.yaml");
    CHECK(digest_now() != with_overlay);
  }
  SECTION("a locked version's offline file") {
    touch_file(dir.path() / "cuda" / "12.4.1.yaml");
    CHECK(digest_now() != first);
  }
  SECTION("a locked version's wheel file") {
    touch_file(dir.path() / "pypi" / "cuda" / "12.4.1.yaml");
    CHECK(digest_now() != first);
  }
  SECTION("a locked version's wheel file going away") {
    fs::remove(dir.path() / "pypi" / "cuda" / "12.4.1.yaml");
    CHECK(digest_now() != first);
  }
  SECTION("not another version's files, nor another package's") {
    touch_file(dir.path() / "cuda" / "12.5.0.yaml");
    touch_file(dir.path() / "pypi" / "cuda" / "12.5.0.yaml");
    touch_file(dir.path() / "torch.yaml");
    CHECK(digest_now() == first);
  }
}

TEST_CASE("digest of an unknown package is an input error", "[recipes][db][digest]") {
  test::TempDir dir;
  write_all(dir.path(), {cuda()});
  auto db = Database::open(dir.path());
  REQUIRE(db);
  const std::vector<specs::Version> versions = {v("12.4.1")};
  auto digest = db->digest("cudaa", versions);
  REQUIRE_FALSE(digest);
  CHECK(digest.error().code() == ErrorCode::input);
  CHECK(digest.error().message() == "no recipe for `cudaa` in " + dir.path().string());
  CHECK(digest.error().hints().at(0) == "did you mean `cuda`?");
}

TEST_CASE("a package whose only facts are its pypi/ overlay is listed, read and digested",
          "[recipes][db]") {
  test::TempDir dir;
  write_all(dir.path(), {cuda()});
  Recipe jax = torch(">=12.1,<13");
  jax.name = "jax";
  REQUIRE(write_facts_overlay(dir.path(), jax));
  auto db = Database::open(dir.path());
  REQUIRE(db);
  CHECK(db->names() == std::vector<std::string>{"cuda", "jax"});
  auto facts = db->facts("jax");
  INFO((facts ? "" : facts.error().to_string()));
  REQUIRE(facts);
  CHECK((*facts)->versions.size() == jax.versions.size());
  auto digest = db->digest("jax", {});
  REQUIRE(digest);
  // The overlay is what the digest covers: changing it changes the digest.
  jax.sources.push_back("changed");
  REQUIRE(write_facts_overlay(dir.path(), jax));
  auto again = Database::open(dir.path());
  REQUIRE(again);
  auto changed = again->digest("jax", {});
  REQUIRE(changed);
  CHECK(*changed != *digest);
}

namespace {

// python with one version per kind of coverage: 3.9.2 has an archive,
// 3.7.9 has none; the source overlay names both.
Recipe python_archives() {
  Build build;
  build.platforms = {specs::Platform::linux_x86_64};
  auto archive = artifact("python", ArtifactKind::archive, "https://pbs.example/3.9.2.tar.zst");
  archive.layout = Layout::python_standalone_full;
  build.artifacts = {archive};
  return {.name = "python",
          .sources = {"download-metadata.json"},
          .default_components = {},
          .versions = {
              {.version = v("3.9.2"), .release_date = {}, .components = {}, .builds = {build}}}};
}

Recipe python_sources() {
  Recipe recipe{.name = "python", .sources = {"pyenv"}, .default_components = {}, .versions = {}};
  for (const auto* version : {"3.7.9", "3.9.2"}) {
    Build build;
    build.platforms = {specs::Platform::linux_x86_64};
    auto source =
        artifact("python", ArtifactKind::source,
                 std::string("https://python.example/Python-") + version + ".tar.xz", 'c');
    source.layout = Layout::source_tree;
    source.build_system = BuildSystem::cpython;
    build.artifacts = {source};
    recipe.versions.push_back(
        {.version = v(version), .release_date = {}, .components = {}, .builds = {build}});
  }
  return recipe;
}

}  // namespace

TEST_CASE("the source overlay adds versions, and a prebuilt archive wins where both exist",
          "[recipes][db][overlay]") {
  test::TempDir dir;
  REQUIRE(write_recipe(dir.path(), python_archives(), ArtifactSet::offline));
  REQUIRE(write_source_overlay(dir.path(), python_sources()));
  CHECK(fs::exists(dir.path() / "pyenv" / "python.yaml"));
  CHECK(fs::exists(dir.path() / "pyenv" / "python" / "3.7.9.yaml"));
  auto db = Database::open(dir.path());
  REQUIRE(db);
  CHECK(db->names() == std::vector<std::string>{"python"});  // pyenv/ is no package
  auto facts = db->facts("python");
  REQUIRE(facts);
  CHECK((*facts)->sources == std::vector<std::string>{"download-metadata.json", "pyenv"});
  REQUIRE((*facts)->versions.size() == 2);

  auto only_source = db->load_version("python", v("3.7.9"));
  REQUIRE(only_source);
  const auto& source = only_source->versions.at(0).builds.at(0).artifacts;
  REQUIRE(source.size() == 1);
  CHECK(source[0].kind == ArtifactKind::source);
  CHECK(source[0].build_system == BuildSystem::cpython);

  auto both = db->load_version("python", v("3.9.2"));
  REQUIRE(both);
  const auto& prebuilt = both->versions.at(0).builds.at(0).artifacts;
  REQUIRE(prebuilt.size() == 1);
  CHECK(prebuilt[0].kind == ArtifactKind::archive);
  CHECK(prebuilt[0].layout == Layout::python_standalone_full);

  // The overlay's files are part of what a lock's digest covers.
  const std::vector<specs::Version> locked = {v("3.7.9")};
  const auto before = db->digest("python", locked).value();
  std::ofstream(dir.path() / "pyenv" / "python" / "3.7.9.yaml", std::ios::app) << "# edited\n";
  CHECK(Database::open(dir.path()).value().digest("python", locked).value() != before);
}
