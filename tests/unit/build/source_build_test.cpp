// Source builds (zlib's kind): a generated tiny C library built with the
// host's compiler, by its configure script and by CMake, into a prefix layout.
#include "envkit/build/source_build.hpp"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>
#include <string>

#include "envkit/store/cache.hpp"
#include "envkit/store/records.hpp"
#include "envkit/sys/fs.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"
#include "support/tiny_library.hpp"

namespace envkit::build {
namespace {

namespace fs = std::filesystem;
using namespace store;
using specs::BuildSystem;
using test::TempDir;
using test::TinyLibrary;

using envkit::test::ScopedEnv;

// A build of `source` in `dir`: work/, entry/ (the prefix it is configured
// for), staging/ (where it lands), logs/tiny.log.
SourceBuild build_in(const TempDir& dir, const fs::path& source,
                     std::optional<BuildSystem> build_system) {
  auto toolchain = find_toolchain({.cc = std::nullopt, .label = "tiny 1.0"});
  INFO((toolchain ? "" : toolchain.error().to_string()));
  REQUIRE(toolchain);
  return {.label = "tiny 1.0",
          .source = source,
          .work = dir.path() / "work",
          .prefix = dir.path() / "entry",
          .install_root = dir.path() / "staging",
          .log = dir.path() / "logs" / "tiny.log",
          .build_system = build_system,
          .toolchain = *toolchain,
          .jobs = 2};
}

std::string read(const fs::path& path) {
  auto text = sys::read_file(path);
  return text ? *text : std::string("<unreadable>");
}

TEST_CASE("a configure script and make build a library into a prefix layout that loads",
          "[store][source]") {
  if (test::build_tools_missing()) return;
  const TempDir dir;
  const auto source = test::write_tiny_source(dir.path() / "src", {});
  const auto build = build_in(dir, source, BuildSystem::configure);

  auto built = build_from_source(build);
  INFO((built ? "" : built.error().to_string()));
  REQUIRE(built);
  CHECK(built->build_system == BuildSystem::configure);
  const auto root = build.install_root;
  CHECK(test::call_tiny_answer(root / "lib" / "libtiny.so") == 42);
  CHECK(fs::read_symlink(root / "lib" / "libtiny.so") == "libtiny.so.1");
  CHECK(fs::read_symlink(root / "lib" / "libtiny.so.1") == "libtiny.so.1.0");
  CHECK(read(root / "include" / "tiny.h") == "int tiny_answer(void);\n");
  // Configured for the prefix it will live in, installed elsewhere (DESTDIR).
  CHECK_THAT(read(root / "lib" / "pkgconfig" / "tiny.pc"),
             Catch::StartsWith("prefix=" + build.prefix.string() + "\n"));
  CHECK_FALSE(fs::exists(build.prefix));

  // The log has every command and its output.
  const auto log = read(build.log);
  CHECK_THAT(log, Catch::Contains("# build system: configure\n"));
  CHECK_THAT(log, Catch::Contains("$ ./configure --prefix=" + build.prefix.string()));
  CHECK_THAT(log, Catch::Contains("checking for a C compiler..."));
  CHECK_THAT(log, Catch::Contains("install DESTDIR="));

  // The tree's record: every file hashed, links with their targets, folders.
  auto files = record_tree(root);
  REQUIRE(files);
  const auto find = [&](const std::string& path) -> const FileRecord* {
    for (const auto& file : *files) {
      if (file.path == path) return &file;
    }
    return nullptr;
  };
  REQUIRE(find("lib"));
  CHECK(find("lib")->type == archive::EntryType::directory);
  REQUIRE(find("lib/libtiny.so"));
  CHECK(find("lib/libtiny.so")->type == archive::EntryType::symlink);
  CHECK(find("lib/libtiny.so")->link_target == "libtiny.so.1");
  REQUIRE(find("include/tiny.h"));
  CHECK(find("include/tiny.h")->sha256 == core::sha256_hex("int tiny_answer(void);\n"));
  CHECK(find("include/tiny.h")->size == 23);
  CHECK(std::is_sorted(files->begin(), files->end(),
                       [](const auto& a, const auto& b) { return a.path < b.path; }));
}

TEST_CASE("CMake builds the same library, with its lib/ where the prefix wants it",
          "[store][source]") {
  if (test::build_tools_missing(/*need_cmake=*/true)) return;
  const TempDir dir;
  const auto source = test::write_tiny_source(dir.path() / "src", {.answer = 7});
  const auto build = build_in(dir, source, BuildSystem::cmake);

  auto built = build_from_source(build);
  INFO((built ? "" : built.error().to_string()));
  REQUIRE(built);
  CHECK(built->build_system == BuildSystem::cmake);
  CHECK(test::call_tiny_answer(build.install_root / "lib" / "libtiny.so") == 7);
  CHECK(fs::is_regular_file(build.install_root / "include" / "tiny.h"));
  CHECK_THAT(read(build.log), Catch::Contains("-DCMAKE_INSTALL_PREFIX=" + build.prefix.string()));
  CHECK_FALSE(fs::exists(build.prefix));
}

TEST_CASE("without a declared build system, configure comes first, else CMakeLists.txt",
          "[store][source]") {
  const TempDir dir;
  const auto both = test::write_tiny_source(dir.path() / "both", {});
  const auto cmake_only = test::write_tiny_source(dir.path() / "cmake", {.configure = false});
  const auto neither =
      test::write_tiny_source(dir.path() / "neither", {.configure = false, .cmake = false});
  CHECK(detect_build_system(both, "tiny 1.0").value() == BuildSystem::configure);
  CHECK(detect_build_system(cmake_only, "tiny 1.0").value() == BuildSystem::cmake);
  auto none = detect_build_system(neither, "tiny 1.0");
  REQUIRE_FALSE(none);
  CHECK_THAT(none.error().to_string(), Catch::Contains("cannot build tiny 1.0 from source"));
  CHECK_THAT(none.error().to_string(), Catch::Contains("CMakeLists.txt"));

  if (test::build_tools_missing()) return;
  const TempDir built_dir;
  const auto build = build_in(built_dir, both, std::nullopt);
  auto built = build_from_source(build);
  INFO((built ? "" : built.error().to_string()));
  REQUIRE(built);
  CHECK(built->build_system == BuildSystem::configure);
  CHECK_THAT(read(build.log), Catch::Contains("# build system: configure (detected)"));
}

TEST_CASE("a failing build names the package and the step, with the log's tail and path",
          "[store][source]") {
  if (test::build_tools_missing()) return;
  const TempDir dir;
  const auto source = test::write_tiny_source(dir.path() / "src", {.broken = true});
  const auto build = build_in(dir, source, BuildSystem::configure);

  auto built = build_from_source(build);
  REQUIRE_FALSE(built);
  const auto& error = built.error();
  CHECK(error.code() == ErrorCode::failed);
  CHECK(error.message() == "cannot build tiny 1.0 from source: `make` failed (exit status 2)");
  REQUIRE(error.causes().size() == 1);
  CHECK_THAT(error.causes()[0], Catch::StartsWith("the last lines of its output:\n"));
  CHECK_THAT(error.causes()[0], Catch::Contains("tiny.c"));  // the compiler's message
  CHECK_THAT(error.to_string(), Catch::Contains("the whole log: " + build.log.string()));
  // The log is kept, whole: configure's output too.
  const auto log = read(build.log);
  CHECK_THAT(log, Catch::Contains("checking for a C compiler..."));
  CHECK_THAT(log, Catch::Contains("[exit status 2]"));
  CHECK_FALSE(fs::exists(build.install_root));
}

TEST_CASE("a missing compiler, make or cmake names the Debian package to install",
          "[store][source]") {
  SECTION("CC names a compiler that is not there") {
    auto found = find_toolchain({.cc = "/nonexistent/cc", .label = "zlib 1.3.1"});
    REQUIRE_FALSE(found);
    const auto text = found.error().to_string();
    CHECK(found.error().code() == ErrorCode::failed);
    CHECK_THAT(text, Catch::Contains("cannot build zlib 1.3.1 from source: no C compiler"));
    CHECK_THAT(text, Catch::Contains("`/nonexistent/cc`"));
    CHECK_THAT(text, Catch::Contains("sudo apt-get install build-essential"));
    CHECK_THAT(text, Catch::Contains("set CC"));
  }
  SECTION("$CC is read when no compiler is given") {
    const ScopedEnv cc("CC", "/nonexistent/gcc -O2");
    auto found = find_toolchain({.cc = std::nullopt, .label = "zlib 1.3.1"});
    REQUIRE_FALSE(found);
    CHECK_THAT(found.error().to_string(), Catch::Contains("`/nonexistent/gcc -O2`"));
  }
  SECTION("no cc on PATH") {
    const TempDir empty;
    const ScopedEnv cc("CC", std::nullopt);
    const ScopedEnv path("PATH", empty.path().string());
    auto found = find_toolchain({.cc = std::nullopt, .label = "zlib 1.3.1"});
    REQUIRE_FALSE(found);
    CHECK_THAT(found.error().to_string(), Catch::Contains("`cc` is not on PATH"));
    CHECK_THAT(found.error().to_string(), Catch::Contains("build-essential"));
  }
  SECTION("a CMake build without cmake") {
    const Toolchain without_cmake{.cc = {"cc"}, .make = "/usr/bin/make", .cmake = std::nullopt};
    CHECK(require_build_tools(without_cmake, BuildSystem::configure, "tiny 1.0"));
    auto refused = require_build_tools(without_cmake, BuildSystem::cmake, "tiny 1.0");
    REQUIRE_FALSE(refused);
    CHECK_THAT(refused.error().to_string(), Catch::Contains("sudo apt-get install cmake"));
    const Toolchain without_make{.cc = {"cc"}};
    auto no_make = require_build_tools(without_make, BuildSystem::configure, "tiny 1.0");
    REQUIRE_FALSE(no_make);
    CHECK_THAT(no_make.error().to_string(), Catch::Contains("build-essential"));
  }
}

TEST_CASE("the cache entry of a source build is keyed by its compiler and build system",
          "[store][source]") {
  specs::Artifact artifact;
  artifact.component = "zlib";
  artifact.kind = specs::ArtifactKind::source;
  artifact.sha256 = std::string(64, 'a');
  artifact.format = "tar.gz";
  artifact.layout = specs::Layout::source_tree;
  const ArtifactTarget target{.package = "zlib", .version = "1.3.1", .artifact = artifact};
  const Toolchain gcc{.cc = {"cc"}, .cc_path = "/usr/bin/gcc-12", .cc_version = "gcc 12.2.0"};
  const Toolchain clang{.cc = {"cc"}, .cc_path = "/usr/bin/clang-16", .cc_version = "clang 16"};

  const auto id = Cache::source_entry_id(target, gcc.identity());
  CHECK_THAT(id, Catch::StartsWith(std::string(64, 'a') + "-source-"));
  CHECK(id.size() == 64 + 8 + 8);
  CHECK(id == Cache::source_entry_id(target, gcc.identity()));
  CHECK(id != Cache::source_entry_id(target, clang.identity()));
  CHECK(id != Cache::entry_id(target));
  auto declared = target;
  declared.artifact.build_system = BuildSystem::configure;
  CHECK(id != Cache::source_entry_id(declared, gcc.identity()));

  // The host's toolchain names itself the same way every time.
  if (test::build_tools_missing()) return;
  auto first = find_toolchain({.cc = std::nullopt, .label = "zlib 1.3.1"});
  auto second = find_toolchain({.cc = std::nullopt, .label = "zlib 1.3.1"});
  REQUIRE(first);
  REQUIRE(second);
  CHECK(first->identity() == second->identity());
  CHECK_FALSE(first->cc_version.empty());
  CHECK(first->cc_path.is_absolute());
}

}  // namespace
}  // namespace envkit::build
