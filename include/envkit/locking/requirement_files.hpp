#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"

// What the lock reads of a project's requirement files besides the CUDA they name
// (requirement_constraints.hpp): where each requirement is written, so that a Python
// ruled out by the closure names its line (docs/python.md, "Which Python"), and the
// index options of requirements files (`--find-links`, `--extra-index-url`, `-i`), so
// that one this machine cannot reach is left out of what uv is given
// (docs/python.md, "Indexes in requirement files").
namespace envkit::locking {

// One requirement of a project's requirement files, where it is written.
struct LocatedRequirement {
  std::string name;      // PEP 503 normalized: "torchdata"
  std::string location;  // "requirements.txt:3"
  std::string text;      // as written, without its marker: "torchdata==0.9.0"
};

// Every requirement of `files` (envkit.yaml `python-requirements`, relative to
// `directory`) and of the files their `-r` lines include, in file order; what cannot be
// read is passed over (the closure reports it).
[[nodiscard]] std::vector<LocatedRequirement> located_requirements(
    const std::filesystem::path& directory, const std::vector<std::string>& files);

// An index option of a requirements file: `--find-links URL` (`-f`), `--index-url URL`
// (`-i`), `--extra-index-url URL`, in any of pip's spellings (`--find-links=URL`, `-fURL`).
struct IndexLine {
  std::filesystem::path file;  // absolute, as uv reads it
  std::string shown;           // as the user names it: relative to the project when inside it
  int line = 0;                // its first physical line, 1-based
  std::string option;          // the long name: "--find-links", "--index-url", "--extra-index-url"
  std::string url;             // an http(s) URL

  [[nodiscard]] std::string location() const;  // "requirements.txt:1"
  [[nodiscard]] bool operator==(const IndexLine&) const = default;
};

// The http(s) index options of requirements files `files` (absolute, as uv is given
// them) and of the files their `-r` and `-c` lines include; `directory` (the project)
// is where `shown` is relative to. Local find-links folders are not listed: they need no
// network.
[[nodiscard]] std::vector<IndexLine> index_lines_of_files(
    const std::filesystem::path& directory, const std::vector<std::filesystem::path>& files);

// For each of `files` (requirements files, absolute), the file uv is to read without the
// option lines `dropped`: a copy written under `scratch` where the file, or one it
// includes with `-r`/`-c`, holds one of them, else the file itself. A copy keeps every
// other line as written and its line numbers; its relative `-r`, `-c` and find-links
// paths are made absolute (they are relative to the file that names them), and an
// included file that needs a copy is named by its copy.
[[nodiscard]] Result<std::vector<std::filesystem::path>> requirement_files_without(
    const std::vector<std::filesystem::path>& files, const std::vector<IndexLine>& dropped,
    const std::filesystem::path& scratch);

}  // namespace envkit::locking
