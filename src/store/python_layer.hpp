#pragma once

// Internal to store: the Python half of a prefix generation. The interpreter
// is either a python-build-standalone archive (placed like any package) or a
// venv made from the machine's Python; wheels are installed by that
// interpreter's own pip from files envkit downloaded and verified; NVIDIA
// wheels that are also the prefix's CUDA or cuDNN get a second view in lib/
// and include/ made of hard links to the very files pip installed.

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "envkit/archive/layout.hpp"
#include "envkit/core/result.hpp"
#include "envkit/store/records.hpp"

namespace envkit::store::python {

// What a generation's interpreter is, read by starting it.
struct InterpreterCheck {
  std::string version;        // 3.11.7
  std::string site_packages;  // lib/python3.11/site-packages, relative to the root
  std::vector<std::string>
      failed_imports;  // of ssl, zlib, sqlite3, venv: "sqlite3 (No module ...)"
};

// The interpreter of a generation: `root`/bin/python3.
[[nodiscard]] std::filesystem::path interpreter(const std::filesystem::path& root);

// Starts `root`/bin/python3 and tries the modules a working environment needs
// (ssl, zlib, sqlite3, venv). Failing to start is an error that quotes what it
// printed; a module that fails to import is reported, not an error.
[[nodiscard]] Result<InterpreterCheck> check_interpreter(const std::filesystem::path& root);

// Makes `root` a venv of `base` (the machine's Python), with pip. Returns the
// files, folders and links it made, relative to `root`.
// The activate scripts name `stable_root` (the prefix), not the generation.
[[nodiscard]] Result<std::vector<FileRecord>> make_venv(const std::filesystem::path& base,
                                                        const std::filesystem::path& root,
                                                        const std::filesystem::path& stable_root);

// A verified wheel file of the cache, for pip.
struct WheelFile {
  std::string name;
  std::string version;
  std::string sha256;
  std::filesystem::path file;
};

// Symbolic links in `folder` (made) to each of `wheels`' files, by file name:
// a folder pip reads with --find-links.
[[nodiscard]] Result<void> link_wheel_files(const std::filesystem::path& folder,
                                            const std::vector<WheelFile>& wheels);

// Installs `wheels` with `root`'s own pip: no index, no dependencies (the
// lock's closure is complete), every file's hash required. `note` (may be empty)
// hears how far pip got, every few seconds.
[[nodiscard]] Result<void> pip_install(const std::filesystem::path& root,
                                       const std::vector<WheelFile>& wheels,
                                       std::chrono::seconds timeout,
                                       const std::function<void(const std::string&)>& note);

// The files pip installed for distribution `name` (its dist-info RECORD),
// relative to `root`, with their sha256 (RECORD's, else computed). Scripts in
// bin/ whose first lines name the generation's interpreter are rewritten to
// find the interpreter beside themselves, so they survive the generation
// being renamed or the prefix being moved.
[[nodiscard]] Result<std::vector<FileRecord>> installed_files(const std::filesystem::path& root,
                                                              const std::string& site_packages,
                                                              const std::string& name,
                                                              const std::string& version);

// The prefix's view of an NVIDIA wheel pip installed: each of `wheel_files`
// (relative to `root`, under `site_packages`) that the wheel layout maps into
// the prefix (nvidia/cudnn/lib/libcudnn.so.9 -> lib/libcudnn.so.9) is hard
// linked there, and the soname links the wheel cannot hold are made. Returns
// what it made, relative to `root`.
[[nodiscard]] Result<std::vector<FileRecord>> link_prefix_view(
    const std::filesystem::path& root, const std::string& site_packages,
    const std::vector<FileRecord>& wheel_files, const archive::LayoutTarget& target);

// A script whose first line names an interpreter in `root`/bin by its absolute
// path (`#!<root>/bin/python3.11`, or pip's `/bin/sh` form for long paths) gets
// the `/bin/sh` trampoline that finds that interpreter beside the script
// instead (`realpath "$0"`). Returns whether it was rewritten.
[[nodiscard]] Result<bool> relocate_script(const std::filesystem::path& root,
                                           const std::filesystem::path& script);

}  // namespace envkit::store::python
