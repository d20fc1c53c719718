// GenerationBuilder::place: a package's folders and file links are made on a few
// threads (in order when the package has symlinks), and the result is what placing
// them one by one gives.
#include "envkit/store/generation_builder.hpp"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "envkit/sys/fs.hpp"
#include "support/temp_dir.hpp"

using namespace envkit;
using namespace envkit::store;
namespace fs = std::filesystem;

namespace {

// `count` files spread over nested folders (up to 5 deep) under `source`, with
// their records; every 7th folder is also listed as a directory entry.
std::vector<FileRecord> many_files(const test::TempDir& dir, const fs::path& source, int count) {
  std::vector<FileRecord> files;
  for (int i = 0; i < count; ++i) {
    fs::path relative = "include";
    for (int level = 0; level < i % 5; ++level)
      relative /= "d" + std::to_string((i / 5 + level) % 9);
    if (i % 7 == 0)
      files.push_back({.path = relative.generic_string(), .type = archive::EntryType::directory});
    relative /= "file" + std::to_string(i) + ".h";
    dir.write(fs::relative(source, dir.path()) / relative, "content " + std::to_string(i));
    files.push_back({.path = relative.generic_string(),
                     .type = archive::EntryType::file,
                     .sha256 = "sha" + std::to_string(i)});
  }
  return files;
}

ino_t inode_of(const fs::path& path) {
  struct stat info {};
  REQUIRE(::lstat(path.c_str(), &info) == 0);
  return info.st_ino;
}

}  // namespace

TEST_CASE("generation builder: hundreds of files in nested folders are all linked",
          "[store][generation]") {
  const test::TempDir dir;
  const auto source = dir.path() / "entry";
  const auto files = many_files(dir, source, 400);
  const auto root = dir.path() / "generation";
  fs::create_directories(root);
  GenerationBuilder builder(root, LinkMode::hardlink);
  REQUIRE(builder.place("cccl", source, files));
  CHECK(builder.files_placed() == 400);
  CHECK(builder.link_mode() == "hardlink");
  for (const auto& file : files) {
    INFO(file.path);
    if (file.type == archive::EntryType::directory) {
      CHECK(fs::is_directory(root / file.path));
    } else {
      CHECK(inode_of(root / file.path) == inode_of(source / file.path));
    }
  }
  // A second package in the same folders, and the first one's files again: fine.
  const auto more = dir.path() / "entry2";
  dir.write("entry2/include/d1/more.h", "more");
  REQUIRE(builder.place("more", more,
                        {{.path = "include/d1", .type = archive::EntryType::directory},
                         {.path = "include/d1/more.h", .sha256 = "more"}}));
  CHECK(builder.files_placed() == 401);
  CHECK(sys::read_file(root / "include/d1/more.h").value() == "more");
}

TEST_CASE("generation builder: copies when asked, every file whole", "[store][generation]") {
  const test::TempDir dir;
  const auto source = dir.path() / "entry";
  const auto files = many_files(dir, source, 100);
  const auto root = dir.path() / "generation";
  fs::create_directories(root);
  GenerationBuilder builder(root, LinkMode::copy);
  REQUIRE(builder.place("pkg", source, files));
  CHECK(builder.files_placed() == 100);
  for (const auto& file : files) {
    if (file.type != archive::EntryType::file) continue;
    INFO(file.path);
    CHECK(inode_of(root / file.path) != inode_of(source / file.path));
    CHECK(sys::read_file(root / file.path).value() == sys::read_file(source / file.path).value());
  }
}

TEST_CASE("generation builder: a package with symlinks is placed in order", "[store][generation]") {
  const test::TempDir dir;
  const auto source = dir.path() / "entry";
  auto files = many_files(dir, source, 80);
  dir.write("entry/lib/libfoo.so.1", "elf");
  // The folder a later entry names through the symlink must be the symlink's target.
  files.insert(files.begin(),
               {{.path = "lib/libfoo.so.1", .sha256 = "elf"},
                {.path = "lib64", .type = archive::EntryType::symlink, .link_target = "lib"}});
  dir.write("entry/lib64/libbar.so", "bar");
  fs::rename(source / "lib64" / "libbar.so", source / "lib" / "libbar.so");
  files.push_back({.path = "lib64/libbar.so", .sha256 = "bar"});
  fs::remove(source / "lib64");
  fs::create_directory_symlink("lib", source / "lib64");

  const auto root = dir.path() / "generation";
  fs::create_directories(root);
  GenerationBuilder builder(root, LinkMode::hardlink);
  REQUIRE(builder.place("pkg", source, files));
  CHECK(builder.files_placed() == 82);
  CHECK(fs::is_symlink(root / "lib64"));
  CHECK(fs::read_symlink(root / "lib64") == "lib");
  CHECK(sys::read_file(root / "lib/libbar.so").value() == "bar");
}

TEST_CASE("generation builder: a file that cannot be linked fails the place, named",
          "[store][generation]") {
  const test::TempDir dir;
  const auto source = dir.path() / "entry";
  const auto files = many_files(dir, source, 200);
  const auto root = dir.path() / "generation";
  // Something is already where a file past the first goes (the threads' part).
  const auto& taken = *std::find_if(files.begin() + 150, files.end(), [](const FileRecord& f) {
    return f.type == archive::EntryType::file;
  });
  dir.write(fs::path("generation") / taken.path, "in the way");
  GenerationBuilder builder(root, LinkMode::hardlink);
  const auto placed = builder.place("pkg", source, files);
  REQUIRE_FALSE(placed);
  CHECK_THAT(placed.error().to_string(), Catch::Contains("cannot hardlink") &&
                                             Catch::Contains(taken.path) &&
                                             Catch::Contains("File exists"));
}
