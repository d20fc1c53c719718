#pragma once

// The pyenv module: the Python half of a prefix generation. The interpreter
// is either a python-build-standalone archive (placed like any package) or a
// venv made from the machine's Python; wheels are installed by envkit itself
// (wheel_install.hpp) into that interpreter's sysconfig scheme; NVIDIA wheels
// that are also the prefix's CUDA or cuDNN get a second view in lib/ and
// include/ made of hard links to the very files placed in site-packages.

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/archive/layout.hpp"
#include "envkit/core/result.hpp"
#include "envkit/store/records.hpp"

namespace envkit::pyenv {

// What a generation's interpreter is, read by starting it.
struct InterpreterCheck {
  std::string version;        // 3.11.7
  std::string site_packages;  // lib/python3.11/site-packages, relative to the root
  std::vector<std::string>
      failed_imports;  // of ssl, zlib, sqlite3, venv: "sqlite3 (No module ...)"
  // Where wheels install (sysconfig's paths, as pip 23 reads them), relative to the root.
  struct Scheme {
    std::string purelib;  // lib/python3.11/site-packages
    std::string platlib;  // the same, or lib64/...
    std::string scripts;  // bin
    std::string include;  // a wheel's `headers` go to <include>/<name>: include/site/python3.11
    std::string data;     // .
  } scheme;
  std::string cache_tag;  // cpython-311: bytecode's __pycache__/<module>.<tag>.pyc
};

// The interpreter of a generation: `root`/bin/python3.
[[nodiscard]] std::filesystem::path interpreter(const std::filesystem::path& root);

// Starts `root`/bin/python3 and tries the modules a working environment needs
// (ssl, zlib, sqlite3, venv). Failing to start is an error that quotes what it
// printed; a module that fails to import is reported, not an error.
[[nodiscard]] Result<InterpreterCheck> check_interpreter(const std::filesystem::path& root);

// The wheels `python -m venv` of `base` would install (pip; before Python 3.12
// setuptools too): ensurepip's, from its wheel folder (Debian's
// /usr/share/python-wheels) or its _bundled/. None is an error with the hint
// Debian's python3-venv needs.
[[nodiscard]] Result<std::vector<std::filesystem::path>> ensurepip_wheels(
    const std::filesystem::path& base);

// Makes `root` a venv of `base` (the machine's Python) without pip: envkit
// installs ensurepip's wheels itself, from the cache (`venv` with pip takes
// seconds: ensurepip runs pip). Returns the files, folders and links it made,
// relative to `root`. The activate scripts name `stable_root` (the prefix), not
// the generation.
[[nodiscard]] Result<std::vector<store::FileRecord>> make_venv(
    const std::filesystem::path& base, const std::filesystem::path& root,
    const std::filesystem::path& stable_root);

// The prefix's view of an NVIDIA wheel installed in site-packages: each of `wheel_files`
// (relative to `root`, under `site_packages`) that the wheel layout maps into
// the prefix (nvidia/cudnn/lib/libcudnn.so.9 -> lib/libcudnn.so.9) is hard
// linked there, and the soname links the wheel cannot hold are made. Returns
// what it made, relative to `root`.
[[nodiscard]] Result<std::vector<store::FileRecord>> link_prefix_view(
    const std::filesystem::path& root, const std::string& site_packages,
    const std::vector<store::FileRecord>& wheel_files, const archive::LayoutTarget& target);

}  // namespace envkit::pyenv
