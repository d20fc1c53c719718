// Reading the `python-requirements` files: lines that name a CUDA or cuDNN (what each
// line means is requirement_constraints.cpp's), where each requirement is written, and
// the index options of requirements files (requirement_files.hpp).
#include "envkit/locking/requirement_files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "envkit/core/text.hpp"
#include "envkit/locking/requirement_constraints.hpp"
#include "envkit/project/marker.hpp"
#include "envkit/project/project_files.hpp"
#include "envkit/specs/package_name.hpp"
#include "envkit/sys/fs.hpp"

namespace envkit::locking {

namespace fs = std::filesystem;

namespace {

// Reads one requirement file (and what it includes), handing each requirement to
// `each`; `shown` is its path relative to the project, as messages name it.
class RequirementFileReader {
 public:
  using Each = std::function<void(const project::Requirement&)>;
  using PassedOver = std::function<void(const Error&, std::string_view)>;

  RequirementFileReader(fs::path directory, Each each, PassedOver passed_over)
      : directory_(std::move(directory)),
        each_(std::move(each)),
        passed_over_(std::move(passed_over)) {}

  void read(const std::string& shown) {
    const auto path = (directory_ / shown).lexically_normal();
    std::error_code ignored;
    // A missing file is the closure's to report (`python-requirements`: cannot read).
    if (!seen_.insert(path).second || !fs::is_regular_file(path, ignored)) return;
    auto text = sys::read_file(path, project::kMaxProjectFileBytes);
    if (!text) {
      passed_over_(text.error(), shown);
      return;
    }
    auto parsed = parse(*text, shown);
    if (!parsed) {
      passed_over_(parsed.error(), shown);
      return;
    }
    for (const auto& requirement : parsed->requirements)
      each_(requirement);
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

  fs::path directory_;
  Each each_;
  PassedOver passed_over_;
  std::set<fs::path> seen_;
};

// What the CUDA reading passes over: `what` is the file, or "this line", that no
// requirement is read from.
std::string passed_over_warning(const Error& error, std::string_view what) {
  auto warning = error.headline();
  if (!error.causes().empty()) warning += fmt::format(" ({})", error.causes().front());
  return fmt::format(
      "{}: envkit reads no CUDA or cuDNN requirement from {} (uv, which resolves the Python "
      "requirements, judges it)",
      warning, what);
}

// The CUDA and cuDNN one requirement implies, on the platforms its marker holds on.
void add_cuda_requirements(const project::Requirement& requirement,
                           std::span<const specs::Platform> platforms, FileCudaRequirements& out) {
  // A conda package of environment.yml is conda's, not a pip line.
  if (requirement.dialect == project::SpecDialect::conda) return;
  std::vector<specs::Platform> holds_on;
  for (const auto platform : platforms) {
    if (project::evaluate_marker(requirement.marker, project::cpython_environment(platform)) !=
        project::Truth::no)
      holds_on.push_back(platform);
  }
  if (holds_on.empty() && !platforms.empty()) return;
  auto implied = cuda_requirements_of(requirement);
  if (!implied) {
    out.warnings.push_back(passed_over_warning(implied.error(), "this line"));
    return;
  }
  if (holds_on.size() == platforms.size()) holds_on.clear();  // every platform
  for (auto& constraint : *implied) {
    constraint.platforms = holds_on;
    out.requirements.push_back(std::move(constraint));
  }
}

// The requirement as the line writes it, without its marker.
std::string written_without_marker(const project::Requirement& requirement) {
  std::string_view written = requirement.written;
  if (!requirement.marker.empty()) {
    if (const auto semicolon = written.rfind(';'); semicolon != std::string_view::npos)
      written = written.substr(0, semicolon);
  }
  return std::string(text::trim(written));
}

// ---- index options of requirements files ----

// pip's comments: `#` at the start of a line or after whitespace.
std::string_view before_comment(std::string_view line) {
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t'))
      return line.substr(0, i);
  }
  return line;
}

// A requirements file's physical lines joined where one ends in `\`, as pip reads them.
struct PipLine {
  std::size_t first = 0;  // index of its first physical line
  std::size_t count = 1;  // physical lines it spans
  std::string text;       // joined, without the `\`s
};

struct PipFile {
  std::vector<std::string> physical;  // without line ends
  std::vector<PipLine> lines;
  bool crlf = false;
};

PipFile split_pip_file(std::string_view text) {
  PipFile file;
  for (auto physical : text::split(text, '\n')) {
    if (physical.ends_with('\r')) {
      physical.remove_suffix(1);
      file.crlf = true;
    }
    file.physical.emplace_back(physical);
  }
  // A final newline is not a line of its own.
  if (!file.physical.empty() && file.physical.back().empty()) file.physical.pop_back();
  bool continued = false;
  for (std::size_t i = 0; i < file.physical.size(); ++i) {
    std::string_view physical = file.physical[i];
    if (!continued) {
      file.lines.push_back({.first = i, .count = 0, .text = {}});
    }
    continued = physical.ends_with('\\');
    if (continued) physical.remove_suffix(1);
    file.lines.back().text += physical;
    ++file.lines.back().count;
  }
  return file;
}

// One option of an option line: `--find-links URL`, `-fURL`, `--index-url=URL`.
struct PipOption {
  std::string name;   // the long name: "--find-links", "--requirement", "--constraint", ...
  std::string value;  // empty for a flag
  std::size_t first_token = 0;
  std::size_t tokens = 1;  // 1: `--opt=value` or `-fvalue`, 2: `--opt value`
};

// The long name of an option that takes a value, for its spellings; "" for others.
std::string long_name(std::string_view option) {
  static const std::map<std::string_view, std::string_view> names = {
      {"-f", "--find-links"},
      {"--find-links", "--find-links"},
      {"-i", "--index-url"},
      {"--index-url", "--index-url"},
      {"--extra-index-url", "--extra-index-url"},
      {"-r", "--requirement"},
      {"--requirement", "--requirement"},
      {"-c", "--constraint"},
      {"--constraint", "--constraint"}};
  const auto it = names.find(option);
  return it == names.end() ? std::string() : std::string(it->second);
}

std::vector<std::string> tokens_of(std::string_view line) {
  std::vector<std::string> tokens;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t'))
      ++i;
    const auto start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t')
      ++i;
    if (i > start) tokens.emplace_back(line.substr(start, i - start));
  }
  return tokens;
}

// The options of a line that starts with `-` (an option line); requirement lines have none
// that matter here (`--hash` belongs to the requirement).
std::vector<PipOption> options_of(const std::vector<std::string>& tokens) {
  std::vector<PipOption> options;
  if (tokens.empty() || !tokens.front().starts_with('-')) return options;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::string& token = tokens[i];
    if (!token.starts_with('-')) continue;
    if (const auto equals = token.find('=');
        token.starts_with("--") && equals != std::string::npos) {
      auto name = long_name(std::string_view(token).substr(0, equals));
      if (!name.empty()) options.push_back({std::move(name), token.substr(equals + 1), i, 1});
      continue;
    }
    if (auto name = long_name(token); !name.empty()) {
      if (i + 1 < tokens.size()) {
        options.push_back({std::move(name), tokens[i + 1], i, 2});
        ++i;
      }
      continue;
    }
    // `-fURL`, `-rfile`: a short option with its value attached.
    if (token.size() > 2 && token[1] != '-') {
      if (auto name = long_name(std::string_view(token).substr(0, 2)); !name.empty())
        options.push_back({std::move(name), token.substr(2), i, 1});
    }
  }
  return options;
}

bool is_url(std::string_view value) {
  return value.find("://") != std::string_view::npos;
}

bool is_http_url(std::string_view value) {
  return text::starts_with_icase(value, "http://") || text::starts_with_icase(value, "https://");
}

bool is_index_option(std::string_view name) {
  return name == "--find-links" || name == "--index-url" || name == "--extra-index-url";
}

std::string shown_path(const fs::path& directory, const fs::path& file) {
  const auto relative = file.lexically_relative(directory.lexically_normal());
  if (relative.empty() || *relative.begin() == "..") return file.string();
  return relative.generic_string();
}

// An included file (`-r`, `-c`) or local find-links folder: relative to the file naming it.
fs::path relative_to(const fs::path& file, std::string_view value) {
  const fs::path path(value);
  return (path.is_absolute() ? path : file.parent_path() / path).lexically_normal();
}

// Walks requirements files and what their `-r`/`-c` lines include, each file once.
class IndexLineReader {
 public:
  IndexLineReader(fs::path directory, std::vector<IndexLine>& out)
      : directory_(std::move(directory)), out_(out) {}

  void read(const fs::path& file) {
    const auto path = file.lexically_normal();
    std::error_code ignored;
    if (!seen_.insert(path).second || !fs::is_regular_file(path, ignored)) return;
    auto text = sys::read_file(path, project::kMaxProjectFileBytes);
    if (!text) return;  // uv reports it
    const auto parsed = split_pip_file(*text);
    for (const auto& line : parsed.lines) {
      for (const auto& option : options_of(tokens_of(before_comment(line.text)))) {
        if (is_index_option(option.name) && is_http_url(option.value)) {
          out_.push_back({.file = path,
                          .shown = shown_path(directory_, path),
                          .line = static_cast<int>(line.first + 1),
                          .option = option.name,
                          .url = option.value});
        } else if ((option.name == "--requirement" || option.name == "--constraint") &&
                   !is_url(option.value)) {
          read(relative_to(path, option.value));
        }
      }
    }
  }

 private:
  fs::path directory_;
  std::vector<IndexLine>& out_;
  std::set<fs::path> seen_;
};

// A fresh folder under `parent` for copies, one name per file.
std::string copy_name(std::size_t number, const fs::path& file) {
  return fmt::format("{}-{}", number, file.filename().string());
}

// Writes copies of requirements files without some index options (requirement_files_without).
class RequirementFileCopier {
 public:
  RequirementFileCopier(const std::vector<IndexLine>& dropped, fs::path scratch)
      : dropped_(dropped), scratch_(std::move(scratch)) {}

  // The file uv is to read for `file`: its copy, or itself.
  Result<fs::path> path_for(const fs::path& given) {
    const auto file = given.lexically_normal();
    if (const auto it = done_.find(file); it != done_.end()) return it->second;
    // An include cycle: the file is being looked at already; pip would loop, uv says so.
    if (!in_progress_.insert(file).second) return file;
    auto copy = copy_of(file);
    in_progress_.erase(file);
    if (!copy) return copy;
    done_[file] = *copy;
    return copy;
  }

 private:
  bool dropped(const fs::path& file, std::size_t first_line, const PipOption& option) const {
    return std::any_of(dropped_.begin(), dropped_.end(), [&](const IndexLine& line) {
      return line.file.lexically_normal() == file &&
             static_cast<std::size_t>(line.line) == first_line + 1 && line.option == option.name &&
             line.url == option.value;
    });
  }

  Result<fs::path> copy_of(const fs::path& file) {
    std::error_code ignored;
    if (!fs::is_regular_file(file, ignored)) return file;  // uv reports it
    auto text = sys::read_file(file, project::kMaxProjectFileBytes);
    if (!text) return file;
    auto parsed = split_pip_file(*text);
    // Each line's new text, where it changes; a copy is needed when any does.
    std::map<std::size_t, std::string> rewritten;
    bool changed = false;
    for (std::size_t n = 0; n < parsed.lines.size(); ++n) {
      const auto& line = parsed.lines[n];
      const std::string_view code = before_comment(line.text);
      auto tokens = tokens_of(code);
      const auto options = options_of(tokens);
      if (options.empty()) continue;
      std::vector<bool> removed(tokens.size(), false);
      bool line_changed = false;
      for (const auto& option : options) {
        std::string value = option.value;
        if (dropped(file, line.first, option)) {
          for (std::size_t t = 0; t < option.tokens; ++t)
            removed[option.first_token + t] = true;
          line_changed = changed = true;
          continue;
        }
        const bool includes = option.name == "--requirement" || option.name == "--constraint";
        if (includes && !is_url(value)) {
          const auto included = relative_to(file, value);
          auto target = path_for(included);
          if (!target) return target;
          if (*target != included) changed = true;
          value = target->string();
        } else if (option.name == "--find-links" && !is_url(value)) {
          value = relative_to(file, value).string();
        } else {
          continue;
        }
        if (value == option.value) continue;
        // Absolute, for a copy that lives elsewhere: `--opt value` or `--opt=value`.
        const auto& head = tokens[option.first_token];
        tokens[option.first_token + option.tokens - 1] =
            option.tokens == 2
                ? value
                : (head.starts_with("--") ? option.name + "=" + value : head.substr(0, 2) + value);
        line_changed = true;
      }
      if (!line_changed) continue;
      std::vector<std::string> kept;
      for (std::size_t t = 0; t < tokens.size(); ++t) {
        if (!removed[t]) kept.push_back(tokens[t]);
      }
      auto replaced = text::join(kept, " ");
      if (code.size() < line.text.size()) {
        const auto comment = std::string_view(line.text).substr(code.size());
        replaced += (replaced.empty() ? "" : " ") + std::string(comment);
      }
      rewritten[n] = std::move(replaced);
    }
    if (!changed) return file;
    std::string out;
    const char* end = parsed.crlf ? "\r\n" : "\n";
    for (std::size_t n = 0; n < parsed.lines.size(); ++n) {
      const auto& line = parsed.lines[n];
      const auto it = rewritten.find(n);
      for (std::size_t p = 0; p < line.count; ++p) {
        // A rewritten line takes its first physical line; the others stay as blank lines,
        // so that every later line keeps its number in uv's messages.
        if (it == rewritten.end()) {
          out += parsed.physical[line.first + p];
        } else if (p == 0) {
          out += it->second;
        }
        out += end;
      }
    }
    const auto copy = scratch_ / copy_name(++copies_, file);
    if (auto written = sys::write_file_atomic(copy, out); !written) return written.error();
    return copy;
  }

  const std::vector<IndexLine>& dropped_;
  fs::path scratch_;
  std::map<fs::path, fs::path> done_;
  std::set<fs::path> in_progress_;
  std::size_t copies_ = 0;
};

}  // namespace

FileCudaRequirements cuda_requirements_of_files(const fs::path& directory,
                                                const std::vector<std::string>& files,
                                                std::span<const specs::Platform> platforms) {
  FileCudaRequirements out;
  RequirementFileReader reader(
      directory,
      [&](const project::Requirement& requirement) {
        add_cuda_requirements(requirement, platforms, out);
      },
      [&](const Error& error, std::string_view what) {
        out.warnings.push_back(passed_over_warning(error, what));
      });
  for (const auto& file : files)
    reader.read(file);
  return out;
}

std::vector<LocatedRequirement> located_requirements(const fs::path& directory,
                                                     const std::vector<std::string>& files) {
  std::vector<LocatedRequirement> out;
  RequirementFileReader reader(
      directory,
      [&](const project::Requirement& requirement) {
        if (requirement.dialect == project::SpecDialect::conda) return;
        const auto& where = requirement.where;
        out.push_back(
            {.name = specs::canonical_package_name(requirement.name),
             .location = where.line > 0 ? fmt::format("{}:{}", where.file, where.line) : where.file,
             .text = written_without_marker(requirement)});
      },
      [](const Error&, std::string_view) {});
  for (const auto& file : files)
    reader.read(file);
  return out;
}

std::string IndexLine::location() const {
  return fmt::format("{}:{}", shown, line);
}

std::vector<IndexLine> index_lines_of_files(const fs::path& directory,
                                            const std::vector<fs::path>& files) {
  std::vector<IndexLine> out;
  IndexLineReader reader(directory, out);
  for (const auto& file : files)
    reader.read(file);
  return out;
}

Result<std::vector<fs::path>> requirement_files_without(const std::vector<fs::path>& files,
                                                        const std::vector<IndexLine>& dropped,
                                                        const fs::path& scratch) {
  RequirementFileCopier copier(dropped, scratch);
  std::vector<fs::path> out;
  for (const auto& file : files) {
    auto path = copier.path_for(file);
    if (!path) return std::move(path).error();
    out.push_back(*std::move(path));
  }
  return out;
}

}  // namespace envkit::locking
