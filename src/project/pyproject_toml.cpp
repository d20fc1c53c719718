// pyproject.toml: PEP 621 and Poetry dependencies, read with toml++.
#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <utility>

#include "envkit/core/text.hpp"
#include "envkit/project/project_files.hpp"

namespace envkit::project {

namespace {

SourceLocation location(std::string_view file, const toml::source_position& position) {
  return {std::string(file), static_cast<int>(position.line), static_cast<int>(position.column)};
}

SourceLocation location(std::string_view file, const toml::node& node) {
  return location(file, node.source().begin);
}

Error wrong_type(std::string_view file, const toml::node& node, std::string_view key,
                 std::string_view expected) {
  return Error::input(fmt::format("{}: expected {}", text::quoted(key), expected))
      .at(location(file, node));
}

Result<void> read_pep621_dependencies(const toml::node& node, std::string_view file,
                                      FileRequirements& out) {
  constexpr std::string_view key = "project.dependencies";
  const auto* dependencies = node.as_array();
  if (!dependencies) return wrong_type(file, node, key, "an array of PEP 508 strings");
  for (const auto& item : *dependencies) {
    const auto* string = item.as_string();
    if (!string) return wrong_type(file, item, key, "an array of PEP 508 strings");
    SourceLocation where = location(file, item);
    ++where.column;  // past the opening quote
    auto requirement = parse_pep508(string->get(), std::move(where));
    if (!requirement) return std::move(requirement).error();
    out.requirements.push_back(std::move(requirement).value());
  }
  return {};
}

Result<void> read_requires_python(const toml::node& node, std::string_view file,
                                  FileRequirements& out) {
  const auto* spec = node.as_string();
  if (!spec) return wrong_type(file, node, "project.requires-python", "a version specifier");
  Requirement python;
  python.name = "python";
  python.spec = spec->get();
  python.written = fmt::format("requires-python = \"{}\"", python.spec);
  python.where = location(file, node);
  out.requirements.push_back(std::move(python));
  return {};
}

Result<void> read_pep621(const toml::table& project, std::string_view file, FileRequirements& out) {
  if (const auto* node = project.get("requires-python")) {
    if (auto read = read_requires_python(*node, file, out); !read) return read;
  }
  if (const auto* node = project.get("dependencies")) {
    if (auto read = read_pep621_dependencies(*node, file, out); !read) return read;
  }
  return {};
}

constexpr std::string_view kPoetryExpected =
    "a version constraint, a table such as `{ version = \"^2.1\" }`, or an array of such tables";

// A Poetry dependency table's conditions as one PEP 508 marker: its
// `markers`, `python = "<3.9"` (Poetry syntax) and `platform = "linux"`.
Result<std::string> poetry_marker(const toml::table& table) {
  std::vector<std::string> conditions;
  const auto markers = table["markers"].value<std::string>();
  if (markers && !markers->empty()) conditions.push_back(*markers);
  if (auto python = table["python"].value<std::string>()) {
    auto pep440 = poetry_to_pep440(*python);
    if (!pep440) return std::move(pep440).error();
    for (const auto& clause : text::split(*pep440, ',')) {
      const auto trimmed = text::trim(clause);
      const auto op_end = trimmed.find_first_of("0123456789");
      if (trimmed.empty() || op_end == std::string_view::npos) continue;
      conditions.push_back(fmt::format("python_full_version {} \"{}\"", trimmed.substr(0, op_end),
                                       trimmed.substr(op_end)));
    }
  }
  if (auto platform = table["platform"].value<std::string>())
    conditions.push_back(fmt::format("sys_platform == \"{}\"", *platform));
  // `a or b` joined to more conditions keeps its own meaning.
  if (conditions.size() > 1 && markers && !markers->empty())
    conditions.front() = fmt::format("({})", conditions.front());
  return text::join(conditions, " and ");
}

// `torch = { version = "^2.1", extras = ["x"], markers = "..." }`, or a source
// without a version: `{ git = "..." }`, `{ path = "..." }`, `{ url = "..." }`.
Result<Requirement> poetry_table(const toml::table& table, Requirement requirement,
                                 std::string_view file, std::string_view key) {
  for (std::string_view source : {"git", "path", "url"}) {
    if (const auto value = table[source].value<std::string>()) {
      requirement.url = *value;
      requirement.written = fmt::format("{} = {{ {} = \"{}\" }}", requirement.name, source, *value);
      return requirement;
    }
  }
  if (const auto* version = table.get("version")) {
    const auto* text = version->as_string();
    if (!text) return wrong_type(file, *version, fmt::format("{}.version", key), "a string");
    requirement.spec = text->get();
  }
  if (const auto* extras = table["extras"].as_array()) {
    for (const auto& extra : *extras) {
      if (const auto* name = extra.as_string()) requirement.extras.push_back(name->get());
    }
  }
  auto marker = poetry_marker(table);
  if (!marker) return std::move(marker).error();
  requirement.marker = *std::move(marker);
  requirement.written = fmt::format("{} = \"{}\"", requirement.name, requirement.spec);
  if (!requirement.marker.empty()) requirement.written += fmt::format(" ; {}", requirement.marker);
  return requirement;
}

Result<void> read_poetry_dependency(const toml::key& name, const toml::node& value,
                                    std::string_view file, FileRequirements& out) {
  const std::string key = fmt::format("tool.poetry.dependencies.{}", name.str());
  Requirement requirement;
  requirement.name = std::string(name.str());
  requirement.dialect = SpecDialect::poetry;
  requirement.where = location(file, name.source().begin);
  if (const auto* spec = value.as_string()) {
    requirement.spec = spec->get();
    requirement.written = fmt::format("{} = \"{}\"", requirement.name, requirement.spec);
    out.requirements.push_back(std::move(requirement));
    return {};
  }
  // One table, or several for different markers (`[{ version = ..., markers = ... }, ...]`).
  std::vector<const toml::node*> tables{&value};
  if (const auto* array = value.as_array()) {
    tables.clear();
    for (const auto& item : *array)
      tables.push_back(&item);
  }
  for (const auto* node : tables) {
    const auto* table = node->as_table();
    if (!table) return wrong_type(file, *node, key, kPoetryExpected);
    auto read = poetry_table(*table, requirement, file, key);
    if (!read) return std::move(read).error();
    out.requirements.push_back(std::move(read).value());
  }
  return {};
}

Result<void> read_poetry(const toml::node& node, std::string_view file, FileRequirements& out) {
  const auto* dependencies = node.as_table();
  if (!dependencies) {
    return wrong_type(file, node, "tool.poetry.dependencies", "a table of packages");
  }
  for (const auto& [name, value] : *dependencies) {
    if (auto read = read_poetry_dependency(name, value, file, out); !read) return read;
  }
  return {};
}

}  // namespace

Result<FileRequirements> parse_pyproject_toml(std::string_view text, std::string_view file) {
  toml::table document;
  try {
    document = toml::parse(text, file);
  } catch (const toml::parse_error& error) {
    return Error::input(fmt::format("malformed TOML: {}", error.description()))
        .at(location(file, error.source().begin));
  }
  FileRequirements out;
  if (const auto* project = document["project"].as_table()) {
    if (auto read = read_pep621(*project, file, out); !read) return std::move(read).error();
  }
  if (const auto* poetry = document["tool"]["poetry"]["dependencies"].node()) {
    if (auto read = read_poetry(*poetry, file, out); !read) return std::move(read).error();
  }
  // toml++ keeps a table's keys sorted; the file's order decides which pin is met first.
  sort_in_file_order(out.requirements);
  return out;
}

}  // namespace envkit::project
