#include "envkit/project/scan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <set>

#include "envkit/core/text.hpp"
#include "envkit/project/project_files.hpp"
#include "envkit/specs/package_name.hpp"
#include "envkit/sys/fs.hpp"

namespace envkit::project {

namespace fs = std::filesystem;

namespace {

using Parser = Result<FileRequirements> (*)(std::string_view, std::string_view);

// The parser for a file envkit reads pins from, by its name; nullptr for other files.
Parser parser_for(std::string_view name) {
  if (name == "pyproject.toml") return parse_pyproject_toml;
  if (name == "environment.yml" || name == "environment.yaml") return parse_environment_yml;
  if (name.starts_with("requirements") && name.ends_with(".txt")) return parse_requirements_txt;
  return nullptr;
}

Result<std::vector<std::string>> project_file_names(const fs::path& directory) {
  std::error_code error;
  fs::directory_iterator entries(directory, error);
  if (error) {
    return Error::input(fmt::format("cannot read the project directory {}", directory.string()))
        .because(error.message());
  }
  std::vector<std::string> names;
  for (const auto& entry : entries) {
    const std::string name = entry.path().filename().string();
    if (parser_for(name) && entry.is_regular_file(error)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Reads one file of the project and, depth first, the requirements files it
// includes; `shown` is its path relative to the project, as messages name it.
class FileReader {
 public:
  explicit FileReader(fs::path directory) : directory_(std::move(directory)) {}

  Result<void> read(const std::string& shown, Parser parse, std::vector<Requirement>& out) {
    std::error_code ignored;
    // A file included twice, or a cycle of includes, is read once.
    if (!seen_.insert(fs::weakly_canonical(directory_ / shown, ignored)).second) return {};
    auto text = sys::read_file(directory_ / shown);
    if (!text) return std::move(text).error();
    auto parsed = parse(*text, shown);
    if (!parsed) return std::move(parsed).error();
    std::move(parsed->requirements.begin(), parsed->requirements.end(), std::back_inserter(out));
    for (const auto& include : parsed->includes) {
      // pip reads an included path relative to the file that names it.
      const std::string included =
          (fs::path(shown).parent_path() / include.path).lexically_normal().generic_string();
      if (!fs::is_regular_file(directory_ / included, ignored)) {
        return Error::input(fmt::format("included file {} not found", text::quoted(include.path)))
            .at(include.where)
            .because(fmt::format("looked for {}", (directory_ / included).string()));
      }
      if (auto read_included = read(included, parse_requirements_txt, out); !read_included) {
        return read_included;
      }
    }
    return {};
  }

 private:
  fs::path directory_;
  std::set<fs::path> seen_;
};

// A requirement that pip (not envkit, not conda) installs for the project.
bool is_other_python_requirement(const Requirement& requirement) {
  if (requirement.dialect == SpecDialect::conda) return false;
  const auto package = requirement.known_package();
  return !package || (*package != "python" && !specs::is_framework(*package));
}

}  // namespace

std::vector<std::string> ProjectScan::python_requirements() const {
  std::vector<std::string> paths;
  for (const auto& file : files) {
    if (std::any_of(file.requirements.begin(), file.requirements.end(),
                    is_other_python_requirement)) {
      paths.push_back(file.path);
    }
  }
  return paths;
}

Result<ProjectScan> scan(const fs::path& directory) {
  auto names = project_file_names(directory);
  if (!names) return std::move(names).error();
  ProjectScan result;
  for (const auto& name : *names) {
    ProjectFile file{name, {}};
    if (auto read = FileReader(directory).read(name, parser_for(name), file.requirements); !read) {
      return std::move(read).error();
    }
    result.files.push_back(std::move(file));
  }
  return result;
}

}  // namespace envkit::project
