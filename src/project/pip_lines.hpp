#pragma once

#include <string_view>

#include "envkit/core/error.hpp"
#include "envkit/core/result.hpp"
#include "envkit/project/project_files.hpp"

namespace envkit::project {

// The whitespace pip's formats allow between the parts of a line.
inline bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

// One line of pip's requirements format (a requirements file line, or an item
// of a conda environment's `pip:` list), added to `out`: a requirement, an
// include, or nothing (comments, options, bare paths and URLs). `where` is the
// place of the line's first character.
[[nodiscard]] Result<void> add_pip_line(std::string_view line, SourceLocation where,
                                        FileRequirements& out);

}  // namespace envkit::project
