#include "envkit/specs/artifact.hpp"

#include <array>
#include <utility>

namespace envkit::specs {

namespace {

constexpr std::array<std::pair<ArtifactKind, std::string_view>, 4> kKinds = {{
    {ArtifactKind::archive, "archive"},
    {ArtifactKind::wheel, "wheel"},
    {ArtifactKind::runfile, "runfile"},
    {ArtifactKind::source, "source"},
}};

constexpr std::array<std::pair<Layout, std::string_view>, 6> kLayouts = {{
    {Layout::nvidia_redist, "nvidia-redist"},
    {Layout::cudnn_legacy, "cudnn-legacy"},
    {Layout::python_standalone, "python-standalone"},
    {Layout::nvidia_wheel, "nvidia-wheel"},
    {Layout::source_tree, "source-tree"},
    {Layout::none, "none"},
}};

constexpr std::array<std::pair<BuildSystem, std::string_view>, 2> kBuildSystems = {{
    {BuildSystem::configure, "configure"},
    {BuildSystem::cmake, "cmake"},
}};

template <class Enum, std::size_t N>
std::string_view name_of(const std::array<std::pair<Enum, std::string_view>, N>& table, Enum e) {
  for (const auto& [value, name] : table) {
    if (value == e) return name;
  }
  return "";
}

template <class Enum, std::size_t N>
std::optional<Enum> value_of(const std::array<std::pair<Enum, std::string_view>, N>& table,
                             std::string_view text) {
  for (const auto& [value, name] : table) {
    if (name == text) return value;
  }
  return std::nullopt;
}

}  // namespace

std::string_view to_string(ArtifactKind kind) {
  return name_of(kKinds, kind);
}
std::string_view to_string(Layout layout) {
  return name_of(kLayouts, layout);
}
std::optional<ArtifactKind> parse_artifact_kind(std::string_view text) {
  return value_of(kKinds, text);
}
std::optional<Layout> parse_layout(std::string_view text) {
  return value_of(kLayouts, text);
}
std::string_view to_string(BuildSystem build_system) {
  return name_of(kBuildSystems, build_system);
}
std::optional<BuildSystem> parse_build_system(std::string_view text) {
  return value_of(kBuildSystems, text);
}

}  // namespace envkit::specs
