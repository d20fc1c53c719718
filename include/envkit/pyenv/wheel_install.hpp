#pragma once

// The pyenv module: envkit installs a Python wheel itself, as pip 23 does
// (pip/_internal/operations/install/wheel.py; PEP 427, PyPA's "binary
// distribution format"), from the wheel unpacked once, verbatim, in its cache
// entry. Every file of the wheel is placed (reflink, hard link or copy) where
// the interpreter's scheme puts it: the wheel's root in purelib or platlib
// (its WHEEL file's Root-Is-Purelib), `<name>-<version>.data/<key>/` in that
// key's path. What an installer writes is written per environment, not linked:
// `.dist-info/INSTALLER` (envkit), `.dist-info/RECORD` with the installed
// paths, console and GUI entry points as scripts in bin/, `.data/scripts`
// whose first line is `#!python`. Their scripts start with the relocatable
// `/bin/sh` trampoline (python_layer.hpp), so they survive the prefix moving.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/pyenv/python_layer.hpp"
#include "envkit/store/generation_builder.hpp"
#include "envkit/store/records.hpp"

namespace envkit::pyenv {

// A wheel unpacked in the cache.
struct UnpackedWheel {
  std::string name;           // the closure's name for it (PEP 503): `nvidia-cudnn-cu12`
  std::filesystem::path dir;  // the cache entry's folder
  const std::vector<store::FileRecord>* files = nullptr;  // its records: archive paths
};

// A wheel placed in a generation, its RECORD not written yet (bytecode compiled
// after placing goes in it).
struct PlacedWheel {
  std::string name;
  std::string version;    // as its .dist-info folder spells it
  std::string dist_info;  // relative to the root: lib/python3.11/site-packages/x-1.0.dist-info
  std::string lib_dir;    // purelib or platlib, relative to the root: RECORD's paths start there
  std::vector<store::FileRecord> files;  // placed and written, relative to the root
  // RECORD's rows: installed path (relative to lib_dir) -> hash field, size field.
  std::map<std::string, std::pair<std::string, std::string>> rows;
};

// Places `wheel` into the generation `builder` makes, for the
// interpreter `check` describes. A wheel without one .dist-info folder of its
// name, a `.data` entry of an unknown scheme key or outside its scheme path,
// or an entry point without a callable is refused, naming the wheel and entry.
[[nodiscard]] Result<PlacedWheel> place_wheel(store::GenerationBuilder& builder,
                                              const InterpreterCheck& check,
                                              const UnpackedWheel& wheel);

// Runs `root`'s python -m compileall over the .py files of `wheels` (pip's
// bytecode step) and adds each .pyc it wrote to its wheel's files (and RECORD
// rows, with an empty hash and size, as pip writes them).
[[nodiscard]] Result<void> compile_bytecode(const std::filesystem::path& root,
                                            const InterpreterCheck& check,
                                            std::vector<PlacedWheel>& wheels);

// Writes `wheel`'s RECORD (sorted rows, CRLF, as pip's csv writer) and adds it to its files.
[[nodiscard]] Result<void> write_record(store::GenerationBuilder& builder, PlacedWheel& wheel);

// Removes from the generation at `root` what an installed distribution `name`
// (by its dist-info RECORD in `lib_dir`) holds: the venv's own pip, setuptools,
// when the closure brings its own, as pip replaces one version with another.
// The removed paths leave every receipt and the builder's claims. Returns how many.
[[nodiscard]] Result<std::size_t> remove_installed(
    const std::filesystem::path& root, const std::string& lib_dir, const std::string& name,
    std::map<std::string, store::PackageReceipt>& receipts, store::GenerationBuilder& builder);

// pip's console scripts of an entry_points.txt's `[console_scripts]` for
// Python `major_minor` (3.11): `pip` and `easy_install` get their versioned
// names for that Python, as pip 23 writes them. Name -> `module:function`.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> console_script_specs(
    std::map<std::string, std::string> console, const std::string& major_minor);

}  // namespace envkit::pyenv
