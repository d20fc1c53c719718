#include "envkit/recipes/recipe.hpp"

#include <algorithm>
#include <array>
#include <tuple>

namespace envkit::recipes {

namespace {

auto artifact_key(const Artifact& a) {
  return std::tie(a.platform, a.component, a.kind);
}

template <class T, class Key>
void sort_unique_by(std::vector<T>& items, Key key) {
  std::stable_sort(items.begin(), items.end(),
                   [&](const T& a, const T& b) { return key(a) < key(b); });
}

void merge_build(Build& base, const Build& update) {
  // A requirement and the platforms it applies on are one fact.
  for (const auto& [name, spec] : update.requires_) {
    base.requires_.insert_or_assign(name, spec);
    if (const auto only = update.requires_only_on.find(name);
        only != update.requires_only_on.end()) {
      base.requires_only_on.insert_or_assign(name, only->second);
    } else {
      base.requires_only_on.erase(name);
    }
  }
  for (const auto& [platform, driver] : update.min_driver) {
    base.min_driver.insert_or_assign(platform, driver);
  }
  for (const auto& [platform, driver] : update.min_driver_compat) {
    base.min_driver_compat.insert_or_assign(platform, driver);
  }
  for (const auto& [platform, glibc] : update.min_glibc) {
    base.min_glibc.insert_or_assign(platform, glibc);
  }
  for (const auto& [package, version] : update.tested)
    base.tested.insert_or_assign(package, version);
  if (!update.cuda_arch.empty()) base.cuda_arch = update.cuda_arch;
  if (!update.cuda_ptx.empty()) base.cuda_ptx = update.cuda_ptx;
  if (!update.wheel_index.empty()) base.wheel_index = update.wheel_index;
  if (!update.runfile_only.empty()) base.runfile_only = update.runfile_only;
  for (auto platform : update.platforms) {
    if (std::find(base.platforms.begin(), base.platforms.end(), platform) == base.platforms.end()) {
      base.platforms.push_back(platform);
    }
  }
  for (const auto& artifact : update.artifacts) {
    auto it = std::find_if(base.artifacts.begin(), base.artifacts.end(), [&](const Artifact& a) {
      return artifact_key(a) == artifact_key(artifact);
    });
    if (it == base.artifacts.end()) {
      base.artifacts.push_back(artifact);
    } else {
      *it = artifact;
    }
  }
}

void merge_version(RecipeVersion& base, const RecipeVersion& update) {
  if (update.release_date) base.release_date = update.release_date;
  if (!update.components.empty()) base.components = update.components;
  for (const auto& build : update.builds) {
    auto it = std::find_if(base.builds.begin(), base.builds.end(),
                           [&](const Build& b) { return b.id == build.id; });
    if (it == base.builds.end()) {
      base.builds.push_back(build);
    } else {
      merge_build(*it, build);
    }
  }
}

}  // namespace

const RecipeVersion* Recipe::find(const specs::Version& version) const {
  for (const auto& v : versions) {
    // Same text first: 8.9.7.29 and 8.9.7.29.0 compare equal but are different uploads.
    if (v.version.original() == version.original()) return &v;
  }
  for (const auto& v : versions) {
    if (v.version == version) return &v;
  }
  return nullptr;
}

std::vector<specs::Platform> runfile_only_platforms(const Build& build) {
  if (build.artifacts.empty()) return build.runfile_only;
  std::vector<specs::Platform> only;
  for (const auto platform : build.platforms) {
    bool runfile = false, other = false;
    for (const auto& artifact : build.artifacts) {
      if (artifact.platform != platform) continue;
      // A runfile with its era's layout is unpacked like any archive (cuda_runfile.hpp).
      (specs::unpackable(artifact) ? other : runfile) = true;
    }
    if (runfile && !other) only.push_back(platform);
  }
  return only;
}

bool installable_on(const Build& build, specs::Platform platform) {
  const auto excludes = [&](const std::vector<specs::Platform>& only) {
    return std::find(only.begin(), only.end(), platform) != only.end();
  };
  // The solver asks per candidate of facts read alone: no list is built for them.
  if (build.artifacts.empty()) return !excludes(build.runfile_only);
  return !excludes(runfile_only_platforms(build));
}

bool has_kernels_for(const Build& build, specs::ComputeCapability capability) {
  if (build.cuda_arch.empty() && build.cuda_ptx.empty()) return true;
  if (specs::runs_on(build.cuda_arch, capability)) return true;
  return std::any_of(build.cuda_ptx.begin(), build.cuda_ptx.end(),
                     [&](const specs::ComputeCapability& ptx) { return ptx <= capability; });
}

std::map<std::string, specs::VersionSpec> requirements_on(const Build& build,
                                                          specs::Platform platform) {
  std::map<std::string, specs::VersionSpec> out;
  for (const auto& [package, spec] : build.requires_) {
    const auto only = build.requires_only_on.find(package);
    if (only == build.requires_only_on.end() ||
        std::find(only->second.begin(), only->second.end(), platform) != only->second.end()) {
      out.emplace(package, spec);
    }
  }
  return out;
}

void canonicalize(Recipe& recipe) {
  std::sort(recipe.sources.begin(), recipe.sources.end());
  recipe.sources.erase(std::unique(recipe.sources.begin(), recipe.sources.end()),
                       recipe.sources.end());
  sort_unique_by(recipe.versions, [](const RecipeVersion& v) { return v.version; });
  for (auto& version : recipe.versions) {
    sort_unique_by(version.components, [](const Component& c) { return c.name; });
    sort_unique_by(version.builds, [](const Build& b) { return b.id; });
    for (auto& build : version.builds) {
      std::sort(build.platforms.begin(), build.platforms.end());
      for (auto& [package, platforms] : build.requires_only_on) {
        std::sort(platforms.begin(), platforms.end());
        platforms.erase(std::unique(platforms.begin(), platforms.end()), platforms.end());
      }
      std::sort(build.cuda_arch.begin(), build.cuda_arch.end());
      build.cuda_arch.erase(std::unique(build.cuda_arch.begin(), build.cuda_arch.end()),
                            build.cuda_arch.end());
      std::sort(build.cuda_ptx.begin(), build.cuda_ptx.end());
      build.cuda_ptx.erase(std::unique(build.cuda_ptx.begin(), build.cuda_ptx.end()),
                           build.cuda_ptx.end());
      sort_unique_by(build.artifacts, [](const Artifact& a) {
        return std::make_tuple(a.platform, a.component, a.kind);
      });
      // A runfile's components are a set; its patches keep their order (the order applied).
      for (auto& artifact : build.artifacts)
        std::sort(artifact.components.begin(), artifact.components.end());
    }
  }
}

namespace {

bool replaced_by(const Recipe& update, const RecipeVersion& version) {
  return std::find(update.replaces.begin(), update.replaces.end(), version.version.original()) !=
         update.replaces.end();
}

// A release line's kernel architectures are facts of the tables that key it by minor
// (torch.yaml `2.8`, from PyTorch's build scripts), not of the overlay that refines it
// into patch releases (`2.8.0`, read from PyPI's METADATA, which holds no arch list):
// each build of a refining release takes them from the replaced minor's build of the
// same id, so that an overlay imported before the tables learned them still has them.
void keep_kernel_facts(const std::vector<RecipeVersion>& replaced, Recipe& base) {
  for (const auto& minor : replaced) {
    for (auto& version : base.versions) {
      if (version.version.release().size() < 3 ||
          version.version.major_minor() != minor.version.major_minor())
        continue;
      for (auto& build : version.builds) {
        for (const auto& from : minor.builds) {
          if (from.id != build.id || (from.cuda_arch.empty() && from.cuda_ptx.empty())) continue;
          build.cuda_arch = from.cuda_arch;
          build.cuda_ptx = from.cuda_ptx;
        }
      }
    }
  }
}

}  // namespace

void merge_into(Recipe& base, const Recipe& update) {
  if (base.name.empty()) base.name = update.name;
  base.sources.insert(base.sources.end(), update.sources.begin(), update.sources.end());
  if (!update.default_components.empty()) base.default_components = update.default_components;
  std::vector<RecipeVersion> replaced;
  for (const auto& version : base.versions) {
    if (replaced_by(update, version) && version.version.release().size() == 2)
      replaced.push_back(version);
  }
  std::erase_if(base.versions, [&](const RecipeVersion& v) { return replaced_by(update, v); });
  for (const auto& version : update.versions) {
    auto it = std::find_if(base.versions.begin(), base.versions.end(), [&](const RecipeVersion& v) {
      return v.version.original() == version.version.original();
    });
    if (it == base.versions.end()) {
      base.versions.push_back(version);
    } else {
      merge_version(*it, version);
    }
  }
  keep_kernel_facts(replaced, base);
  canonicalize(base);
}

}  // namespace envkit::recipes
