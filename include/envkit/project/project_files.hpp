#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/error.hpp"
#include "envkit/core/result.hpp"
#include "envkit/project/requirement.hpp"

namespace envkit::project {

// The most envkit reads of one project file (requirements.txt, pyproject.toml, setup.py, ...):
// a real one is a few KB; each parsed requirement costs a few hundred bytes, so 2 MiB keeps
// the largest well under 256 MiB of memory.
inline constexpr std::size_t kMaxProjectFileBytes = std::size_t{2} << 20;

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
  // What could not be read and is passed over, at file:line:column: a setup.py
  // whose `install_requires` is not a literal list.
  std::vector<Error> warnings;
};

// Orders requirements as the file writes them (line, then column), stably.
void sort_in_file_order(std::vector<Requirement>& requirements);

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

// Whether a YAML file is a conda environment: a mapping whose `dependencies:`
// is a list (`name:` and `channels:` optional). False for text that is not YAML.
[[nodiscard]] bool is_conda_environment(std::string_view text);

// Whether a requirements file is `conda list --export` (or `--explicit`) output:
// conda's `# This file may be used to create an environment using:` or
// `# platform:` header, or every line `name=version=build`.
[[nodiscard]] bool is_conda_export(std::string_view text);

// `conda list --export` output: conda match specs, one a line
// (`cudatoolkit=10.1.243=h6bb024c_0`); `--explicit` package URLs are read from
// their file names (`.../cudatoolkit-10.1.243-h6bb024c_0.tar.bz2`).
[[nodiscard]] Result<FileRequirements> parse_conda_export(std::string_view text,
                                                          std::string_view file);

// setup.py, read without running it: the literal list (or tuple) of string
// literals given to `install_requires` (as a keyword, or a variable assigned
// such a list) and the literal string of `python_requires`. Any other value
// (a function call, a comprehension) is a warning at its place, not an error.
[[nodiscard]] Result<FileRequirements> parse_setup_py(std::string_view text, std::string_view file);

// setup.cfg: `[options]` `install_requires` (one requirement a line, comments
// allowed; `file: a.txt` includes requirements files) and `python_requires`.
[[nodiscard]] Result<FileRequirements> parse_setup_cfg(std::string_view text,
                                                       std::string_view file);

}  // namespace envkit::project
