// environment.yml: conda dependencies and their `pip:` list, read with envkit's YAML tree.
#include <fmt/format.h>

#include "envkit/core/text.hpp"
#include "envkit/project/project_files.hpp"
#include "pip_lines.hpp"
#include "yaml_source.hpp"

namespace envkit::project {

namespace {

SourceLocation location(std::string_view file, const yaml::Mark& mark) {
  return {std::string(file), mark.line, mark.column};
}

Error wrong_value(std::string_view file, const yaml::Node& node, std::string_view key,
                  std::string_view expected) {
  return Error::input(fmt::format("{}: expected {}", text::quoted(key), expected))
      .at(location(file, node.mark()));
}

Result<void> read_pip_list(const yaml::Node& list, std::string_view file, FileRequirements& out) {
  if (!list.is_sequence()) return wrong_value(file, list, "dependencies.pip", "a list of strings");
  for (const auto& line : list) {
    if (!line.is_scalar()) {
      return wrong_value(file, line, "dependencies.pip", "a list of strings");
    }
    if (auto added = add_pip_line(line.text(), location(file, line.mark()), out); !added) {
      return added;
    }
  }
  return {};
}

Result<void> read_dependency(const yaml::Node& item, std::string_view file, FileRequirements& out) {
  if (item.is_scalar()) {
    auto requirement = parse_conda_spec(item.text(), location(file, item.mark()));
    if (!requirement) return std::move(requirement).error();
    out.requirements.push_back(std::move(requirement).value());
    return {};
  }
  if (const yaml::Node* pip = item.find("pip")) return read_pip_list(*pip, file, out);
  return wrong_value(file, item, "dependencies",
                     "conda packages such as `pytorch=2.1`, or a `pip:` list");
}

Result<FileRequirements> read_environment(const yaml::Node& root, std::string_view file) {
  FileRequirements out;
  if (root.is_null()) return out;
  if (!root.is_mapping()) {
    return Error::input("expected a conda environment: a mapping with `dependencies:`")
        .at(location(file, root.mark()));
  }
  const yaml::Node* dependencies = root.find("dependencies");
  if (dependencies == nullptr || dependencies->is_null()) return out;
  if (!dependencies->is_sequence()) {
    return wrong_value(file, *dependencies, "dependencies", "a list of packages");
  }
  for (const auto& item : *dependencies) {
    if (auto read = read_dependency(item, file, out); !read) return std::move(read).error();
  }
  return out;
}

}  // namespace

bool is_conda_environment(std::string_view text) {
  const auto root = yaml::load_document(yaml::Source(text, ""));
  if (!root) return false;
  const yaml::Node* dependencies = root->find("dependencies");
  return dependencies != nullptr && dependencies->is_sequence();
}

Result<FileRequirements> parse_environment_yml(std::string_view text, std::string_view file) {
  auto root = yaml::load_document(yaml::Source(text, file));
  if (!root) return std::move(root).error();
  return read_environment(*root, file);
}

}  // namespace envkit::project
