#include "envkit/recipes/import_pypi_tensorflow.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "envkit/core/url.hpp"

namespace envkit::recipes {

namespace {

using specs::Platform;
using specs::Version;

// The wheels of one final release on the index.
struct ReleaseWheels {
  std::vector<WheelFilename> wheels;
  std::set<Platform> platforms;
  std::map<Platform, std::pair<unsigned, unsigned>> glibc;  // the lowest manylinux per platform
};

std::map<Version, ReleaseWheels> releases_on_index(const std::vector<IndexFile>& files) {
  std::map<Version, ReleaseWheels> releases;
  for (auto& [version, wheels] : wheels_by_release(files)) {
    if (version.is_prerelease() || version.has_local()) continue;
    for (auto& [file, wheel] : wheels) {
      const auto platform = binary_wheel_platform(wheel);
      if (!platform) continue;
      auto& release = releases[version];
      release.platforms.insert(*platform);
      if (const auto glibc = manylinux_glibc(wheel)) {
        auto [it, inserted] = release.glibc.try_emplace(*platform, *glibc);
        if (!inserted) it->second = std::min(it->second, *glibc);
      }
      release.wheels.push_back(std::move(wheel));
    }
  }
  return releases;
}

// The table row that speaks for `release`: its own, else the newest row of its minor
// not newer than it (1.13.2 -> 1.13.1), else the oldest row of the minor.
const RecipeVersion* row_for(const Recipe& tables, const Version& release) {
  const RecipeVersion* older = nullptr;
  const RecipeVersion* newer = nullptr;
  for (const auto& row : tables.versions) {
    if (row.version.major_minor() != release.major_minor()) continue;
    if (row.version == release) return &row;
    if (row.version < release && (older == nullptr || older->version < row.version)) older = &row;
    if (release < row.version && (newer == nullptr || row.version < newer->version)) newer = &row;
  }
  return older != nullptr ? older : newer;
}

bool has_platform(const Build& build, Platform platform) {
  return std::find(build.platforms.begin(), build.platforms.end(), platform) !=
         build.platforms.end();
}

// What the release's wheels say of a build: the Python range and the glibc.
void apply_wheel_facts(Build& build, const ReleaseWheels& release) {
  if (auto python = cpython_range(release.wheels)) {
    build.requires_.insert_or_assign("python", *std::move(python));
    build.requires_only_on.erase("python");
  }
  for (const auto platform : build.platforms) {
    if (const auto it = release.glibc.find(platform); it != release.glibc.end()) {
      build.min_glibc.insert_or_assign(
          platform, Version::from_release({it->second.first, it->second.second}));
    }
  }
}

// The row's builds on the platforms the release has wheels for.
std::vector<Build> builds_for(const RecipeVersion& row, const ReleaseWheels& release) {
  std::vector<Build> builds;
  for (const auto& build : row.builds) {
    Build copy = build;
    std::erase_if(copy.platforms, [&](Platform p) { return !release.platforms.contains(p); });
    if (copy.platforms.empty()) continue;
    apply_wheel_facts(copy, release);
    builds.push_back(std::move(copy));
  }
  return builds;
}

bool same_needs(const Build& a, const Build& b) {
  auto without_python = [](const std::map<std::string, specs::VersionSpec>& needs) {
    std::map<std::string, std::string> written;
    for (const auto& [package, spec] : needs)
      if (package != "python") written.emplace(package, spec.to_string());
    return written;
  };
  return without_python(a.requires_) == without_python(b.requires_) && a.tested == b.tested;
}

// tensorflow-gpu 2.x on Linux: the tables list its configuration as `tensorflow-2.x`
// (the GPU build), so the Linux builds of tensorflow's row, under their own id where
// the Windows build of the same id needs something else.
void add_linux_gpu_builds(std::vector<Build>& builds, const Recipe& tensorflow,
                          const Version& version, const ReleaseWheels& release) {
  if (version.major() < 2 || !release.platforms.contains(Platform::linux_x86_64)) return;
  if (std::any_of(builds.begin(), builds.end(),
                  [](const Build& b) { return has_platform(b, Platform::linux_x86_64); })) {
    return;
  }
  const auto* row = row_for(tensorflow, version);
  if (row == nullptr) return;
  for (const auto& build : row->builds) {
    if (!has_platform(build, Platform::linux_x86_64)) continue;
    Build linux = build;
    linux.platforms = {Platform::linux_x86_64};
    apply_wheel_facts(linux, release);
    const auto clash = std::find_if(builds.begin(), builds.end(),
                                    [&](const Build& b) { return b.id == linux.id; });
    if (clash != builds.end() && same_needs(*clash, linux)) {
      clash->platforms.push_back(Platform::linux_x86_64);
      clash->min_glibc.insert(linux.min_glibc.begin(), linux.min_glibc.end());
      continue;
    }
    if (clash != builds.end()) linux.id += "-linux";
    builds.push_back(std::move(linux));
  }
}

struct Project {
  std::string_view name;  // on the index
  const Recipe& tables;
  Recipe& overlay;
};

Result<void> import_project(const Project& project, const Recipe& tensorflow,
                            const PypiImportOptions& options, PypiTensorflowImport& result) {
  auto files = fetch_listed_project_files(options, project.name);
  if (!files) return std::move(files).error();
  project.overlay.name = project.tables.name;
  for (const auto& [version, release] : releases_on_index(*files)) {
    if (options.is_known(project.name, version)) continue;
    ++result.releases;
    const auto* row = row_for(project.tables, version);
    auto builds = row != nullptr ? builds_for(*row, release) : std::vector<Build>{};
    if (project.name == "tensorflow-gpu")
      add_linux_gpu_builds(builds, tensorflow, version, release);
    if (builds.empty()) continue;  // no GPU build in the tables for its minor (tensorflow 1.x)
    if (row == nullptr || row->version != version) {
      result.added.push_back(fmt::format(
          "{} {}: {}", project.tables.name, version.original(),
          row != nullptr ? "builds of " + row->version.original() : "tensorflow's Linux builds"));
    }
    project.overlay.versions.push_back(
        RecipeVersion{.version = version, .release_date = {}, .components = {}, .builds = builds});
  }
  if (!project.overlay.versions.empty()) {
    project.overlay.sources.push_back(fmt::format(
        "releases, their platforms, Python ranges (CPython wheel tags) and glibc (manylinux "
        "tags): {} ({} wheels); CUDA and cuDNN from the tested-build row of each release's minor",
        url::redacted(options.index_url), project.name));
  }
  canonicalize(project.overlay);
  return {};
}

}  // namespace

Result<PypiTensorflowImport> import_pypi_tensorflow(const Recipe& tensorflow,
                                                    const Recipe& tensorflow_gpu,
                                                    const PypiImportOptions& options) {
  if (!options.fetch) return Error::internal("import_pypi_tensorflow: no fetch function");
  PypiTensorflowImport result;
  for (const Project project : {Project{"tensorflow", tensorflow, result.tensorflow},
                                Project{"tensorflow-gpu", tensorflow_gpu, result.tensorflow_gpu}}) {
    if (auto imported = import_project(project, tensorflow, options, result); !imported) {
      return imported.error();
    }
  }
  if (std::any_of(result.tensorflow_gpu.versions.begin(), result.tensorflow_gpu.versions.end(),
                  [](const RecipeVersion& v) {
                    return v.version.major() >= 2 &&
                           std::any_of(v.builds.begin(), v.builds.end(), [](const Build& b) {
                             return has_platform(b, Platform::linux_x86_64);
                           });
                  })) {
    result.tensorflow_gpu.sources.push_back(
        "tensorflow-gpu 2.x on Linux: the Linux rows of tensorflow 2.x (TensorFlow's tables list "
        "the Linux GPU build under that name)");
  }
  return result;
}

}  // namespace envkit::recipes
