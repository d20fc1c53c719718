#include "envkit/specs/artifact.hpp"

#include <algorithm>

#include "enum_names.hpp"

namespace envkit::specs {

namespace {

constexpr detail::EnumNames<ArtifactKind, 4> kKinds = {{
    {ArtifactKind::archive, "archive"},
    {ArtifactKind::wheel, "wheel"},
    {ArtifactKind::runfile, "runfile"},
    {ArtifactKind::source, "source"},
}};

constexpr detail::EnumNames<Layout, 9> kLayouts = {{
    {Layout::nvidia_redist, "nvidia-redist"},
    {Layout::cudnn_legacy, "cudnn-legacy"},
    {Layout::python_standalone, "python-standalone"},
    {Layout::python_standalone_full, "python-standalone-full"},
    {Layout::nvidia_wheel, "nvidia-wheel"},
    {Layout::source_tree, "source-tree"},
    {Layout::cuda_runfile_nested, "cuda-runfile-nested"},
    {Layout::cuda_runfile_builds, "cuda-runfile-builds"},
    {Layout::none, "none"},
}};

constexpr detail::EnumNames<BuildSystem, 3> kBuildSystems = {{
    {BuildSystem::configure, "configure"},
    {BuildSystem::cmake, "cmake"},
    {BuildSystem::cpython, "cpython"},
}};

}  // namespace

std::string_view to_string(ArtifactKind kind) {
  return detail::name_of(kKinds, kind);
}
std::string_view to_string(Layout layout) {
  return detail::name_of(kLayouts, layout);
}
std::optional<ArtifactKind> parse_artifact_kind(std::string_view text) {
  return detail::value_of(kKinds, text);
}
std::optional<Layout> parse_layout(std::string_view text) {
  return detail::value_of(kLayouts, text);
}
std::string layout_choices() {
  std::string out;
  for (std::size_t i = 0; i < kLayouts.size(); ++i) {
    if (i > 0) out += i + 1 == kLayouts.size() ? " or " : ", ";
    out += kLayouts[i].second;
  }
  return out;
}
std::string_view to_string(BuildSystem build_system) {
  return detail::name_of(kBuildSystems, build_system);
}
std::optional<BuildSystem> parse_build_system(std::string_view text) {
  return detail::value_of(kBuildSystems, text);
}

bool unpackable(const Artifact& artifact) {
  return artifact.kind != ArtifactKind::runfile || artifact.layout != Layout::none;
}

bool holds_component(const Artifact& artifact, std::string_view component) {
  if (artifact.component == component) return true;
  return artifact.kind == ArtifactKind::runfile &&
         std::find(artifact.components.begin(), artifact.components.end(), component) !=
             artifact.components.end();
}

}  // namespace envkit::specs
