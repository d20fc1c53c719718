// environment.yml: conda dependencies and their `pip:` list, read with yaml-cpp.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "envkit/core/text.hpp"
#include "envkit/project/project_files.hpp"
#include "pip_lines.hpp"

namespace envkit::project {

namespace {

SourceLocation location(std::string_view file, const YAML::Mark& mark) {
  return {std::string(file), mark.line + 1, mark.column + 1};
}

Error wrong_value(std::string_view file, const YAML::Node& node, std::string_view key,
                  std::string_view expected) {
  return Error::input(fmt::format("{}: expected {}", text::quoted(key), expected))
      .at(location(file, node.Mark()));
}

Result<void> read_pip_list(const YAML::Node& list, std::string_view file, FileRequirements& out) {
  if (!list.IsSequence()) return wrong_value(file, list, "dependencies.pip", "a list of strings");
  for (const auto& line : list) {
    if (!line.IsScalar()) {
      return wrong_value(file, line, "dependencies.pip", "a list of strings");
    }
    if (auto added = add_pip_line(line.Scalar(), location(file, line.Mark()), out); !added) {
      return added;
    }
  }
  return {};
}

Result<void> read_dependency(const YAML::Node& item, std::string_view file, FileRequirements& out) {
  if (item.IsScalar()) {
    auto requirement = parse_conda_spec(item.Scalar(), location(file, item.Mark()));
    if (!requirement) return std::move(requirement).error();
    out.requirements.push_back(std::move(requirement).value());
    return {};
  }
  if (item.IsMap() && item["pip"]) return read_pip_list(item["pip"], file, out);
  return wrong_value(file, item, "dependencies",
                     "conda packages such as `pytorch=2.1`, or a `pip:` list");
}

Result<FileRequirements> read_environment(const YAML::Node& root, std::string_view file) {
  FileRequirements out;
  if (root.IsNull()) return out;
  if (!root.IsMap()) {
    return Error::input("expected a conda environment: a mapping with `dependencies:`")
        .at(location(file, root.Mark()));
  }
  const YAML::Node dependencies = root["dependencies"];
  if (!dependencies || dependencies.IsNull()) return out;
  if (!dependencies.IsSequence()) {
    return wrong_value(file, dependencies, "dependencies", "a list of packages");
  }
  for (const auto& item : dependencies) {
    if (auto read = read_dependency(item, file, out); !read) return std::move(read).error();
  }
  return out;
}

}  // namespace

bool is_conda_environment(std::string_view text) {
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    return root.IsMap() && root["dependencies"] && root["dependencies"].IsSequence();
  } catch (const YAML::Exception&) {
    return false;
  }
}

Result<FileRequirements> parse_environment_yml(std::string_view text, std::string_view file) {
  // yaml-cpp reports through exceptions; none may leave this module.
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    return read_environment(root, file);
  } catch (const YAML::Exception& error) {
    return Error::input(fmt::format("malformed YAML: {}", error.msg))
        .at(location(file, error.mark));
  }
}

}  // namespace envkit::project
