#include <fmt/format.h>

#include <algorithm>

#include "envkit/core/text.hpp"
#include "pip_lines.hpp"

namespace envkit::project {

namespace {

// pip's comments: `#` at the start of a line or after whitespace (`pkg#frag` in URLs is not one).
std::string_view without_comment(std::string_view line) {
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '#' && (i == 0 || is_blank(line[i - 1]))) return line.substr(0, i);
  }
  return line;
}

// `-r file`, `-rfile`, `--requirement file`, `--requirement=file`: the file, or "".
std::string_view included_file(std::string_view line) {
  for (std::string_view option : {"--requirement", "-r"}) {
    if (!line.starts_with(option)) continue;
    auto rest = line.substr(option.size());
    if (rest.starts_with('=')) rest.remove_prefix(1);
    return text::trim(rest);
  }
  return {};
}

// `./pkg`, `/wheels/x.whl`, `git+https://host/repo.git@v1`: installable, but not
// a named package with a version. `torch @ https://...` names its package first.
bool is_bare_path_or_url(std::string_view line) {
  if (line.starts_with('.') || line.starts_with('/') || line.starts_with('~')) return true;
  if (const auto scheme = line.find("://"); scheme != std::string_view::npos) {
    return line.substr(0, scheme).find('@') == std::string_view::npos;
  }
  return line.ends_with(".whl") || line.ends_with(".tar.gz") || line.ends_with(".zip");
}

// `torch==2.1 --hash=sha256:...`: per-requirement options end the requirement.
std::string_view without_options(std::string_view line) {
  for (std::size_t i = 1; i + 1 < line.size(); ++i) {
    if (is_blank(line[i - 1]) && line[i] == '-' && line[i + 1] == '-') return line.substr(0, i);
  }
  return line;
}

struct LogicalLine {
  std::string text;
  int number = 0;  // of its first physical line
};

// Physical lines joined where one ends in `\`, as pip reads them.
std::vector<LogicalLine> logical_lines(std::string_view text) {
  std::vector<LogicalLine> lines;
  bool continued = false;
  int number = 0;
  for (auto physical : text::split(text, '\n')) {
    ++number;
    if (physical.ends_with('\r')) physical.remove_suffix(1);
    if (!continued) lines.push_back({"", number});
    continued = physical.ends_with('\\');
    if (continued) physical.remove_suffix(1);
    lines.back().text += physical;
  }
  return lines;
}

}  // namespace

Result<void> add_pip_line(std::string_view line, SourceLocation where, FileRequirements& out) {
  line = without_comment(line);
  const auto indent = line.find_first_not_of(" \t");
  if (indent == std::string_view::npos) return {};
  line = text::trim(line);
  where.column = std::max(where.column, 1) + static_cast<int>(indent);
  if (const auto file = included_file(line); !file.empty()) {
    out.includes.push_back({std::string(file), std::move(where)});
    return {};
  }
  if (line.starts_with('-') || is_bare_path_or_url(line)) return {};
  auto requirement = parse_pep508(text::trim(without_options(line)), std::move(where));
  if (!requirement) return std::move(requirement).error();
  out.requirements.push_back(std::move(requirement).value());
  return {};
}

void sort_in_file_order(std::vector<Requirement>& requirements) {
  std::stable_sort(
      requirements.begin(), requirements.end(), [](const Requirement& a, const Requirement& b) {
        return std::pair(a.where.line, a.where.column) < std::pair(b.where.line, b.where.column);
      });
}

Result<FileRequirements> parse_requirements_txt(std::string_view text, std::string_view file) {
  FileRequirements out;
  for (const auto& line : logical_lines(text)) {
    auto added = add_pip_line(line.text, {std::string(file), line.number, 1}, out);
    if (!added) return std::move(added).error();
  }
  return out;
}

}  // namespace envkit::project
