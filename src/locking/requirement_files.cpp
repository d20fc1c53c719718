// Reading the `python-requirements` files for lines that name a CUDA or cuDNN;
// what each line means is requirement_constraints.cpp's.
#include <fmt/format.h>

#include <set>

#include "envkit/locking/requirement_constraints.hpp"
#include "envkit/project/marker.hpp"
#include "envkit/project/project_files.hpp"
#include "envkit/sys/fs.hpp"

namespace envkit::locking {

namespace fs = std::filesystem;

namespace {

// Reads one requirement file (and what it includes) into `out`; `shown` is its path
// relative to the project, as messages name it.
class RequirementFileReader {
 public:
  RequirementFileReader(fs::path directory, std::span<const specs::Platform> platforms,
                        FileCudaRequirements& out)
      : directory_(std::move(directory)), platforms_(platforms), out_(out) {}

  void read(const std::string& shown) {
    const auto path = (directory_ / shown).lexically_normal();
    std::error_code ignored;
    // A missing file is the closure's to report (`python-requirements`: cannot read).
    if (!seen_.insert(path).second || !fs::is_regular_file(path, ignored)) return;
    auto text = sys::read_file(path, project::kMaxProjectFileBytes);
    if (!text) {
      passed_over(text.error(), shown);
      return;
    }
    auto parsed = parse(*text, shown);
    if (!parsed) {
      passed_over(parsed.error(), shown);
      return;
    }
    for (const auto& requirement : parsed->requirements)
      add(requirement);
    for (const auto& include : parsed->includes) {
      if (include.path.find("://") != std::string::npos) continue;  // a URL: uv reads it
      read((fs::path(shown).parent_path() / include.path).lexically_normal().generic_string());
    }
  }

 private:
  // As the closure hands them to uv (python_closure.cpp), by file name.
  static Result<project::FileRequirements> parse(const std::string& text,
                                                 const std::string& shown) {
    const auto filename = fs::path(shown).filename().string();
    if (filename == "pyproject.toml") return project::parse_pyproject_toml(text, shown);
    if (filename.ends_with(".yml") || filename.ends_with(".yaml"))
      return project::parse_environment_yml(text, shown);
    if (filename == "setup.py") return project::parse_setup_py(text, shown);
    if (filename == "setup.cfg") return project::parse_setup_cfg(text, shown);
    // conda's own packages; `envkit init` turns its cudatoolkit into `requires:`.
    if (project::is_conda_export(text)) return project::FileRequirements{};
    return project::parse_requirements_txt(text, shown);
  }

  // `what`: the file, or "this line", that no requirement is read from.
  void passed_over(const Error& error, std::string_view what) {
    auto warning = error.headline();
    if (!error.causes().empty()) warning += fmt::format(" ({})", error.causes().front());
    out_.warnings.push_back(fmt::format(
        "{}: envkit reads no CUDA or cuDNN requirement from {} (uv, which resolves the Python "
        "requirements, judges it)",
        warning, what));
  }

  void add(const project::Requirement& requirement) {
    // A conda package of environment.yml is conda's, not a pip line.
    if (requirement.dialect == project::SpecDialect::conda) return;
    std::vector<specs::Platform> holds_on;
    for (const auto platform : platforms_) {
      if (project::evaluate_marker(requirement.marker, project::cpython_environment(platform)) !=
          project::Truth::no)
        holds_on.push_back(platform);
    }
    if (holds_on.empty() && !platforms_.empty()) return;
    auto implied = cuda_requirements_of(requirement);
    if (!implied) {
      passed_over(implied.error(), "this line");
      return;
    }
    if (holds_on.size() == platforms_.size()) holds_on.clear();  // every platform
    for (auto& constraint : *implied) {
      constraint.platforms = holds_on;
      out_.requirements.push_back(std::move(constraint));
    }
  }

  fs::path directory_;
  std::span<const specs::Platform> platforms_;
  FileCudaRequirements& out_;
  std::set<fs::path> seen_;
};

}  // namespace

FileCudaRequirements cuda_requirements_of_files(const fs::path& directory,
                                                const std::vector<std::string>& files,
                                                std::span<const specs::Platform> platforms) {
  FileCudaRequirements out;
  RequirementFileReader reader(directory, platforms, out);
  for (const auto& file : files)
    reader.read(file);
  return out;
}

}  // namespace envkit::locking
