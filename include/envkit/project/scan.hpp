#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/project/requirement.hpp"

namespace envkit::project {

// A file at the top of the project that states requirements, with what it says
// and what the files it includes say.
struct ProjectFile {
  std::string path;  // relative to the project directory, e.g. `requirements.txt`
  std::vector<Requirement> requirements;  // locations name the file each was written in
};

// What a project directory states about its Python packages.
struct ProjectScan {
  std::vector<ProjectFile> files;  // sorted by path
  // What was passed over, each naming file:line:column: a file skipped for an
  // error (ScanOptions::skip_bad_files), a setup.py value that is not a literal.
  std::vector<std::string> warnings;

  // The files that ask for Python packages other than the framework and Python
  // itself, for the manifest's `python-requirements:`. A conda environment's
  // own packages do not count; its `pip:` list does.
  [[nodiscard]] std::vector<std::string> python_requirements() const;
};

struct ScanOptions {
  // A file that cannot be read or is malformed is a warning and left out,
  // instead of an error (for `envkit init --framework`, which needs no pin).
  bool skip_bad_files = false;
};

// Reads, at the top of `directory`: `requirements*.txt` (pip's format, or a
// `conda list --export` by its content), `pyproject.toml`, `setup.py`,
// `setup.cfg`, `environment.yml`/`environment.yaml`, and any other `*.yml` or
// `*.yaml` that is a conda environment (never envkit.yaml); `-r` includes are
// followed. Malformed files are input errors naming file:line:column.
[[nodiscard]] Result<ProjectScan> scan(const std::filesystem::path& directory,
                                       ScanOptions options = {});

}  // namespace envkit::project
