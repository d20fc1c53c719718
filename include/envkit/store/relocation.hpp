#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "envkit/core/result.hpp"

// The files envkit itself writes with a prefix's path in them, and how that
// path is replaced: `install` points a venv's files at the prefix rather than
// the generation, `export --oci` points them at the image's /opt/envkit.
namespace envkit::store {

// Whether `relative` (to a generation's root) is one of the files `python -m
// venv` writes its own path into: pyvenv.cfg and bin/activate* (Activate.ps1).
[[nodiscard]] bool names_its_prefix(std::string_view relative);

// `content` with every occurrence of `from` replaced by `to`.
[[nodiscard]] std::string replace_path(std::string_view content, std::string_view from,
                                       std::string_view to);

// A script whose first line names an interpreter in `root`/bin by its absolute
// path (`#!<root>/bin/python3.11`, or pip's `/bin/sh` form for long paths) gets
// the `/bin/sh` trampoline that finds that interpreter beside the script
// instead (`realpath "$0"`). Returns whether it was rewritten.
[[nodiscard]] Result<bool> relocate_script(const std::filesystem::path& root,
                                           const std::filesystem::path& script);

// The first lines of such a script: `/bin/sh` that runs `interpreter_name`
// (python3) found beside the script, whatever the prefix's path. No newline at
// the end: the script's second line follows one.
[[nodiscard]] std::string relocatable_shebang(std::string_view interpreter_name);

}  // namespace envkit::store
