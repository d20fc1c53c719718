#include "envkit/recipes/import_pypi_cuda.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>

#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/recipes/import_pypi_jax.hpp"

namespace envkit::recipes {

namespace {

using specs::Platform;
using specs::Version;

constexpr std::string_view kToolkitProject = "cuda-toolkit";
constexpr std::array<std::string_view, 3> kCudnnBuilds = {"cuda11", "cuda12", "cuda13"};

// The newest version of `recipe` that `keep` accepts.
template <class Keep>
const RecipeVersion* newest(const Recipe& recipe, Keep keep) {
  const RecipeVersion* found = nullptr;
  for (const auto& version : recipe.versions) {
    if (keep(version) && (found == nullptr || found->version < version.version)) found = &version;
  }
  return found;
}

const Build* build_with_id(const RecipeVersion& version, std::string_view id) {
  for (const auto& build : version.builds) {
    if (build.id == id) return &build;
  }
  return nullptr;
}

// The platforms `build` has a wheel of `component` for (any component when empty).
std::vector<Platform> wheel_platforms(const Build& build, std::string_view component) {
  std::vector<Platform> platforms;
  for (const auto& artifact : build.artifacts) {
    if ((component.empty() || artifact.component == component) &&
        std::find(platforms.begin(), platforms.end(), artifact.platform) == platforms.end())
      platforms.push_back(artifact.platform);
  }
  std::sort(platforms.begin(), platforms.end());
  return platforms;
}

// Lays the wheels `import_pypi_nvidia` found over `into` (both hold the same new versions).
void add_wheels(Recipe& into, const Recipe& wheels) {
  for (auto& version : into.versions) {
    const auto* found = wheels.find(version.version);
    if (found == nullptr) continue;
    for (auto& build : version.builds) {
      if (const auto* with = build_with_id(*found, build.id)) build.artifacts = with->artifacts;
    }
  }
}

// ---------------------------------------------------------------- CUDA

class CudaReleases {
 public:
  CudaReleases(const Recipe& cuda, const PypiImportOptions& options, PypiCudaReleases& result)
      : known_(cuda), options_(options), result_(result) {}

  Result<void> run() {
    auto files = fetch_project_files(options_, kToolkitProject);
    if (!files) return std::move(files).error();
    if (!*files) return {};  // an index without NVIDIA's toolkit: nothing new to say
    for (const auto& [version, wheels] : wheels_by_release(**files)) {
      if (!is_new(version)) continue;
      if (auto added = add_release(version, wheels); !added) return added;
    }
    if (result_.cuda.versions.empty()) return {};
    Recipe empty_cudnn{.name = "cudnn"};
    auto wheels = import_pypi_nvidia(result_.cuda, empty_cudnn, options_);
    if (!wheels) return std::move(wheels).error();
    add_wheels(result_.cuda, wheels->cuda);
    finish();
    return {};
  }

 private:
  // Newer than every release of its major the database knows.
  [[nodiscard]] bool is_new(const Version& version) const {
    if (!is_final_release(version) || version.major() < 11 ||
        options_.is_known(kToolkitProject, version))
      return false;
    const auto* newest_known = family_newest(version.major());
    return newest_known != nullptr && newest_known->version < version;
  }

  [[nodiscard]] const RecipeVersion* family_newest(std::uint64_t major) const {
    return newest(known_, [&](const RecipeVersion& v) { return v.version.major() == major; });
  }

  Result<void> add_release(const Version& version, const std::vector<IndexWheel>& wheels) {
    const auto spelled = wheels.front().wheel.version;
    const auto* wheel = wheels.front().file;
    auto text = fetch_wheel_metadata(options_, *wheel);
    if (!text) return std::move(text).error();
    if (!*text) {
      result_.problems.push_back(fmt::format(
          "cuda {}: the index serves no METADATA of {}; left out", spelled, wheel->filename));
      return {};
    }
    auto metadata = parse_wheel_metadata(**text, wheel->filename);
    if (!metadata) {
      result_.problems.push_back(
          fmt::format("cuda {}: {}; left out", spelled, metadata.error().message()));
      return {};
    }
    RecipeVersion entry{.version = version, .builds = {Build{}}};
    for (const auto& component : known_.default_components) {
      const auto project = cuda_component_wheel(component, version.major());
      if (!project) continue;
      for (const auto& requirement : metadata->requires_dist) {
        if (requirement.project != project->project) continue;
        if (auto pinned = pinned_component_version(requirement.spec)) {
          entry.components.push_back({component, *pinned});
          break;
        }
      }
    }
    if (entry.components.empty()) {
      result_.problems.push_back(
          fmt::format("cuda {}: {} pins none of the components envkit installs; left out", spelled,
                      wheel->filename));
      return {};
    }
    if (auto parsed = Version::parse(spelled)) entry.version = *std::move(parsed);
    result_.cuda.versions.push_back(std::move(entry));
    return {};
  }

  // Each new release: the family's driver minimum, the platforms of its runtime's wheels;
  // one without a runtime wheel cannot be installed and is left out.
  void finish() {
    std::erase_if(result_.cuda.versions, [&](RecipeVersion& version) {
      auto& build = version.builds.front();
      build.platforms = wheel_platforms(build, "cuda_cudart");
      if (build.platforms.empty()) {
        result_.problems.push_back(
            fmt::format("cuda {}: the index has no wheel of its runtime (cuda_cudart); left out",
                        version.version.original()));
        return true;
      }
      const auto* family = family_newest(version.version.major());
      if (family != nullptr && !family->builds.empty()) {
        build.min_driver_compat = family->builds.front().min_driver_compat;
        // NVIDIA drops architectures with a major release, never within one.
        build.cuda_arch = family->builds.front().cuda_arch;
      }
      result_.notes.push_back(driver_note(version, family));
      return false;
    });
    result_.cuda.sources.push_back(fmt::format(
        "releases newer than the database: {} ({}'s METADATA: the components' pins; their "
        "wheels)",
        url::redacted(options_.index_url), kToolkitProject));
  }

  static std::string driver_note(const RecipeVersion& version, const RecipeVersion* family) {
    if (family == nullptr || family->builds.empty() ||
        family->builds.front().min_driver_compat.empty()) {
      return fmt::format("cuda {}: newer than the database's driver table; no driver minimum known",
                         version.version.original());
    }
    std::vector<std::string> minimums;
    for (const auto& [platform, driver] : family->builds.front().min_driver_compat)
      minimums.push_back(fmt::format("{} {}", specs::to_string(platform), driver.original()));
    return fmt::format(
        "cuda {}: newer than the database's driver table; the {}.x family minimum (minor-version "
        "compatibility, as of cuda {}): {}; its GPU architectures: those of cuda {}",
        version.version.original(), version.version.major(), family->version.original(),
        text::join(minimums, ", "), family->version.original());
  }

  const Recipe& known_;
  const PypiImportOptions& options_;
  PypiCudaReleases& result_;
};

// ---------------------------------------------------------------- cuDNN

class CudnnReleases {
 public:
  CudnnReleases(const Recipe& cudnn, const PypiImportOptions& options, PypiCudaReleases& result)
      : known_(cudnn), options_(options), result_(result) {}

  Result<void> run() {
    for (const auto id : kCudnnBuilds) {
      if (auto added = add_build(id); !added) return added;
    }
    if (result_.cudnn.versions.empty()) return {};
    Recipe empty_cuda{.name = "cuda"};
    auto wheels = import_pypi_nvidia(empty_cuda, result_.cudnn, options_);
    if (!wheels) return std::move(wheels).error();
    add_wheels(result_.cudnn, wheels->cudnn);
    for (auto& version : result_.cudnn.versions) {
      for (auto& build : version.builds)
        build.platforms = wheel_platforms(build, "");
      std::erase_if(version.builds, [](const Build& b) { return b.platforms.empty(); });
    }
    std::erase_if(result_.cudnn.versions,
                  [](const RecipeVersion& version) { return version.builds.empty(); });
    if (!result_.cudnn.versions.empty()) {
      result_.cudnn.sources.push_back(
          fmt::format("releases newer than the database: {} (nvidia-cudnn-cuNN wheels)",
                      url::redacted(options_.index_url)));
    }
    return {};
  }

 private:
  Result<void> add_build(std::string_view id) {
    const auto* base_version =
        newest(known_, [&](const RecipeVersion& v) { return build_with_id(v, id) != nullptr; });
    const auto project = cudnn_build_wheel(id);
    if (base_version == nullptr || !project) return {};
    const Build& base = *build_with_id(*base_version, id);
    auto files = fetch_project_files(options_, project->project);
    if (!files) return std::move(files).error();
    if (!*files) return {};
    for (const auto& [version, wheels] : wheels_by_release(**files)) {
      if (!is_final_release(version) || !(base_version->version < version) ||
          options_.is_known(project->project, version))
        continue;
      Build build{.id = std::string(id),
                  .requires_ = base.requires_,
                  .requires_only_on = base.requires_only_on};
      entry_for(version, wheels.front().wheel.version).builds.push_back(std::move(build));
      result_.notes.push_back(
          fmt::format("cudnn {} ({}): newer than the database; the requirements of {}'s {} build",
                      wheels.front().wheel.version, id, base_version->version.original(), id));
    }
    return {};
  }

  RecipeVersion& entry_for(const Version& version, const std::string& spelled) {
    for (auto& entry : result_.cudnn.versions) {
      if (entry.version == version) return entry;
    }
    auto parsed = Version::parse(spelled);
    result_.cudnn.versions.push_back(RecipeVersion{.version = parsed ? *parsed : version});
    return result_.cudnn.versions.back();
  }

  const Recipe& known_;
  const PypiImportOptions& options_;
  PypiCudaReleases& result_;
};

}  // namespace

std::optional<std::string> pinned_component_version(std::string_view spec) {
  auto parsed = specs::VersionSpec::parse(spec);
  if (!parsed) return std::nullopt;
  using Op = specs::Specifier::Op;
  for (const auto& clause : parsed->specifiers()) {
    const auto op = clause.op();
    if (clause.version() && (op == Op::equal || op == Op::greater_equal || op == Op::compatible))
      return clause.version()->original();
  }
  return std::nullopt;
}

Result<PypiCudaReleases> import_pypi_cuda_releases(const Recipe& cuda, const Recipe& cudnn,
                                                   const PypiImportOptions& options) {
  if (!options.fetch) return Error::internal("import_pypi_cuda_releases: no fetch function");
  PypiCudaReleases result;
  result.cuda.name = "cuda";
  result.cudnn.name = "cudnn";
  if (auto done = CudaReleases(cuda, options, result).run(); !done) return done.error();
  if (auto done = CudnnReleases(cudnn, options, result).run(); !done) return done.error();
  canonicalize(result.cuda);
  canonicalize(result.cudnn);
  return result;
}

}  // namespace envkit::recipes
