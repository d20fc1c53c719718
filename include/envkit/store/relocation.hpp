#pragma once

#include <string>
#include <string_view>

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

}  // namespace envkit::store
