#pragma once

#include <span>
#include <string_view>

#include "envkit/core/result.hpp"
#include "envkit/recipes/recipe.hpp"

namespace envkit::recipes {

// Recipe `python` from pyenv's python-build definitions (files named after the
// release: `3.7.9`, `3.14.0t`, `3.15-dev`), each SourceText's `file` its path:
// the python.org source tarball of every final CPython 3.5 … 3.14 release, as
// its `install_package "Python-X.Y.Z" "<url>#<sha256>" ...` line gives it —
// the .tar.xz where the definition has one, else the .tgz. Pre-releases
// (a/b/rc), -dev, free-threaded (`t`) and debug definitions are skipped, and
// so are definitions with no hashed Python tarball. Each version gets a
// linux-x86_64 artifact of kind source, layout source-tree, build system
// cpython. `provenance` is recorded as the recipe's source. A definition whose
// Python line names another release, or whose hash is not a sha256, is an
// error at file:line:column.
[[nodiscard]] Result<Recipe> import_python_source(std::span<const SourceText> definitions,
                                                  std::string_view provenance);

}  // namespace envkit::recipes
