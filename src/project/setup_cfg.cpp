// setup.cfg: setuptools' declarative `[options]`, read as configparser does.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "envkit/core/text.hpp"
#include "envkit/project/project_files.hpp"
#include "pip_lines.hpp"

namespace envkit::project {

namespace {

// configparser's keys ignore case; setuptools also accepts `install-requires`.
std::string key_name(std::string_view key) {
  std::string name;
  for (char c : text::trim(key))
    name += c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

// One line of a value, and where its text starts.
struct CfgValueLine {
  std::string_view text;
  SourceLocation where;
};

// `install_requires = file: requirements.txt, more.txt`: requirements files to read.
void add_cfg_files(std::string_view list, const SourceLocation& where, FileRequirements& out) {
  for (auto path : text::split(list, ',')) {
    path = text::trim(path);
    if (!path.empty()) out.includes.push_back({std::string(path), where});
  }
}

Result<void> read_cfg_install_requires(const std::vector<CfgValueLine>& lines,
                                       FileRequirements& out) {
  for (const auto& line : lines) {
    if (line.text.starts_with("file:")) {
      add_cfg_files(line.text.substr(5), line.where, out);
      continue;
    }
    if (auto added = add_pip_line(line.text, line.where, out); !added) return added;
  }
  return {};
}

void read_cfg_python_requires(const std::vector<CfgValueLine>& lines, FileRequirements& out) {
  if (lines.empty()) return;
  Requirement python;
  python.name = "python";
  python.spec = std::string(lines.front().text);
  python.written = fmt::format("python_requires = {}", python.spec);
  python.where = lines.front().where;
  out.requirements.push_back(std::move(python));
}

}  // namespace

Result<FileRequirements> parse_setup_cfg(std::string_view text, std::string_view file) {
  // The `[options]` keys envkit reads, each with the lines of its value: the
  // rest of the key's line, then its indented continuation lines.
  std::vector<CfgValueLine> install_requires;
  std::vector<CfgValueLine> python_requires;
  std::vector<CfgValueLine>* value = nullptr;
  std::string section;
  int number = 0;
  for (auto line : text::split(text, '\n')) {
    ++number;
    if (line.ends_with('\r')) line.remove_suffix(1);
    const auto start = line.find_first_not_of(" \t");
    // Blank lines and comment lines may stand inside a value without ending it.
    if (start == std::string_view::npos || line[start] == '#' || line[start] == ';') continue;
    if (start == 0) {
      value = nullptr;
      if (line.starts_with('[')) {
        section = key_name(line.substr(1, line.find(']') - 1));
        continue;
      }
      const auto separator = line.find_first_of("=:");
      if (separator == std::string_view::npos || section != "options") continue;
      const auto key = key_name(line.substr(0, separator));
      if (key == "install_requires") value = &install_requires;
      if (key == "python_requires") value = &python_requires;
      if (!value) continue;
      const auto rest = line.substr(separator + 1);
      const auto indent = rest.find_first_not_of(" \t");
      if (indent == std::string_view::npos) continue;
      value->push_back({text::trim(rest),
                        {std::string(file), number, static_cast<int>(separator + 2 + indent)}});
      continue;
    }
    if (value) {
      value->push_back(
          {text::trim(line), {std::string(file), number, static_cast<int>(start + 1)}});
    }
  }
  FileRequirements out;
  read_cfg_python_requires(python_requires, out);
  if (auto read = read_cfg_install_requires(install_requires, out); !read) {
    return std::move(read).error();
  }
  return out;
}

}  // namespace envkit::project
