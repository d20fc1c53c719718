#include "envkit/elf/loader.hpp"

#include <catch2/catch.hpp>

#include "elf_fixtures.hpp"
#include "support/temp_dir.hpp"

using envkit::elf::read_elf;
using envkit::elf::resolve_needed;
using envkit::elf::SearchContext;
using envkit::elf::SearchRule;
using envkit::test::TempDir;
namespace fs = std::filesystem;
namespace test = envkit::test;

namespace {

// libdep.so.1 built once, copied into whichever folders a test puts it in,
// and libraries that need it, each with its own DT_RPATH or DT_RUNPATH.
struct Tree {
  TempDir temp;
  fs::path build = temp.path() / "build";
  fs::path rpath_dir = temp.path() / "rpath";
  fs::path llp_dir = temp.path() / "ld-library-path";
  fs::path runpath_dir = temp.path() / "runpath";
  fs::path system_dir = temp.path() / "system";
  fs::path dep = test::shared_library(build, "libdep.so.1", "dep");

  // A library needing libdep.so.1, in `dir`, linked with `flags`.
  [[nodiscard]] envkit::elf::ElfFile consumer(const fs::path& dir,
                                              std::vector<std::string> flags) const {
    flags.insert(flags.end(), {"-L" + build.string(), "-l:libdep.so.1"});
    auto elf = read_elf(test::shared_library(dir, "libapp.so.1", "app", flags));
    REQUIRE(elf);
    REQUIRE(elf->needed.at(0) == "libdep.so.1");
    return *elf;
  }
  fs::path put_dep(const fs::path& dir) const {
    fs::create_directories(dir);
    fs::copy_file(dep, dir / "libdep.so.1", fs::copy_options::overwrite_existing);
    return dir / "libdep.so.1";
  }
  [[nodiscard]] SearchContext context() const { return {{llp_dir}, {system_dir}}; }
};

void check_found(const envkit::elf::Resolution& resolution, const fs::path& path, SearchRule rule) {
  INFO("resolved to " << (resolution.path ? resolution.path->string() : "nothing"));
  CHECK(resolution.found());
  REQUIRE(resolution.path);
  CHECK(fs::equivalent(*resolution.path, path));
  CHECK(resolution.rule == rule);
}

}  // namespace

TEST_CASE("LD_LIBRARY_PATH beats DT_RUNPATH, which beats the system", "[elf][loader]") {
  if (!test::has_c_compiler()) return;
  Tree tree;
  const auto app =
      tree.consumer(tree.temp.path() / "app",
                    {"-Wl,--enable-new-dtags", "-Wl,-rpath," + tree.runpath_dir.string()});
  REQUIRE(app.runpath);
  const auto in_llp = tree.put_dep(tree.llp_dir);
  const auto in_runpath = tree.put_dep(tree.runpath_dir);
  const auto in_system = tree.put_dep(tree.system_dir);

  check_found(resolve_needed(app, "libdep.so.1", tree.context()), in_llp,
              SearchRule::ld_library_path);
  fs::remove(in_llp);
  check_found(resolve_needed(app, "libdep.so.1", tree.context()), in_runpath, SearchRule::runpath);
  fs::remove(in_runpath);
  check_found(resolve_needed(app, "libdep.so.1", tree.context()), in_system, SearchRule::system);
  fs::remove(in_system);
  const auto missing = resolve_needed(app, "libdep.so.1", tree.context());
  CHECK_FALSE(missing.found());
  CHECK_FALSE(missing.path);
  CHECK(missing.name == "libdep.so.1");
}

TEST_CASE("DT_RPATH beats LD_LIBRARY_PATH", "[elf][loader]") {
  if (!test::has_c_compiler()) return;
  Tree tree;
  const auto app =
      tree.consumer(tree.temp.path() / "app",
                    {"-Wl,--disable-new-dtags", "-Wl,-rpath," + tree.rpath_dir.string()});
  REQUIRE(app.rpath);
  REQUIRE_FALSE(app.runpath);
  const auto in_rpath = tree.put_dep(tree.rpath_dir);
  const auto in_llp = tree.put_dep(tree.llp_dir);
  check_found(resolve_needed(app, "libdep.so.1", tree.context()), in_rpath, SearchRule::rpath);
  fs::remove(in_rpath);
  check_found(resolve_needed(app, "libdep.so.1", tree.context()), in_llp,
              SearchRule::ld_library_path);
}

TEST_CASE("DT_RPATH is ignored when DT_RUNPATH is present", "[elf][loader]") {
  // The linker writes one or the other, so this object is made by hand.
  if (!test::has_c_compiler()) return;
  Tree tree;
  test::MiniElf spec;
  spec.machine = test::host_identity().machine;
  spec.needed = {"libdep.so.1"};
  spec.rpath = tree.rpath_dir.string();
  spec.runpath = tree.runpath_dir.string();
  auto app = read_elf(tree.temp.write("app/libboth.so", test::mini_elf(spec)));
  REQUIRE(app);
  REQUIRE(app->identity == test::host_identity());

  for (const auto& dir : envkit::elf::search_dirs(*app, tree.context())) {
    CHECK(dir.rule != SearchRule::rpath);
  }
  tree.put_dep(tree.rpath_dir);
  CHECK_FALSE(resolve_needed(*app, "libdep.so.1", tree.context()).found());
  const auto in_runpath = tree.put_dep(tree.runpath_dir);
  check_found(resolve_needed(*app, "libdep.so.1", tree.context()), in_runpath, SearchRule::runpath);
}

TEST_CASE("$ORIGIN is the folder of the requesting object", "[elf][loader]") {
  if (!test::has_c_compiler()) return;
  Tree tree;
  const auto root = tree.temp.path() / "prefix";
  const auto app =
      tree.consumer(root / "lib", {"-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/../other"});
  const auto old_style = tree.consumer(
      root / "lib2", {"-Wl,--disable-new-dtags", "-Wl,-rpath,/nowhere:${ORIGIN}/../third"});
  const auto in_other = tree.put_dep(root / "other");
  const auto in_third = tree.put_dep(root / "third");

  const SearchContext none;
  check_found(resolve_needed(app, "libdep.so.1", none), in_other, SearchRule::runpath);
  check_found(resolve_needed(old_style, "libdep.so.1", none), in_third, SearchRule::rpath);
  const auto dirs = envkit::elf::search_dirs(app, none);
  REQUIRE(dirs.size() == 1);
  CHECK(dirs[0].dir == fs::absolute(root / "lib") / "../other");
}

TEST_CASE("expand_origin replaces only the ORIGIN token", "[elf][loader]") {
  using envkit::elf::expand_origin;
  CHECK(expand_origin("$ORIGIN/../lib:${ORIGIN}", "/p/lib") == "/p/lib/../lib:/p/lib");
  CHECK(expand_origin("$ORIGINAL/x", "/p") == "$ORIGINAL/x");
  CHECK(expand_origin("/usr/$LIB/$PLATFORM", "/p") == "/usr/$LIB/$PLATFORM");
  CHECK(expand_origin("$ORIGIN", "/p") == "/p");
}

TEST_CASE("a file of another machine or class is skipped, as ld.so skips it", "[elf][loader]") {
  if (!test::has_c_compiler()) return;
  Tree tree;
  const auto app =
      tree.consumer(tree.temp.path() / "app",
                    {"-Wl,--enable-new-dtags", "-Wl,-rpath," + tree.runpath_dir.string()});
  const auto in_runpath = tree.put_dep(tree.runpath_dir);

  test::MiniElf foreign;
  SECTION("another machine") {
    foreign.machine = test::other_machine();
  }
  SECTION("another class") {
    foreign.machine = app.identity.machine;
    foreign.elf_class = app.identity.elf_class == envkit::elf::ElfClass::elf64
                            ? envkit::elf::ElfClass::elf32
                            : envkit::elf::ElfClass::elf64;
  }
  const auto wrong = tree.temp.write("ld-library-path/libdep.so.1", test::mini_elf(foreign));

  const auto resolution = resolve_needed(app, "libdep.so.1", tree.context());
  check_found(resolution, in_runpath, SearchRule::runpath);
  REQUIRE(resolution.skipped.size() == 1);
  CHECK(resolution.skipped[0].path == wrong);
  const auto wanted = envkit::elf::describe(app.identity);
  CHECK(resolution.skipped[0].reason ==
        envkit::elf::describe(envkit::elf::read_elf_identity(wrong).value()) + ", not " + wanted);
}

TEST_CASE("a file that is not ELF stops the search, as in ld.so", "[elf][loader]") {
  if (!test::has_c_compiler()) return;
  Tree tree;
  const auto app =
      tree.consumer(tree.temp.path() / "app",
                    {"-Wl,--enable-new-dtags", "-Wl,-rpath," + tree.runpath_dir.string()});
  tree.put_dep(tree.runpath_dir);
  const auto junk = tree.temp.write("ld-library-path/libdep.so.1", "not a library\n");

  const auto resolution = resolve_needed(app, "libdep.so.1", tree.context());
  CHECK_FALSE(resolution.found());
  CHECK(resolution.path == junk);
  CHECK(resolution.rule == SearchRule::ld_library_path);
  REQUIRE(resolution.problem);
  CHECK_THAT(*resolution.problem, Catch::StartsWith(junk.string() + " is not an ELF file"));
}

TEST_CASE("a name with a slash is opened as a path", "[elf][loader]") {
  if (!test::has_c_compiler()) return;
  Tree tree;
  const auto app = tree.consumer(tree.temp.path() / "app", {});
  check_found(resolve_needed(app, tree.dep.string(), tree.context()), tree.dep, SearchRule::path);
  check_found(resolve_needed(app, "$ORIGIN/../build/libdep.so.1", tree.context()), tree.dep,
              SearchRule::path);
  CHECK_FALSE(resolve_needed(app, (tree.temp.path() / "none/libdep.so.1").string(), tree.context())
                  .found());
}

TEST_CASE("an object linked with -z nodefaultlib is not given the system dirs", "[elf][loader]") {
  if (!test::has_c_compiler()) return;
  Tree tree;
  const auto app = tree.consumer(tree.temp.path() / "app", {"-Wl,-z,nodefaultlib"});
  REQUIRE(app.nodeflib);
  tree.put_dep(tree.system_dir);
  CHECK_FALSE(resolve_needed(app, "libdep.so.1", tree.context()).found());
  const auto in_llp = tree.put_dep(tree.llp_dir);
  check_found(resolve_needed(app, "libdep.so.1", tree.context()), in_llp,
              SearchRule::ld_library_path);
}

TEST_CASE("Resolver remembers a name resolved with the same search path", "[elf][loader]") {
  if (!test::has_c_compiler()) return;
  Tree tree;
  const auto one = tree.consumer(tree.temp.path() / "one", {});
  const auto two = tree.consumer(tree.temp.path() / "two", {});
  const auto in_system = tree.put_dep(tree.system_dir);
  envkit::elf::Resolver resolver(tree.context());
  check_found(resolver.resolve(one, "libdep.so.1"), in_system, SearchRule::system);
  CHECK(resolver.cache_hits() == 0);
  check_found(resolver.resolve(two, "libdep.so.1"), in_system, SearchRule::system);
  CHECK(resolver.cache_hits() == 1);
}

TEST_CASE("split_ld_library_path splits as ld.so does", "[elf][loader]") {
  using envkit::elf::split_ld_library_path;
  CHECK(split_ld_library_path("").empty());
  CHECK(split_ld_library_path("/a:/b/;;/c:") == std::vector<fs::path>{"/a", "/b", ".", "/c", "."});
}

TEST_CASE("read_ld_so_conf follows include globs relative to the file", "[elf][loader]") {
  TempDir dir;
  const auto conf = dir.write("ld.so.conf",
                              "# comment\n"
                              "/opt/first   # trailing comment\n"
                              "include conf.d/*.conf\n"
                              "  /opt/last/\n"
                              "include ld.so.conf\n"  // a loop, which must end
                              "hwcap 1 nosegneg\n"
                              "/opt/old=libc5\n");
  dir.write("conf.d/b.conf", "/opt/b\n");
  dir.write("conf.d/a.conf", "/opt/a\ninclude " + (dir.path() / "extra.conf").string() + "\n");
  dir.write("conf.d/skipped.txt", "/opt/not-a-conf\n");
  dir.write("extra.conf", "/opt/extra\n");

  CHECK(envkit::elf::read_ld_so_conf(conf) == std::vector<fs::path>{"/opt/first", "/opt/a",
                                                                    "/opt/extra", "/opt/b",
                                                                    "/opt/last", "/opt/old"});
  CHECK(envkit::elf::read_ld_so_conf(dir.path() / "absent.conf").empty());
}

TEST_CASE("system_search_context puts ld.so.conf dirs before the defaults, once each",
          "[elf][loader]") {
  TempDir dir;
  const auto defaults = envkit::elf::default_system_dirs();
  REQUIRE_FALSE(defaults.empty());
  const auto conf = dir.write("ld.so.conf", "/opt/conf\n" + defaults.back().string() + "\n");
  const auto context = envkit::elf::system_search_context("/x:/y", conf);
  CHECK(context.ld_library_path == std::vector<fs::path>{"/x", "/y"});
  std::vector<fs::path> expected{"/opt/conf", defaults.back()};
  expected.insert(expected.end(), defaults.begin(), defaults.end() - 1);
  CHECK(context.system_dirs == expected);
}
