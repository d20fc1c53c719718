#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/error.hpp"
#include "envkit/core/result.hpp"
#include "envkit/project/requirement.hpp"

namespace envkit::project {

// `-r other.txt` in a requirements file or a conda environment's `pip:` list.
struct Include {
  std::string path;  // as written, relative to the file that includes it
  SourceLocation where;
};

// What one project file states; `file` (the name given to a parser) is the file
// of every location in it.
struct FileRequirements {
  std::vector<Requirement> requirements;
  std::vector<Include> includes;
};

// requirements.txt: one PEP 508 requirement per line; comments, `\` line
// continuations, `-r` includes; option lines (`--index-url`, `-e`, `-c`) and
// bare paths or URLs are not requirements of named packages and are passed over.
[[nodiscard]] Result<FileRequirements> parse_requirements_txt(std::string_view text,
                                                              std::string_view file);

// pyproject.toml: PEP 621 `[project] dependencies` and `requires-python` (as a
// `python` requirement), and Poetry's `[tool.poetry.dependencies]` (its `python`
// key included). Optional dependencies and dev groups are not read.
[[nodiscard]] Result<FileRequirements> parse_pyproject_toml(std::string_view text,
                                                            std::string_view file);

// environment.yml: conda `dependencies:` match specs, and the PEP 508 lines of
// their `pip:` list (which may include requirements files).
[[nodiscard]] Result<FileRequirements> parse_environment_yml(std::string_view text,
                                                             std::string_view file);

}  // namespace envkit::project
