#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "envkit/activation/activation.hpp"
#include "support/temp_dir.hpp"

namespace envkit::activation {
namespace {

namespace fs = std::filesystem;

// A prefix and an "outside" CUDA installation side by side, as files.
struct Machine {
  test::TempDir dir;
  fs::path prefix = dir.path() / "env";
  fs::path outside = dir.path() / "opt" / "cuda";

  void file(const fs::path& path, bool executable = false) const {
    fs::create_directories(path.parent_path());
    dir.write(fs::relative(path, dir.path()), "x");
    if (executable) ::chmod(path.c_str(), 0755);
  }
  // The environment `envkit run` gives: the prefix first, then what was inherited.
  [[nodiscard]] Environment activated(const Environment& inherited) const {
    return with_changes(inherited, assignments(prefix, {}, inherited));
  }
  [[nodiscard]] std::vector<std::string> warnings(const Environment& inherited) const {
    return shadowing_warnings(prefix, activated(inherited));
  }
};

TEST_CASE("an outside library the prefix also has is not warned about", "[activation]") {
  Machine m;
  m.file(m.prefix / "lib" / "libcudart.so.12");
  m.file(m.outside / "lib64" / "libcudart.so.12");
  CHECK(m.warnings({{"LD_LIBRARY_PATH", (m.outside / "lib64").string()}}).empty());
}

TEST_CASE("an outside soname the prefix lacks is named", "[activation]") {
  Machine m;
  m.file(m.prefix / "lib" / "libcudart.so.13");
  m.file(m.outside / "lib64" / "libcudart.so.12");
  m.file(m.outside / "lib64" / "libcudart.so.12.4.127");  // not a soname: named once, by its soname
  m.file(m.outside / "lib64" / "libcudnn.so.8");
  m.file(m.outside / "lib64" / "libcublas.so.12");  // not watched
  const auto warnings = m.warnings({{"LD_LIBRARY_PATH", (m.outside / "lib64").string()}});
  REQUIRE(warnings.size() == 2);
  CHECK(warnings[0] == "programs that need libcudart.so.12 will load `" +
                           (m.outside / "lib64" / "libcudart.so.12").string() +
                           "` (from the inherited LD_LIBRARY_PATH): the prefix has no "
                           "libcudart.so.12");
  CHECK_THAT(warnings[1], Catch::Contains((m.outside / "lib64" / "libcudnn.so.8").string()));
}

TEST_CASE("CUDA 10 and older name the runtime by major and minor", "[activation]") {
  Machine m;
  m.file(m.outside / "lib64" / "libcudart.so.9.0");
  m.file(m.outside / "lib64" / "libcudart.so.9.0.176");  // the file behind it, not a soname
  m.file(m.outside / "lib64" / "libcudnn.so.7");
  const auto warnings = m.warnings({{"LD_LIBRARY_PATH", (m.outside / "lib64").string()}});
  REQUIRE(warnings.size() == 2);
  CHECK_THAT(warnings[0], Catch::StartsWith("programs that need libcudart.so.9.0 will load `" +
                                            (m.outside / "lib64" / "libcudart.so.9.0").string()));
  CHECK_THAT(warnings[1], Catch::Contains("libcudnn.so.7"));
}

TEST_CASE("only the first folder that has a soname counts", "[activation]") {
  Machine m;
  m.file(m.outside / "a" / "libcudnn.so.9");
  m.file(m.outside / "b" / "libcudnn.so.9");
  const auto warnings = m.warnings(
      {{"LD_LIBRARY_PATH", (m.outside / "a").string() + ":" + (m.outside / "b").string()}});
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::Contains((m.outside / "a" / "libcudnn.so.9").string()));
}

TEST_CASE("files that do not exist are never warned about", "[activation]") {
  Machine m;
  fs::create_directories(m.outside / "lib64");
  fs::create_symlink("libcudnn.so.9.1.0", m.outside / "lib64" / "libcudnn.so.9");  // dangling
  CHECK(m.warnings({{"LD_LIBRARY_PATH", (m.outside / "lib64").string() + ":/nonexistent"},
                    {"LD_PRELOAD", "/nonexistent/libcudart.so.12"}})
            .empty());
}

TEST_CASE("the prefix's lib reached through its generation is the prefix's own", "[activation]") {
  Machine m;
  const auto generation = m.dir.path() / ".env.generations" / "1";
  m.file(generation / "lib" / "libcudart.so.12");
  fs::create_symlink(".env.generations/1", m.prefix);
  // An older activation that named the generation itself.
  CHECK(m.warnings({{"LD_LIBRARY_PATH", (generation / "lib").string()}}).empty());
}

TEST_CASE("a CUDA library in LD_PRELOAD is named, whatever the prefix has", "[activation]") {
  Machine m;
  m.file(m.prefix / "lib" / "libcudart.so.12");
  m.file(m.outside / "lib64" / "libcudart.so.12");
  m.file(m.outside / "lib64" / "libjemalloc.so.2");
  const auto preloaded = (m.outside / "lib64" / "libcudart.so.12").string();
  const auto warnings = m.warnings(
      {{"LD_PRELOAD", (m.outside / "lib64" / "libjemalloc.so.2").string() + " " + preloaded}});
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] == "LD_PRELOAD loads `" + preloaded +
                           "` into every program ahead of the prefix's lib/: it is used instead "
                           "of the prefix's own");
}

TEST_CASE("an nvcc on PATH outside the prefix is not warned about on every run", "[activation]") {
  Machine m;
  m.file(m.outside / "bin" / "nvcc", true);
  const Environment inherited = {{"PATH", (m.outside / "bin").string() + ":/usr/bin"}};
  fs::create_directories(m.prefix / "bin");
  // A prefix of NVIDIA's wheels has no nvcc, and nothing is wrong with it:
  // doctor's toolkit check names the other nvcc, once.
  CHECK(m.warnings(inherited).empty());
}

}  // namespace
}  // namespace envkit::activation
