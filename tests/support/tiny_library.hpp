#pragma once

// A tiny C library's source tree, generated for the source-build tests: tiny.c
// and tiny.h, a `configure` shell script that writes a Makefile (with
// DESTDIR, as GNU makefiles have it) and a CMakeLists.txt. Packed as a
// tarball (with the system's tar) it stands in for zlib's, without the network.
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <source_location>
#include <string>

#include "envkit/core/sha256.hpp"
#include "envkit/sys/process.hpp"
#include "support/skip.hpp"

namespace envkit::test {

struct TinyLibrary {
  std::string version = "1.0";
  int answer = 42;        // what tiny_answer() returns
  bool configure = true;  // with a configure script
  bool cmake = true;      // with a CMakeLists.txt
  bool broken = false;    // tiny.c does not compile
};

// Writes `tiny-<version>/` under `dir` and returns its path.
inline std::filesystem::path write_tiny_source(const std::filesystem::path& dir,
                                               const TinyLibrary& tiny) {
  const auto root = dir / ("tiny-" + tiny.version);
  std::filesystem::create_directories(root);
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(root / name) << text;
  };
  write("tiny.h", "int tiny_answer(void);\n");
  write("tiny.c", "#include \"tiny.h\"\nint tiny_answer(void) { return " +
                      std::to_string(tiny.answer) + (tiny.broken ? " }\n" : "; }\n"));
  if (tiny.configure) {
    // The Makefile's recipe lines start with a tab.
    write("configure",
          "#!/bin/sh\n"
          "# A tiny configure: writes a Makefile for --prefix.\n"
          "prefix=/usr/local\n"
          "for arg in \"$@\"; do\n"
          "  case \"$arg\" in\n"
          "    --prefix=*) prefix=\"${arg#--prefix=}\" ;;\n"
          "    *) echo \"configure: unknown option $arg\" >&2; exit 1 ;;\n"
          "  esac\n"
          "done\n"
          "echo \"checking for a C compiler... ${CC:-cc}\"\n"
          "cat > Makefile <<EOF\n"
          "CC = ${CC:-cc}\n"
          "PREFIX = $prefix\n"
          "all: libtiny.so.1.0\n"
          "libtiny.so.1.0: tiny.c tiny.h\n"
          "\t\\$(CC) -shared -fPIC -Wl,-soname,libtiny.so.1 -o \\$@ tiny.c\n"
          "install: all\n"
          "\tmkdir -p \\$(DESTDIR)\\$(PREFIX)/lib/pkgconfig \\$(DESTDIR)\\$(PREFIX)/include\n"
          "\tcp libtiny.so.1.0 \\$(DESTDIR)\\$(PREFIX)/lib/\n"
          "\tln -sf libtiny.so.1.0 \\$(DESTDIR)\\$(PREFIX)/lib/libtiny.so.1\n"
          "\tln -sf libtiny.so.1 \\$(DESTDIR)\\$(PREFIX)/lib/libtiny.so\n"
          "\tcp tiny.h \\$(DESTDIR)\\$(PREFIX)/include/\n"
          "\tprintf 'prefix=%s\\\\nName: tiny\\\\n' '\\$(PREFIX)' > "
          "\\$(DESTDIR)\\$(PREFIX)/lib/pkgconfig/tiny.pc\n"
          "EOF\n");
    std::filesystem::permissions(root / "configure", std::filesystem::perms::owner_exec,
                                 std::filesystem::perm_options::add);
  }
  if (tiny.cmake) {
    write("CMakeLists.txt",
          "cmake_minimum_required(VERSION 3.13)\n"
          "project(tiny C)\n"
          "add_library(tiny SHARED tiny.c)\n"
          "set_target_properties(tiny PROPERTIES VERSION 1.0 SOVERSION 1)\n"
          "include(GNUInstallDirs)\n"
          "install(TARGETS tiny LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})\n"
          "install(FILES tiny.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})\n");
  }
  return root;
}

struct Tarball {
  std::filesystem::path path;
  std::string sha256;
  std::uint64_t size = 0;
};

// `tree` packed as `out` (.tar.gz), its single top folder first, as upstream tarballs are.
inline Tarball pack_tarball(const std::filesystem::path& tree, const std::filesystem::path& out) {
  std::filesystem::create_directories(out.parent_path());
  auto packed = sys::run_process(
      {"tar", "-czf", out.string(), "-C", tree.parent_path().string(), tree.filename().string()});
  REQUIRE(packed);
  INFO(packed->err);
  REQUIRE(packed->exit_code == 0);
  return {.path = out,
          .sha256 = core::sha256_file(out).value(),
          .size = std::filesystem::file_size(out)};
}

// What tiny_answer() of the library at `path` returns, the library loaded
// with dlopen; nullopt when it does not load.
inline std::optional<int> call_tiny_answer(const std::filesystem::path& path) {
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    WARN("dlopen: " << ::dlerror());
    return std::nullopt;
  }
  using Answer = int (*)();
  const auto answer = reinterpret_cast<Answer>(::dlsym(handle, "tiny_answer"));
  const std::optional<int> result = answer ? std::optional(answer()) : std::nullopt;
  ::dlclose(handle);
  return result;
}

// Source-build tests skip, saying why, where the host has no compiler, make or
// cmake (scripts/setup installs build-essential and cmake).
inline bool build_tools_missing(bool need_cmake = false,
                                std::source_location where = std::source_location::current()) {
  for (const auto* tool : {"cc", "make", "tar"}) {
    if (program_missing(tool, where)) return true;
  }
  return need_cmake && program_missing("cmake", where);
}

}  // namespace envkit::test
