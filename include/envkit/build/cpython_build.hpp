#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "envkit/build/source_build.hpp"
#include "envkit/core/result.hpp"

// CPython from its python.org source tarball, the way pyenv builds it
// (BuildSystem::cpython; docs/python.md): a shared-library build whose
// programs find libpython through an $ORIGIN rpath, so the installed tree
// works wherever it is linked (the cache entry, every prefix).
namespace envkit::build {

// The configure arguments besides --prefix: --enable-shared,
// --with-ensurepip=install, and LDFLAGS with the rpath `$ORIGIN/../lib` (as
// the Makefile needs it written) followed by `user_ldflags` ($LDFLAGS).
[[nodiscard]] std::vector<std::string> cpython_configure_arguments(const std::string& user_ldflags);

// After `make install` put the tree for `build.prefix` at `installed`: the
// scripts of bin/ that name the prefix's python (pip3, ...) find it beside
// themselves instead, bin/python and bin/pip are made, and the modules
// deep-learning code needs are imported by the installed python. Returns a
// warning per module that is missing, naming the Debian package it needs; a
// python that does not run at all is an error (the log gets its output).
[[nodiscard]] Result<std::vector<std::string>> finish_cpython(
    const SourceBuild& build, const std::filesystem::path& installed, BuildLog& log);

// The warning for module `module` missing from a CPython X.`minor` build.
[[nodiscard]] std::string missing_module_warning(const std::string& label,
                                                 const std::string& module, unsigned minor);

}  // namespace envkit::build
