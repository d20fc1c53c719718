// CPython's build kind: its configure arguments, and a stand-in CPython tree
// (a configure script and a Makefile that install a fake python3) built the
// way a python.org tarball is: the scripts made relocatable, python/pip
// links made, missing modules reported as warnings.
#include "envkit/build/cpython_build.hpp"

#include <catch2/catch.hpp>
#include <fstream>

#include "envkit/build/source_build.hpp"
#include "envkit/sys/fs.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"
#include "support/tiny_library.hpp"

namespace envkit::build {
namespace {

namespace fs = std::filesystem;
using specs::BuildSystem;
using test::ScopedEnv;
using test::TempDir;

void write_program(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
  fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
}

// A tree CPython's build kind can build: configure records its arguments and
// writes a Makefile; `make install` puts bin/python3.7 (a shell script that
// answers the module check: minor 7, `_ssl` and `ctypes` missing) and a
// bin/pip3 whose shebang names the prefix's python, as ensurepip writes it.
fs::path write_fake_cpython(const fs::path& dir, bool configure_fails = false) {
  fs::create_directories(dir);
  write_program(dir / "python3.7", "#!/bin/sh\necho 7\necho _ssl\necho ctypes\n");
  // pip's form for a shebang too long for the kernel (a cache entry's path often is).
  write_program(dir / "pydoc3.in",
                "#!/bin/sh\n'''exec' \"@PREFIX@/bin/python3.7\" \"$0\" \"$@\"\n' '''\nprint(2)\n");
  write_program(dir / "configure",
                configure_fails ? "#!/bin/sh\necho 'configure: error: no acceptable C compiler "
                                  "found in $PATH'\nexit 1\n"
                                : "#!/bin/sh\n"
                                  "printf '%s\\n' \"$@\" > configure.args\n"
                                  "prefix=${1#--prefix=}\n"
                                  "{\n"
                                  "  printf 'all:\\n\\t@echo built\\n'\n"
                                  "  printf 'install:\\n'\n"
                                  "  printf '\\tmkdir -p $(DESTDIR)%s/bin\\n' \"$prefix\"\n"
                                  "  printf '\\tcp python3.7 $(DESTDIR)%s/bin/\\n' \"$prefix\"\n"
                                  "  printf '\\tln -s python3.7 $(DESTDIR)%s/bin/python3\\n' "
                                  "\"$prefix\"\n"
                                  "  printf '\\tprintf \"#!%s/bin/python3.7\\\\nprint(1)\\\\n\" "
                                  "> $(DESTDIR)%s/bin/pip3\\n' \"$prefix\" \"$prefix\"\n"
                                  "  printf '\\tchmod 755 $(DESTDIR)%s/bin/pip3\\n' \"$prefix\"\n"
                                  "  printf '\\tsed s,@PREFIX@,%s, pydoc3.in > "
                                  "$(DESTDIR)%s/bin/pydoc3\\n' \"$prefix\" \"$prefix\"\n"
                                  "} > Makefile\n");
  return dir;
}

SourceBuild cpython_build_in(const TempDir& dir, const fs::path& source) {
  auto toolchain = find_toolchain({.cc = std::nullopt, .label = "python 3.7.9"});
  INFO((toolchain ? "" : toolchain.error().to_string()));
  REQUIRE(toolchain);
  return {.label = "python 3.7.9",
          .source = source,
          .work = dir.path() / "work",
          .prefix = dir.path() / "entry",
          .install_root = dir.path() / "staging",
          .log = dir.path() / "logs" / "python.log",
          .build_system = BuildSystem::cpython,
          .toolchain = *toolchain,
          .jobs = 2};
}

std::string read_text_of(const fs::path& path) {
  auto text = sys::read_file(path);
  return text ? *text : std::string("<unreadable>");
}

}  // namespace

TEST_CASE("CPython is configured shared, with ensurepip and an $ORIGIN rpath make keeps",
          "[store][source][cpython]") {
  CHECK(cpython_configure_arguments("") ==
        std::vector<std::string>{"--enable-shared", "--with-ensurepip=install",
                                 "LDFLAGS=-Wl,-rpath,'$$ORIGIN/../lib'"});
  CHECK(cpython_configure_arguments("-L/opt/ssl/lib").back() ==
        "LDFLAGS=-Wl,-rpath,'$$ORIGIN/../lib' -L/opt/ssl/lib");
}

TEST_CASE("a missing module's warning names the module and the package its build needs",
          "[store][source][cpython]") {
  CHECK(missing_module_warning("python 3.9.2", "ctypes", 9) ==
        "python 3.9.2: `ctypes` is missing (ctypes (torch, numpy's loaders)): its build needs "
        "libffi-dev; `sudo apt-get install libffi-dev` (Debian, Ubuntu), then `envkit cache "
        "clean` and reinstall");
  CHECK_THAT(missing_module_warning("python 3.9.2", "sqlite3", 9),
             Catch::Contains("libsqlite3-dev"));
  CHECK_THAT(missing_module_warning("python 3.9.2", "lzma", 9), Catch::Contains("liblzma-dev"));
  CHECK_THAT(missing_module_warning("python 3.9.2", "bz2", 9), Catch::Contains("libbz2-dev"));
  CHECK_THAT(missing_module_warning("python 3.9.2", "zlib", 9), Catch::Contains("zlib1g-dev"));
  const auto old_ssl = missing_module_warning("python 3.7.9", "_ssl", 7);
  CHECK_THAT(old_ssl, Catch::Contains("Python 3.7 does not build against OpenSSL 3.x"));
  CHECK_THAT(old_ssl, Catch::Contains("libssl1.1-dev"));
  CHECK_THAT(old_ssl, Catch::Contains("Python >= 3.10"));
  CHECK_THAT(missing_module_warning("python 3.12.1", "_ssl", 12), Catch::Contains("libssl-dev;"));
}

TEST_CASE("a CPython build installs relocatable scripts, python/pip links and module warnings",
          "[store][source][cpython]") {
  if (test::build_tools_missing()) return;
  const TempDir dir;
  const auto source = write_fake_cpython(dir.path() / "src");
  const auto build = cpython_build_in(dir, source);
  const ScopedEnv ldflags("LDFLAGS", "-L/opt/x");

  auto built = build_from_source(build);
  INFO((built ? "" : built.error().to_string()));
  REQUIRE(built);
  CHECK(built->build_system == BuildSystem::cpython);
  CHECK(read_text_of(source / "configure.args") ==
        "--prefix=" + build.prefix.string() +
            "\n--enable-shared\n--with-ensurepip=install\nLDFLAGS=-Wl,-rpath,'$$ORIGIN/../lib' "
            "-L/opt/x\n");
  const auto bin = build.install_root / "bin";
  // pip3 runs the python beside it, not the one of the prefix it was built for.
  CHECK(read_text_of(bin / "pip3") ==
        "#!/bin/sh\n'''exec' \"$(dirname -- \"$(realpath -- \"$0\")\")/python3.7\" \"$0\" "
        "\"$@\"\n' '''\nprint(1)\n");
  CHECK(fs::status(bin / "pip3").permissions() == fs::status(bin / "python3.7").permissions());
  CHECK(read_text_of(bin / "pydoc3") ==
        "#!/bin/sh\n'''exec' \"$(dirname -- \"$(realpath -- \"$0\")\")/python3.7\" \"$0\" "
        "\"$@\"\n' '''\nprint(2)\n");
  CHECK(fs::read_symlink(bin / "python") == "python3");
  CHECK(fs::read_symlink(bin / "pip") == "pip3");
  CHECK(built->warnings ==
        std::vector<std::string>{missing_module_warning("python 3.7.9", "_ssl", 7),
                                 missing_module_warning("python 3.7.9", "ctypes", 7)});
  CHECK_THAT(read_text_of(build.log),
             Catch::Contains("# warning: " + missing_module_warning("python 3.7.9", "_ssl", 7)));
}

TEST_CASE("a failing CPython build keeps its log and shows its last lines",
          "[store][source][cpython]") {
  if (test::build_tools_missing()) return;
  const TempDir dir;
  const auto build = cpython_build_in(dir, write_fake_cpython(dir.path() / "src", true));
  auto built = build_from_source(build);
  REQUIRE_FALSE(built);
  CHECK(built.error().message() ==
        "cannot build python 3.7.9 from source: `configure` failed (exit status 1)");
  CHECK_THAT(built.error().to_string(),
             Catch::Contains("configure: error: no acceptable C compiler found in $PATH"));
  CHECK_THAT(read_text_of(build.log), Catch::Contains("--with-ensurepip=install"));
  CHECK_FALSE(fs::exists(build.install_root));
}

}  // namespace envkit::build
