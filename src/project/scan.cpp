#include "envkit/project/scan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <set>

#include "envkit/core/text.hpp"
#include "envkit/manifest/manifest.hpp"
#include "envkit/project/project_files.hpp"
#include "envkit/specs/package_name.hpp"
#include "envkit/sys/fs.hpp"

namespace envkit::project {

namespace fs = std::filesystem;

namespace {

using FileParser = Result<FileRequirements> (*)(std::string_view, std::string_view);

bool is_yaml(std::string_view name) {
  return name.ends_with(".yml") || name.ends_with(".yaml");
}

// A file whose name alone makes it one envkit reads: an error in it is the project's.
bool is_named_project_file(std::string_view name) {
  return name == "pyproject.toml" || name == "setup.py" || name == "setup.cfg" ||
         name == "environment.yml" || name == "environment.yaml" ||
         (name.starts_with("requirements") && name.ends_with(".txt"));
}

// A file that may be one envkit reads: its content decides (any *.yml).
// envkit's own files are never input.
bool may_be_project_file(std::string_view name) {
  if (name == manifest::kFileName) return false;
  return is_named_project_file(name) || is_yaml(name);
}

// A conda environment is a few KiB; a larger YAML file is some other tool's data.
constexpr std::uintmax_t kLargestUnnamedYaml = 1 << 20;

// The parser for a file envkit reads pins from, by its name and content;
// nullptr for other files.
FileParser parser_for(std::string_view name, std::string_view text) {
  if (name == "pyproject.toml") return parse_pyproject_toml;
  if (name == "setup.py") return parse_setup_py;
  if (name == "setup.cfg") return parse_setup_cfg;
  if (name == "environment.yml" || name == "environment.yaml") return parse_environment_yml;
  if (name.starts_with("requirements") && name.ends_with(".txt")) {
    return is_conda_export(text) ? parse_conda_export : parse_requirements_txt;
  }
  if (is_yaml(name) && is_conda_environment(text)) return parse_environment_yml;
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
    if (!may_be_project_file(name) || !entry.is_regular_file(error)) continue;
    if (!is_named_project_file(name) && entry.file_size(error) > kLargestUnnamedYaml) continue;
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Reads one file of the project and, depth first, the requirements files it
// includes; `shown` is its path relative to the project, as messages name it.
class FileReader {
 public:
  explicit FileReader(fs::path directory) : directory_(std::move(directory)) {}

  // `text` is the file's, `parse` its reader; what it says goes into `out`.
  Result<void> read(const std::string& shown, std::string_view text, FileParser parse,
                    std::vector<Requirement>& out) {
    std::error_code ignored;
    // A file included twice, or a cycle of includes, is read once.
    if (!seen_.insert(fs::weakly_canonical(directory_ / shown, ignored)).second) return {};
    auto parsed = parse(text, shown);
    if (!parsed) return std::move(parsed).error();
    std::move(parsed->requirements.begin(), parsed->requirements.end(), std::back_inserter(out));
    for (const auto& warning : parsed->warnings)
      warnings_.push_back(warning.headline());
    for (const auto& include : parsed->includes) {
      // pip reads an included path relative to the file that names it.
      const std::string included =
          (fs::path(shown).parent_path() / include.path).lexically_normal().generic_string();
      if (!fs::is_regular_file(directory_ / included, ignored)) {
        return Error::input(fmt::format("included file {} not found", text::quoted(include.path)))
            .at(include.where)
            .because(fmt::format("looked for {}", (directory_ / included).string()));
      }
      auto included_text = sys::read_file(directory_ / included, kMaxProjectFileBytes);
      if (!included_text) return std::move(included_text).error().at(include.where);
      if (auto read_included = read(included, *included_text, parse_requirements_txt, out);
          !read_included) {
        return read_included;
      }
    }
    return {};
  }

  // What the files read passed over, each at file:line:column.
  [[nodiscard]] const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  fs::path directory_;
  std::set<fs::path> seen_;
  std::vector<std::string> warnings_;
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

Result<ProjectScan> scan(const fs::path& directory, ScanOptions options) {
  auto names = project_file_names(directory);
  if (!names) return std::move(names).error();
  ProjectScan result;
  // With `skip_bad_files`, an error leaves its file out and becomes a warning.
  const auto failed = [&](const std::string& name, Error error) -> Result<void> {
    if (!options.skip_bad_files) return error;
    result.warnings.push_back(fmt::format("{}; {} is skipped", error.headline(), name));
    return {};
  };
  for (const auto& name : *names) {
    auto text = sys::read_file(directory / name, kMaxProjectFileBytes);
    if (!text) {
      // A YAML file envkit cannot open may not be a conda environment at all.
      if (!is_named_project_file(name)) continue;
      if (auto skipped = failed(name, std::move(text).error().at({name})); !skipped) {
        return std::move(skipped).error();
      }
      continue;
    }
    const FileParser parse = parser_for(name, *text);
    if (!parse) continue;
    ProjectFile file{name, {}};
    FileReader reader(directory);
    if (auto read = reader.read(name, *text, parse, file.requirements); !read) {
      if (auto skipped = failed(name, std::move(read).error()); !skipped) {
        return std::move(skipped).error();
      }
      continue;
    }
    const auto& warnings = reader.warnings();
    result.warnings.insert(result.warnings.end(), warnings.begin(), warnings.end());
    result.files.push_back(std::move(file));
  }
  return result;
}

}  // namespace envkit::project
