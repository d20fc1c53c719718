#include "envkit/elf/dependency_check.hpp"

#include <algorithm>
#include <catch2/catch.hpp>

#include "elf_fixtures.hpp"
#include "support/temp_dir.hpp"

using envkit::elf::check_dependencies;
using envkit::elf::Dependency;
using envkit::elf::SearchRule;
using envkit::test::TempDir;
namespace fs = std::filesystem;
namespace test = envkit::test;

namespace {

const Dependency& find(const envkit::elf::DependencyReport& report, const std::string& needed_by,
                       const std::string& name) {
  const auto it = std::find_if(
      report.dependencies.begin(), report.dependencies.end(),
      [&](const Dependency& d) { return d.needed_by.filename() == needed_by && d.name == name; });
  INFO(needed_by << " needing " << name);
  REQUIRE(it != report.dependencies.end());
  return *it;
}

std::vector<std::string> filenames(const std::vector<fs::path>& paths) {
  std::vector<std::string> names;
  for (const auto& path : paths)
    names.push_back(path.filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("check_dependencies reports who needs a missing library and where others come from",
          "[elf][check]") {
  if (!test::has_c_compiler()) return;
  TempDir dir;
  const auto prefix = dir.path() / "prefix";
  const auto lib = prefix / "lib";
  const auto outside = dir.path() / "build-only";

  // libbar: a real file with the usual symlinks, which must be read once.
  test::shared_library(lib, "libbar.so.1", "bar");
  fs::rename(lib / "libbar.so.1", lib / "libbar.so.1.0.0");
  fs::create_symlink("libbar.so.1.0.0", lib / "libbar.so.1");
  fs::create_symlink("libbar.so.1", lib / "libbar.so");
  // libfoo needs libbar (in the prefix), libc (the system), libinner (found via $ORIGIN).
  test::shared_library(prefix / "other", "libinner.so.2", "inner");
  test::shared_library(
      lib, "libfoo.so.1", "foo",
      {"-L" + lib.string(), "-l:libbar.so.1", "-L" + (prefix / "other").string(),
       "-l:libinner.so.2", "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/../other"});
  // libbaz needs libgone, which exists only where it was linked.
  test::shared_library(outside, "libgone.so.7", "gone");
  test::shared_library(lib, "libbaz.so.1", "baz", {"-L" + outside.string(), "-l:libgone.so.7"});
  // Not libraries, or not readable ones.
  dir.write("prefix/lib/libscript.so", "/* GNU ld script */\nGROUP ( libbar.so.1 )\n");
  dir.write("prefix/lib/README.txt", "not scanned\n");
  const auto cut = lib / "libcut.so.1";
  fs::copy_file(lib / "libbaz.so.1", cut);
  fs::resize_file(cut, 100);

  const auto system = envkit::elf::system_search_context("");
  auto report = check_dependencies({prefix, {lib, prefix / "lib64-absent"}}, system);
  REQUIRE(report);

  CHECK(filenames(report->libraries) ==
        std::vector<std::string>{"libbar.so.1", "libbaz.so.1", "libfoo.so.1"});
  REQUIRE(report->unreadable.size() == 1);
  CHECK(report->unreadable[0].path == cut);
  CHECK(report->unreadable[0].error.message() == cut.string() + " is a truncated ELF file");

  const auto unresolved = report->unresolved();
  REQUIRE(unresolved.size() == 1);
  CHECK(unresolved[0]->needed_by == lib / "libbaz.so.1");
  CHECK(unresolved[0]->name == "libgone.so.7");
  CHECK_FALSE(unresolved[0]->from_prefix);

  const auto& bar = find(*report, "libfoo.so.1", "libbar.so.1");
  CHECK(bar.from_prefix);
  CHECK(bar.resolution.rule == SearchRule::ld_library_path);
  CHECK(bar.resolution.path == lib / "libbar.so.1");

  const auto& inner = find(*report, "libfoo.so.1", "libinner.so.2");
  CHECK(inner.from_prefix);
  CHECK(inner.resolution.rule == SearchRule::runpath);

  // Every library the compiler linked in besides those comes from the system.
  for (const auto& dependency : report->dependencies) {
    if (dependency.name.starts_with("libbar") || dependency.name.starts_with("libinner") ||
        dependency.name.starts_with("libgone")) {
      continue;
    }
    INFO(dependency.needed_by << " needs " << dependency.name);
    CHECK(dependency.resolution.found());
    CHECK(dependency.resolution.rule == SearchRule::system);
    CHECK_FALSE(dependency.from_prefix);
  }
}

TEST_CASE("check_dependencies with no prefix root counts the library dirs as the prefix",
          "[elf][check]") {
  if (!test::has_c_compiler()) return;
  TempDir dir;
  const auto lib = dir.path() / "lib";
  test::shared_library(lib, "libbar.so.1", "bar");
  test::shared_library(lib, "libfoo.so.1", "foo", {"-L" + lib.string(), "-l:libbar.so.1"});
  auto report = check_dependencies({{}, {lib}}, {});
  REQUIRE(report);
  CHECK(find(*report, "libfoo.so.1", "libbar.so.1").from_prefix);
}
