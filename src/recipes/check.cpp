#include "envkit/recipes/check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "envkit/recipes/cuda_runfile.hpp"
#include "envkit/specs/package_name.hpp"

namespace envkit::recipes {

namespace {

bool is_sha256(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string where_of(const Recipe& r, const RecipeVersion& v, const Build& b) {
  return b.id.empty() ? fmt::format("{} {}", r.name, v.version.original())
                      : fmt::format("{} {} {}", r.name, v.version.original(), b.id);
}

// Problems fail the check; warnings are shown and do not.
struct Findings {
  std::vector<Problem>& problems;
  std::vector<Problem>* warnings;
};

// Every URL is https, or http with a pinned sha256 (upstream's metadata names
// only http for zlib's tarballs and CUDA 10.2's runfile): a warning, since on
// http the sha256 is all that stands between a network and the install.
void check_url(const std::string& at, const std::string& url, const std::string& sha256,
               Findings& out) {
  if (url.starts_with("https://")) return;
  if (!url.starts_with("http://") || !is_sha256(sha256)) {
    out.problems.push_back(
        {at, fmt::format("`{}` is neither https nor http with a pinned sha256", url)});
  } else if (out.warnings) {
    out.warnings->push_back(
        {at, fmt::format("`{}` is plain http: only its pinned sha256 guards it (envkit install "
                         "warns about the host too); use https where upstream publishes it",
                         url)});
  }
}

// A runfile is installable only with the facts the unpacker needs: the layout of its
// CUDA's era and the components inside (cuda_runfile.hpp).
void check_runfile(const std::string& at, const specs::Version& cuda, const Artifact& runfile,
                   Findings& findings) {
  auto& out = findings.problems;
  const auto era = cuda_runfile_era(cuda);
  if (runfile.layout == Layout::none) {
    out.push_back(
        {at, fmt::format("the runfile has no layout era (`layout: none`), so envkit cannot unpack "
                         "it{}; rerun scripts/regen-recipes",
                         era ? fmt::format(": CUDA {}'s runfile is `{}`", cuda.original(),
                                           to_string(era->layout))
                             : "")});
  } else if (era && runfile.layout != era->layout) {
    out.push_back(
        {at, fmt::format("layout `{}`, but CUDA {}'s runfile is `{}`", to_string(runfile.layout),
                         cuda.original(), to_string(era->layout))});
  }
  if (runfile.components.empty()) {
    out.push_back({at,
                   "the runfile lists no `components:`, so envkit would not know what to "
                   "place; rerun scripts/regen-recipes"});
  }
  for (std::size_t i = 0; i < runfile.patches.size(); ++i) {
    const auto& patch = runfile.patches[i];
    const auto patch_at = fmt::format("{} patch {}", at, i + 1);
    if (!is_sha256(patch.sha256)) {
      out.push_back(
          {patch_at, fmt::format("sha256 `{}` is not 64 lowercase hex digits", patch.sha256)});
    }
    check_url(patch_at, patch.url, patch.sha256, findings);
  }
}

void check_artifacts(const std::string& where, const RecipeVersion& version, const Build& build,
                     Findings& findings) {
  auto& out = findings.problems;
  std::set<std::tuple<specs::Platform, std::string, ArtifactKind>> seen;
  for (const auto& a : build.artifacts) {
    const auto at = fmt::format("{} {} {} ({})", where, a.component, specs::to_string(a.platform),
                                to_string(a.kind));
    if (!seen.insert({a.platform, a.component, a.kind}).second) {
      out.push_back({at, "the artifact appears twice"});
    }
    if (!is_sha256(a.sha256)) {
      out.push_back({at, fmt::format("sha256 `{}` is not 64 lowercase hex digits", a.sha256)});
    }
    check_url(at, a.url, a.sha256, findings);
    for (const auto& other : a.also_at)
      check_url(at, other, a.sha256, findings);
    if (a.kind == ArtifactKind::runfile) check_runfile(at, version.version, a, findings);
  }
}

}  // namespace

VersionIndex index_versions(const std::vector<Recipe>& recipes) {
  VersionIndex index;
  for (const auto& recipe : recipes) {
    for (const auto& v : recipe.versions)
      index[recipe.name].push_back(v.version);
  }
  return index;
}

std::vector<std::string> unmet_requirements(const Build& build, const VersionIndex& index) {
  std::vector<std::string> unmet;
  for (const auto& [package, spec] : build.requires_) {
    if (package == "python") continue;
    const auto it = index.find(package);
    const bool met =
        it != index.end() &&
        // An init-capture: clang 14 (the fuzz build) cannot capture a structured binding.
        std::any_of(it->second.begin(), it->second.end(), [&spec = spec](const auto& v) {
          return spec.contains(v, specs::Prereleases::allow);
        });
    if (met) continue;
    const auto text = spec.to_string();
    unmet.push_back(text.empty() ? fmt::format("{} (any version)", package)
                                 : fmt::format("{} `{}`", package, text));
  }
  return unmet;
}

Result<std::vector<Problem>> check_database(const Database& db, std::vector<Problem>* warnings) {
  std::vector<Recipe> recipes;
  for (const auto& name : db.names()) {
    auto recipe = db.load_full(name);
    if (!recipe) return recipe.error();
    recipes.push_back(*std::move(recipe));
  }
  const VersionIndex index = index_versions(recipes);
  std::vector<Problem> problems;
  Findings findings{.problems = problems, .warnings = warnings};
  for (const auto& recipe : recipes) {
    if (!specs::known_package(recipe.name)) {
      problems.push_back({recipe.name, "not a package name envkit knows"});
    }
    std::set<std::string> versions;
    for (const auto& version : recipe.versions) {
      if (!versions.insert(version.version.original()).second) {
        problems.push_back(
            {recipe.name, fmt::format("version {} appears twice", version.version.original())});
      }
      std::set<std::string> builds;
      for (const auto& build : version.builds) {
        const auto where = where_of(recipe, version, build);
        if (!builds.insert(build.id).second) problems.push_back({where, "the build appears twice"});
        check_artifacts(where, version, build, findings);
        for (const auto& unmet : unmet_requirements(build, index)) {
          // A build PyPI serves pins NVIDIA's wheels, often newer than the redist manifests
          // the database is built from: today's index (the live overlay) has them.
          if (!build.wheel_index.empty()) {
            if (warnings != nullptr) {
              warnings->push_back(
                  {where, fmt::format("requires {}, which only today's index has (NVIDIA's "
                                      "wheels newer than the database)",
                                      unmet)});
            }
            continue;
          }
          problems.push_back(
              {where, fmt::format("requires {}, which no version of the database meets", unmet)});
        }
        for (const auto& [package, spec] : build.requires_) {
          if (!specs::known_package(package)) {
            problems.push_back(
                {where, fmt::format("requires `{}`, not a package envkit knows", package)});
          }
        }
      }
    }
  }
  return problems;
}

}  // namespace envkit::recipes
