// `conda list --export` (`conda list -e`) and `conda list --explicit` output,
// often committed as requirements.txt although pip cannot read it.
#include <fmt/format.h>

#include <algorithm>

#include "envkit/core/text.hpp"
#include "envkit/project/project_files.hpp"

namespace envkit::project {

namespace {

// `# platform: linux-64` and the line above it, as conda writes them.
bool is_conda_header(std::string_view line) {
  return line.starts_with("# This file may be used to create an environment using:") ||
         line.starts_with("# platform:") || line == "@EXPLICIT";
}

// `python=3.7.6=h0371630_2`: three parts, no spaces, nothing empty.
bool is_name_version_build(std::string_view line) {
  if (line.find_first_of(" \t") != std::string_view::npos) return false;
  const auto parts = text::split(line, '=');
  return parts.size() == 3 &&
         std::none_of(parts.begin(), parts.end(), [](auto part) { return part.empty(); });
}

bool is_package_url(std::string_view line) {
  return line.find("://") != std::string_view::npos || line.ends_with(".tar.bz2") ||
         line.ends_with(".conda");
}

// `https://.../linux-64/cudatoolkit-10.1.243-h6bb024c_0.tar.bz2#<md5>`: conda's
// file names are `name-version-build`, and only the name may hold a `-`.
Result<Requirement> explicit_package(std::string_view line, SourceLocation where) {
  std::string_view file = line.substr(0, line.find('#'));
  file = file.substr(file.rfind('/') + 1);
  for (std::string_view extension : {".tar.bz2", ".conda"}) {
    if (file.ends_with(extension)) file.remove_suffix(extension.size());
  }
  const auto build = file.rfind('-');
  const auto version = build == std::string_view::npos ? build : file.rfind('-', build - 1);
  if (version == std::string_view::npos || version == 0) {
    return Error::input(fmt::format("expected a conda package file `name-version-build` in {}",
                                    text::quoted(line)))
        .at(std::move(where));
  }
  Requirement requirement;
  requirement.name = std::string(file.substr(0, version));
  requirement.spec =
      fmt::format("={}={}", file.substr(version + 1, build - version - 1), file.substr(build + 1));
  requirement.dialect = SpecDialect::conda;
  requirement.written = std::string(line);
  requirement.where = std::move(where);
  return requirement;
}

}  // namespace

bool is_conda_export(std::string_view text) {
  bool any_package = false;
  for (auto line : text::split(text, '\n')) {
    line = text::trim(line);
    if (is_conda_header(line)) return true;
    if (line.empty() || line.starts_with('#')) continue;
    if (!is_name_version_build(line)) return false;
    any_package = true;
  }
  return any_package;
}

Result<FileRequirements> parse_conda_export(std::string_view text, std::string_view file) {
  FileRequirements out;
  int number = 0;
  for (auto line : text::split(text, '\n')) {
    ++number;
    const auto start = line.find_first_not_of(" \t");
    line = text::trim(line);
    if (line.empty() || line.starts_with('#') || line == "@EXPLICIT") continue;
    SourceLocation where{std::string(file), number, static_cast<int>(start) + 1};
    auto requirement = is_package_url(line) ? explicit_package(line, std::move(where))
                                            : parse_conda_spec(line, std::move(where));
    if (!requirement) return std::move(requirement).error();
    out.requirements.push_back(std::move(requirement).value());
  }
  return out;
}

}  // namespace envkit::project
