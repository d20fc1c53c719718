#include "envkit/store/prefix.hpp"

#include <catch2/catch.hpp>
#include <fstream>

#include "envkit/store/link.hpp"
#include "envkit/store/records.hpp"
#include "support/temp_dir.hpp"

namespace envkit::store {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

TEST_CASE("a prefix is a symlink switched from generation to generation", "[store][prefix]") {
  TempDir dir;
  auto prefix = Prefix::open(dir.path() / "env");
  REQUIRE(prefix);
  CHECK_FALSE(prefix->current_generation());

  auto first = prefix->begin(1);
  REQUIRE(first);
  std::ofstream(*first / "marker") << "one";
  REQUIRE(write_state(*first, {.generation = 1, .platform = "linux-x86_64"}));
  REQUIRE(prefix->commit(1));
  CHECK(prefix->current_generation() == 1);
  CHECK(fs::read_symlink(dir.path() / "env") == fs::path(".env.generations") / "1");

  auto second = prefix->begin(2);
  REQUIRE(second);
  std::ofstream(*second / "marker") << "two";
  // Until the commit, the prefix still shows the first generation.
  std::string seen;
  std::ifstream(dir.path() / "env" / "marker") >> seen;
  CHECK(seen == "one");
  REQUIRE(write_state(*second, {.generation = 2, .platform = "linux-x86_64"}));
  REQUIRE(prefix->commit(2));
  CHECK(prefix->current_generation() == 2);
  CHECK_FALSE(fs::exists(dir.path() / ".env.generations" / "1"));  // the old one is gone
  auto state = prefix->state();
  REQUIRE(state);
  REQUIRE(*state);
  CHECK((*state)->generation == 2);
}

TEST_CASE("leftovers of a killed install are removed, the current generation kept",
          "[store][prefix]") {
  TempDir dir;
  auto prefix = Prefix::open(dir.path() / "env");
  REQUIRE(prefix);
  REQUIRE(prefix->begin(1));
  REQUIRE(prefix->commit(1));
  fs::create_directories(dir.path() / ".env.generations" / "2" / "lib");
  prefix->remove_stale_generations();
  CHECK(fs::exists(dir.path() / ".env.generations" / "1"));
  CHECK_FALSE(fs::exists(dir.path() / ".env.generations" / "2"));
}

TEST_CASE("a folder envkit did not make is never taken over", "[store][prefix]") {
  TempDir dir;
  std::ofstream(dir.write("mine/data.txt", "precious")).flush();
  auto refused = Prefix::open(dir.path() / "mine");
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code() == ErrorCode::input);
  CHECK_THAT(refused.error().to_string(), Catch::Contains("not made by envkit"));

  fs::create_directory_symlink("/usr", dir.path() / "link");
  auto link = Prefix::open(dir.path() / "link");
  REQUIRE_FALSE(link);
  CHECK_THAT(link.error().to_string(), Catch::Contains("symlink envkit did not make"));

  fs::create_directories(dir.path() / "empty");
  auto empty = Prefix::open(dir.path() / "empty");
  REQUIRE(empty);
  REQUIRE(empty->begin(1));
  REQUIRE(empty->commit(1));
  CHECK(fs::is_symlink(dir.path() / "empty"));
}

TEST_CASE("receipts round-trip", "[store][records]") {
  TempDir dir;
  const PrefixState state{
      .generation = 4,
      .platform = "linux-x86_64",
      .link_mode = "hardlink",
      .packages =
          {{.name = "cuda",
            .version = "12.4.1",
            .build = "",
            .packaging = "archive",
            .artifacts = {{.component = "cuda_cudart",
                           .sha256 = std::string(64, 'a'),
                           .url = "https://example.invalid/a.tar.xz",
                           .entry = std::string(64, 'a') + "-12345678"}},
            .files = {{.path = "lib/libcudart.so.12", .size = 3, .sha256 = std::string(64, 'b')},
                      {.path = "lib/libcudart.so",
                       .type = archive::EntryType::symlink,
                       .link_target = "libcudart.so.12"},
                      {.path = "bin/tool",
                       .size = 1,
                       .executable = true,
                       .sha256 = std::string(64, 'c')}}}},
      .links = {{.path = "lib64", .type = archive::EntryType::symlink, .link_target = "lib"}}};
  REQUIRE(write_state(dir.path(), state));
  auto read = read_state(dir.path());
  REQUIRE(read);
  REQUIRE(*read);
  CHECK((*read)->generation == 4);
  CHECK((*read)->link_mode == "hardlink");
  REQUIRE((*read)->packages.size() == 1);
  CHECK((*read)->packages[0].files == state.packages[0].files);
  CHECK((*read)->packages[0].artifacts[0].entry == state.packages[0].artifacts[0].entry);
  CHECK((*read)->links == state.links);

  std::ofstream(dir.path() / ".envkit" / "receipts" / "cuda.json") << "{ broken";
  auto damaged = read_state(dir.path());
  REQUIRE_FALSE(damaged);
  CHECK_THAT(damaged.error().to_string(), Catch::Contains("cuda.json"));
}

TEST_CASE("the linker falls back from reflink to hard link to copy", "[store][link]") {
  TempDir dir;
  const auto from = dir.write("cache/file", "content");
  Linker best;
  REQUIRE(best.place(from, dir.path() / "a"));
  CHECK(std::ifstream(dir.path() / "a").get() == 'c');

  Linker copy(LinkMode::copy);
  REQUIRE(copy.place(from, dir.path() / "b"));
  CHECK(fs::hard_link_count(dir.path() / "b") == 1);
  // An existing target is an error, never overwritten.
  CHECK_FALSE(copy.place(from, dir.path() / "b"));
}

}  // namespace
}  // namespace envkit::store
