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

  // The files that ask for Python packages other than the framework and Python
  // itself, for the manifest's `python-requirements:`. A conda environment's
  // own packages do not count; its `pip:` list does.
  [[nodiscard]] std::vector<std::string> python_requirements() const;
};

// Reads `requirements*.txt`, `pyproject.toml`, `environment.yml` and
// `environment.yaml` at the top of `directory`, following `-r` includes.
// Malformed files are input errors naming file:line:column.
[[nodiscard]] Result<ProjectScan> scan(const std::filesystem::path& directory);

}  // namespace envkit::project
