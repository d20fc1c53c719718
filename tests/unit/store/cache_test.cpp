#include "envkit/store/cache.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "envkit/core/sha256.hpp"
#include "envkit/sys/fs.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"

namespace envkit::store {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

// A staged entry of two files, as fill leaves it before the commit.
struct StagedEntry {
  const Cache& cache;
  std::string id;
  fs::path staging;
  EntryRecord record;

  StagedEntry(const Cache& cache_, std::string id_) : cache(cache_), id(std::move(id_)) {
    staging = cache.fresh_staging(id).value();
    fs::create_directories(staging / "lib");
    record = {.id = id, .sha256 = std::string(64, 'a'), .package = "cuda", .component = "cudart"};
    add("lib/libcudart.so.12", "the runtime\n");
    add("include/cuda.h", "int cuda(void);\n");
    record.files.push_back({.path = "lib/libcudart.so",
                            .type = archive::EntryType::symlink,
                            .link_target = "libcudart.so.12"});
    fs::create_symlink("libcudart.so.12", staging / "lib" / "libcudart.so");
  }
  void add(const std::string& path, const std::string& content) {
    fs::create_directories((staging / path).parent_path());
    std::ofstream(staging / path) << content;
    ::chmod((staging / path).c_str(), 0444);
    record.files.push_back({.path = path,
                            .type = archive::EntryType::file,
                            .size = content.size(),
                            .sha256 = core::sha256_hex(content)});
  }
};

// Writes through a link to a cache file as a prefix's owner (or root) can: chmod, then write.
void write_through(const fs::path& file, const std::string& content) {
  ::chmod(file.c_str(), 0644);
  std::ofstream(file, std::ios::trunc) << content;
}

TEST_CASE(
    "an entry's record keeps its files' stamps, and a stat finds a file written through a "
    "link",
    "[store][cache]") {
  TempDir dir;
  const Cache cache(dir.path() / "cache");
  StagedEntry staged(cache, "entry-one");
  REQUIRE(cache.commit(staged.staging, staged.record));
  auto found = cache.find("entry-one");
  REQUIRE(found);
  REQUIRE(*found);
  const auto& record = **found;
  // Only regular files are stamped, with what a stat says of them.
  REQUIRE(record.stamps.size() == 2);
  const auto library = cache.entry_dir("entry-one") / "lib" / "libcudart.so.12";
  struct stat info {};
  REQUIRE(::stat(library.c_str(), &info) == 0);
  const auto& stamp = record.stamps.at("lib/libcudart.so.12");
  CHECK(stamp.size == 12);
  CHECK(stamp.inode == info.st_ino);
  CHECK(stamp.mtime_ns == info.st_mtim.tv_sec * 1'000'000'000LL + info.st_mtim.tv_nsec);
  CHECK(stamp.ctime_ns == info.st_ctim.tv_sec * 1'000'000'000LL + info.st_ctim.tv_nsec);
  CHECK(parse_entry_record(to_json(record), "entry.json").value().stamps == record.stamps);

  // A hard link made and removed (what installs do) moves ctime, not the verdict.
  const auto prefix_file = dir.path() / "libcudart.so.12";
  REQUIRE(::link(library.c_str(), prefix_file.c_str()) == 0);
  CHECK(cache.changed_files(record).empty());
  // The same length, other bytes: the mtime says so.
  write_through(prefix_file, "THE runtime\n");
  CHECK(cache.changed_files(record) == std::vector<std::string>{"lib/libcudart.so.12 (modified)"});
  fs::remove(cache.entry_dir("entry-one") / "include" / "cuda.h");
  CHECK(cache.changed_files(record).size() == 2);
}

TEST_CASE(
    "a big entry (CCCL's 1,850 headers) is checked in parts, and every changed file is named "
    "in path order",
    "[store][cache]") {
  TempDir dir;
  const Cache cache(dir.path() / "cache");
  StagedEntry staged(cache, "entry-big");
  for (int folder = 0; folder < 30; ++folder) {
    for (int file = 0; file < 60; ++file)
      staged.add(fmt::format("include/cub/d{:02}/h{:02}.cuh", folder, file), "// header\n");
  }
  REQUIRE(cache.commit(staged.staging, staged.record));
  const auto record = cache.find("entry-big").value().value();
  REQUIRE(record.stamps.size() == 1802);
  CHECK(cache.changed_files(record).empty());

  const auto root = cache.entry_dir("entry-big");
  write_through(root / "include/cub/d00/h00.cuh", "// HEADER\n");
  write_through(root / "include/cub/d29/h59.cuh", "// a longer header\n");
  fs::remove(root / "include/cub/d15/h30.cuh");
  fs::remove_all(root / "include/cub/d20");  // a whole folder: its 60 files
  const auto changed = cache.changed_files(record);
  REQUIRE(changed.size() == 63);
  CHECK(changed.front() == "include/cub/d00/h00.cuh (modified)");
  CHECK(changed[1] == "include/cub/d15/h30.cuh (missing)");
  CHECK(changed[2] == "include/cub/d20/h00.cuh (missing)");
  CHECK(changed.back() == "include/cub/d29/h59.cuh (modified)");
}

TEST_CASE("a record that cannot be written (full disk) leaves no entry and names the path",
          "[store][cache]") {
  TempDir dir;
  const Cache cache(dir.path() / "cache");
  StagedEntry staged(cache, "entry-full");
  Result<void> committed;
  {
    const test::ScopedEnv full("ENVKIT_TEST_FAIL_WRITE", "entry-full.json");
    committed = cache.commit(staged.staging, staged.record);
  }
  REQUIRE_FALSE(committed);
  const auto text = committed.error().to_string();
  CHECK_THAT(text, Catch::Contains("No space left on device"));
  CHECK_THAT(text, Catch::Contains((cache.store_root() / "entries").string()));
  CHECK_THAT(text, Catch::Contains("free some disk space"));
  // Nothing moved in: the staging is still the caller's, and entries/ holds nothing of it.
  CHECK(fs::exists(staged.staging / "include" / "cuda.h"));
  CHECK_FALSE(fs::exists(cache.entry_dir("entry-full")));
  CHECK(fs::is_empty(cache.store_root() / "entries"));
  CHECK_FALSE(cache.find("entry-full").value());
}

TEST_CASE(
    "leftovers of runs that stopped before their commit point are counted and removed, "
    "not those being made",
    "[store][cache]") {
  TempDir dir;
  const Cache cache(dir.path() / "cache");
  StagedEntry finished(cache, "entry-done");
  REQUIRE(cache.commit(finished.staging, finished.record));
  // A folder without its record, a record never renamed in, staging of a killed run.
  fs::create_directories(cache.entry_dir("entry-dead") / "lib");
  std::ofstream(cache.entry_dir("entry-dead") / "lib" / "big") << std::string(4096, 'x');
  std::ofstream(cache.store_root() / "entries" / ".entry-dead.json.tmp-0000beef") << "{";
  fs::create_directories(cache.store_root() / "tmp" / "entry-killed.build" / "src");
  // And staging of an entry another envkit is making now.
  fs::create_directories(cache.store_root() / "tmp" / "entry-live");
  std::optional<sys::FileLock> making;
  {
    auto lock = cache.lock_entry("entry-live");
    REQUIRE(lock);
    making.emplace(*std::move(lock));
  }

  auto info = cache.info();
  REQUIRE(info);
  CHECK(info->entries == 1);
  CHECK(info->incomplete == 3);
  CHECK(cache.remove_leftovers() == 3);
  CHECK_FALSE(fs::exists(cache.entry_dir("entry-dead")));
  CHECK_FALSE(fs::exists(cache.store_root() / "entries" / ".entry-dead.json.tmp-0000beef"));
  CHECK_FALSE(fs::exists(cache.store_root() / "tmp" / "entry-killed.build"));
  CHECK(fs::exists(cache.store_root() / "tmp" / "entry-live"));
  CHECK(cache.find("entry-done").value());
  CHECK(cache.info()->incomplete == 0);

  // Once its maker is gone, clean takes it too, and says so.
  making.reset();
  fs::create_directories(cache.entry_dir("entry-dead"));
  auto cleaned = cache.clean();
  REQUIRE(cleaned);
  CHECK(cleaned->removed == 1);
  CHECK(cleaned->incomplete == 2);
  CHECK(fs::is_empty(cache.store_root() / "entries"));
}

TEST_CASE("clean and prune leave alone an entry an install is linking from", "[store][cache]") {
  TempDir dir;
  const Cache cache(dir.path() / "cache");
  StagedEntry staged(cache, "entry-used");
  REQUIRE(cache.commit(staged.staging, staged.record));
  {
    auto in_use = cache.use_entry("entry-used");
    REQUIRE(in_use);
    auto cleaned = cache.clean();
    REQUIRE(cleaned);
    CHECK(cleaned->removed == 0);
    CHECK(cleaned->in_use == 1);
    auto pruned = cache.prune();
    REQUIRE(pruned);
    CHECK(pruned->in_use == 1);
    CHECK(cache.find("entry-used").value());
    // Installs share it: a second user is not kept waiting.
    CHECK(sys::FileLock::try_acquire(cache.store_root() / "locks" / "entry-used.use",
                                     sys::FileLock::Mode::shared));
  }
  auto cleaned = cache.clean();
  REQUIRE(cleaned);
  CHECK(cleaned->removed == 1);
  CHECK(cleaned->in_use == 0);
  CHECK_FALSE(fs::exists(cache.entry_dir("entry-used")));
}

TEST_CASE("cache verify hashes every file against its record, and --repair removes broken entries",
          "[store][cache]") {
  TempDir dir;
  const Cache cache(dir.path() / "cache");
  StagedEntry good(cache, "entry-good");
  REQUIRE(cache.commit(good.staging, good.record));
  StagedEntry bad(cache, "entry-bad");
  REQUIRE(cache.commit(bad.staging, bad.record));
  auto verified = cache.verify(false);
  REQUIRE(verified);
  CHECK(verified->entries == 2);
  CHECK(verified->files == 4);
  CHECK(verified->broken.empty());

  // Bytes changed with the stamp put back (touch -r): only hashing finds it.
  const auto file = cache.entry_dir("entry-bad") / "lib" / "libcudart.so.12";
  struct stat before {};
  REQUIRE(::stat(file.c_str(), &before) == 0);
  write_through(file, "THE runtime\n");
  const struct timespec times[2] = {before.st_atim, before.st_mtim};
  REQUIRE(::utimensat(AT_FDCWD, file.c_str(), times, 0) == 0);
  fs::remove(cache.entry_dir("entry-bad") / "lib" / "libcudart.so");
  CHECK(cache.changed_files(cache.find("entry-bad").value().value()).empty());

  verified = cache.verify(false);
  REQUIRE(verified);
  REQUIRE(verified->broken.size() == 1);
  const auto& broken = verified->broken.front();
  CHECK(broken.id == "entry-bad");
  CHECK(broken.package == "cuda");
  CHECK(broken.problems ==
        std::vector<std::string>{"lib/libcudart.so.12 (modified)", "lib/libcudart.so (missing)"});
  CHECK_FALSE(broken.removed);
  CHECK(cache.find("entry-bad").value());

  verified = cache.verify(true);
  REQUIRE(verified);
  REQUIRE(verified->broken.size() == 1);
  CHECK(verified->broken.front().removed);
  CHECK_FALSE(cache.find("entry-bad").value());
  CHECK_FALSE(fs::exists(cache.entry_dir("entry-bad")));
  CHECK(cache.find("entry-good").value());
  CHECK(cache.verify(false)->broken.empty());
}

}  // namespace
}  // namespace envkit::store

namespace envkit::store {

TEST_CASE("an entry record reads back field for field, with or without keys envkit does not know",
          "[store][cache][records]") {
  const EntryRecord record{
      .id = "abc-nvidia-redist",
      .sha256 = std::string(64, 'a'),
      .url = "https://example.invalid/cuda.tar.xz",
      .package = "cuda",
      .component = "cuda_cudart",
      .layout = "nvidia-redist",
      .patches = {{.sha256 = std::string(64, 'b'), .url = "https://example.invalid/p1.run"},
                  {.sha256 = std::string(64, 'c'), .url = ""}},
      .files = {{.path = "bin", .type = archive::EntryType::directory},
                {.path = "bin/nvcc",
                 .size = 12345678901,
                 .executable = true,
                 .sha256 = std::string(64, 'd')},
                {.path = "lib/libcudart.so",
                 .type = archive::EntryType::symlink,
                 .link_target = "libcudart.so.12"},
                {.path = "include/\"quoted\" \\ name.h",
                 .size = 0,
                 .sha256 = std::string(64, 'e')}},
      .stamps = {{"bin/nvcc", {.size = 12345678901, .inode = 42, .mtime_ns = -5, .ctime_ns = 7}},
                 {"include/\"quoted\" \\ name.h",
                  {.size = 0,
                   .inode = 1ULL << 40,
                   .mtime_ns = 1'700'000'000'123'456'789,
                   .ctime_ns = 0}}}};
  const auto same = [&](const EntryRecord& read) {
    CHECK(read.id == record.id);
    CHECK(read.sha256 == record.sha256);
    CHECK(read.url == record.url);
    CHECK(read.package == record.package);
    CHECK(read.component == record.component);
    CHECK(read.layout == record.layout);
    REQUIRE(read.patches.size() == record.patches.size());
    for (std::size_t i = 0; i < read.patches.size(); ++i) {
      CHECK(read.patches[i].sha256 == record.patches[i].sha256);
      CHECK(read.patches[i].url == record.patches[i].url);
    }
    CHECK(read.files == record.files);
    CHECK(read.stamps == record.stamps);
  };
  const auto text = to_json(record);
  same(parse_entry_record(text, "entry.json").value());

  // A key from a later envkit: read by the general path, to the same record.
  auto extended = nlohmann::json::parse(text);
  extended["made-by"] = "envkit 9";
  extended["files"][1]["mode"] = 493;
  same(parse_entry_record(extended.dump(), "entry.json").value());

  // Damaged: refused by both paths, with the file named.
  for (const auto& bad : {text.substr(0, text.size() / 2), text + "]", std::string("{}")}) {
    const auto read = parse_entry_record(bad, "entry.json");
    REQUIRE_FALSE(read);
    CHECK_THAT(read.error().to_string(),
               Catch::Contains("entry.json") && Catch::Contains("is damaged"));
  }
  auto no_inode = nlohmann::json::parse(text);
  no_inode["stamps"]["bin/nvcc"].erase("inode");
  CHECK_FALSE(parse_entry_record(no_inode.dump(), "entry.json"));
}

}  // namespace envkit::store
