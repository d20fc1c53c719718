#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/specs/artifact.hpp"

// Packages built from source at install (zlib; docs/install.md): the host's
// tools, and one build of an unpacked source tree into a prefix layout
// (bin/, include/, lib/, share/ ...). The store makes a cache entry of the
// result (fill.cpp); nothing here knows the cache. The logged steps serve
// every build at install (Python sdists too, sdist_build.cpp).
namespace envkit::build {

// One command of a build and where it runs.
struct BuildStep {
  std::string name;  // how errors name it: configure, make, cmake --build, pip wheel, ...
  std::vector<std::string> argv;
  std::filesystem::path cwd;
  std::map<std::string, std::optional<std::string>> env;  // set (nullopt: unset) on top of ours
};

// A build's log: each step's command line and output (stdout and stderr
// interleaved), written whole to `path` after every step.
struct BuildLog {
  std::filesystem::path path;  // <cache>/store/v1/logs/<entry>.log
  std::string text;            // what is written so far
};

// Starts `log` with `header` (comment lines: what is built, with what);
// makes its folder.
[[nodiscard]] Result<void> start_build_log(BuildLog& log, std::string header);

// Runs `step`, its output appended to `log`. A step that fails or runs past
// `timeout` is an error (failed): `cannot build LABEL from source: `STEP`
// failed (exit status N)`, because the last 20 lines of its output, hint the
// log's path.
[[nodiscard]] Result<void> run_build_step(const BuildStep& step, const std::string& label,
                                          std::chrono::milliseconds timeout, BuildLog& log);

// The tools a source build runs, found on this machine.
struct Toolchain {
  // The C compiler as given: $CC split into words (a program and its
  // arguments, `ccache gcc`), or `cc`.
  std::vector<std::string> cc;
  std::filesystem::path cc_path;  // its program, resolved (symlinks followed)
  std::string cc_version;         // first line of `<cc> --version`
  std::filesystem::path make;
  std::optional<std::filesystem::path> cmake;  // where it is installed

  // What decides the built bytes besides the sources: the compiler's path
  // and version line. Part of the cache key.
  [[nodiscard]] std::string identity() const;
};

struct ToolchainOptions {
  // The C compiler; nullopt: $CC, else `cc`.
  std::optional<std::string> cc;
  // How errors name what is being built ("zlib 1.3.1").
  std::string label;
};

// The C compiler and make, and cmake where it is installed; a missing
// compiler or make is an error naming the Debian package that has them
// (build-essential).
[[nodiscard]] Result<Toolchain> find_toolchain(const ToolchainOptions& options);

// Whether `toolchain` can build with `build_system`: CMake builds need cmake
// (an error naming the Debian package `cmake`).
[[nodiscard]] Result<void> require_build_tools(const Toolchain& toolchain,
                                               specs::BuildSystem build_system,
                                               const std::string& label);

// How the tree at `source` is built: a `configure` script first, else
// CMakeLists.txt; an error when it has neither.
[[nodiscard]] Result<specs::BuildSystem> detect_build_system(const std::filesystem::path& source,
                                                             const std::string& label);

struct SourceBuild {
  std::string label;                   // "zlib 1.3.1": names the package in errors
  std::filesystem::path source;        // the unpacked tree (its top folder stripped)
  std::filesystem::path work;          // private scratch (build folder, DESTDIR): made, not removed
  std::filesystem::path prefix;        // where the installed files will live (--prefix)
  std::filesystem::path install_root;  // where they are put now: absent, or an empty folder
  std::filesystem::path log;           // the build log, written as the build goes
  std::optional<specs::BuildSystem> build_system;  // nullopt: detect_build_system
  Toolchain toolchain;
  unsigned jobs = 0;  // make -jN; 0: one per core
  // Per step (configure, make, install): generous, a slow machine builds zlib in a minute.
  std::chrono::milliseconds timeout = std::chrono::hours(1);
};

struct SourceBuildResult {
  specs::BuildSystem build_system = specs::BuildSystem::configure;  // as used
  // What the user should know about the result: CPython's missing modules.
  std::vector<std::string> warnings;
};

// Configures, builds and installs `build.source`: the tree `make install`
// (or `cmake --install`) writes for prefix `build.prefix` lands in
// `build.install_root` (installed with DESTDIR, then moved), so files that
// name their prefix (pkg-config's `prefix=`) name `build.prefix`. Every
// step's output goes to `build.log`. A failing step is an error naming the
// package, the step, the log's last lines and the log's path. A CPython build
// (BuildSystem::cpython) is then finished by finish_cpython (cpython_build.hpp):
// its missing modules are the result's warnings.
[[nodiscard]] Result<SourceBuildResult> build_from_source(const SourceBuild& build);

}  // namespace envkit::build
