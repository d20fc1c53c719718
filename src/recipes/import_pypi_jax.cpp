#include "envkit/recipes/import_pypi_jax.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/project/marker.hpp"
#include "envkit/project/requirement.hpp"
#include "envkit/specs/package_name.hpp"

namespace envkit::recipes {

namespace {

using specs::Platform;
using specs::Version;
using specs::VersionSpec;

constexpr std::string_view kJaxProject = "jax";

// ---------------------------------------------------------------- METADATA

// The extra a marker selects (`extra == 'cuda12'`, `sys_platform == "linux" and extra ==
// "with-cuda"`): one the marker holds for on Linux, and does not hold for without it.
std::string extra_of(std::string_view marker, const std::vector<std::string>& written_extras) {
  if (marker.empty()) return {};
  auto environment = project::linux_cpython_environment();
  environment.insert_or_assign("extra", "");
  if (project::evaluate_marker(marker, environment) != project::Truth::no) return {};
  for (const auto& extra : written_extras) {
    environment.insert_or_assign("extra", extra);
    if (project::evaluate_marker(marker, environment) != project::Truth::no)
      return specs::canonical_package_name(extra);
  }
  return {};
}

// ---------------------------------------------------------------- the index

// A release of a project on the index: its files for linux-x86_64 and linux-aarch64.
struct ReleaseOnIndex {
  std::string version;  // as the files spell it
  std::vector<IndexWheel> wheels;
};

// The final releases with a wheel not yanked, oldest first.
std::map<Version, ReleaseOnIndex> releases_of(const std::vector<IndexFile>& files) {
  std::map<Version, ReleaseOnIndex> releases;
  for (auto& [version, wheels] : wheels_by_release(files)) {
    if (!is_final_release(version)) continue;
    const auto spelled = wheels.front().wheel.version;
    releases.emplace(version, ReleaseOnIndex{.version = spelled, .wheels = std::move(wheels)});
  }
  return releases;
}

// jax's own wheel of a release: py3-none-any.
const IndexFile* pure_wheel(const ReleaseOnIndex& release) {
  for (const auto& [file, wheel] : release.wheels) {
    const auto& tags = wheel.platform_tags;
    if (std::find(tags.begin(), tags.end(), "any") != tags.end()) return file;
  }
  return nullptr;
}

// What a plugin release's wheels say: where it runs, the newest CPython it has a
// linux-x86_64 wheel for, and that wheel (the one whose METADATA is read).
struct PluginRelease {
  std::string version;
  std::vector<Platform> platforms;
  std::optional<unsigned> newest_cpython;
  const IndexFile* wheel = nullptr;
};

PluginRelease plugin_release(const ReleaseOnIndex& release) {
  PluginRelease out{.version = release.version};
  for (const auto& [file, wheel] : release.wheels) {
    const auto platform = binary_wheel_platform(wheel);
    if (!platform || *platform == Platform::windows_x86_64) continue;
    if (std::find(out.platforms.begin(), out.platforms.end(), *platform) == out.platforms.end())
      out.platforms.push_back(*platform);
    const auto cpython = cpython_minor(wheel);
    if (*platform == Platform::linux_x86_64 && cpython &&
        (!out.newest_cpython || *cpython > *out.newest_cpython)) {
      out.newest_cpython = cpython;
      out.wheel = file;
    }
  }
  std::sort(out.platforms.begin(), out.platforms.end());
  return out;
}

// ---------------------------------------------------------------- the import

class JaxImporter {
 public:
  explicit JaxImporter(const PypiImportOptions& options) : options_(options) {}

  Result<PypiJaxImport> run() {
    auto files = fetch_listed_project_files(options_, kJaxProject);
    if (!files) return std::move(files).error();
    result_.jax.name = std::string(kJaxProject);
    for (const auto& [version, on_index] : releases_of(*files)) {
      if (options_.is_known(kJaxProject, version)) continue;
      if (auto done = import_release(version, on_index); !done) return done.error();
    }
    result_.jax.sources.insert(
        result_.jax.sources.begin(),
        fmt::format("CUDA builds: {} (jax wheels' METADATA: extras cudaNN; from 0.4.30 "
                    "jax-cudaNN-plugin[with-cuda]'s METADATA; Python bound by the plugin's "
                    "CPython wheels)",
                    url::redacted(options_.index_url)));
    canonicalize(result_.jax);
    return std::move(result_);
  }

 private:
  Result<std::optional<WheelMetadata>> metadata(const IndexFile& wheel) {
    auto text = fetch_wheel_metadata(options_, wheel);
    if (!text) return std::move(text).error();
    if (!*text) return std::optional<WheelMetadata>{};
    ++result_.metadata_read;
    auto parsed = parse_wheel_metadata(**text, wheel.filename);
    if (!parsed) return std::move(parsed).error();
    return std::optional(std::move(parsed).value());
  }

  // The releases of a plugin project on the index (asked once).
  Result<const std::map<Version, ReleaseOnIndex>*> plugin_releases(const std::string& project) {
    if (auto it = plugins_.find(project); it != plugins_.end()) return &it->second;
    auto files = fetch_project_files(options_, project);
    if (!files) return std::move(files).error();
    auto& stored = plugin_files_[project];
    if (*files) stored = **std::move(files);
    return &plugins_.emplace(project, releases_of(stored)).first->second;
  }

  Result<void> import_release(const Version& version, const ReleaseOnIndex& on_index) {
    const IndexFile* wheel = pure_wheel(on_index);
    if (wheel == nullptr) return {};
    JaxRelease release{.version = on_index.version, .wheel = wheel->filename};
    auto jax = metadata(*wheel);
    if (!jax) return std::move(jax).error();
    release.metadata_read = jax->has_value();
    RecipeVersion entry{.version = version};
    if (*jax) {
      left_out_local_builds(**jax, release);
      for (const auto& extra : (*jax)->provides_extra) {
        auto build = cuda_build(**jax, extra, release);
        if (!build) return std::move(build).error();
        if (*build) {
          release.builds.push_back((*build)->id);
          entry.builds.push_back(**std::move(build));
        }
      }
    }
    for (const auto& note : release.notes)
      result_.jax.sources.push_back(fmt::format("jax {}: {}", release.version, note));
    if (!entry.builds.empty()) result_.jax.versions.push_back(std::move(entry));
    result_.releases.push_back(std::move(release));
    return {};
  }

  // Extras that need a jaxlib with a local label (`jaxlib==0.4.26+cuda12.cudnn89`): those
  // wheels are on Google's find-links page, which no index serves.
  static void left_out_local_builds(const WheelMetadata& jax, JaxRelease& release) {
    std::map<std::string, std::vector<std::string>> extras_by_pin;
    for (const auto& requirement : jax.requires_dist) {
      if (requirement.project == "jaxlib" && !requirement.extra.empty() &&
          requirement.spec.find('+') != std::string::npos)
        extras_by_pin[requirement.spec].push_back(requirement.extra);
    }
    for (const auto& [pin, extras] : extras_by_pin) {
      release.notes.push_back(fmt::format(
          "extras {} need jaxlib {}, a wheel the index does not have (Google's find-links "
          "page); left out",
          text::join(extras, ", "), pin));
    }
  }

  // The build an extra `cudaNN` makes, or nullopt (with a note when it is a CUDA extra
  // whose requirements the metadata does not state).
  Result<std::optional<Build>> cuda_build(const WheelMetadata& jax, const std::string& extra,
                                          JaxRelease& release) {
    const auto major = cuda_extra_major(extra);
    if (!major) return std::optional<Build>{};
    std::vector<MetadataRequirement> requirements;
    for (const auto& requirement : jax.requires_dist) {
      if (requirement.extra == extra) requirements.push_back(requirement);
    }
    if (std::any_of(requirements.begin(), requirements.end(), [](const auto& r) {
          return r.project == "jaxlib" && r.spec.find('+') != std::string::npos;
        })) {
      return std::optional<Build>{};  // noted by left_out_local_builds
    }
    const std::string plugin_project = fmt::format("jax-cuda{}-plugin", *major);
    const auto plugin = std::find_if(requirements.begin(), requirements.end(),
                                     [&](const auto& r) { return r.project == plugin_project; });
    auto skip = [&](std::string why) {
      release.notes.push_back(fmt::format("extra {}: {}; left out", extra, std::move(why)));
      return std::optional<Build>{};
    };
    if (plugin == requirements.end()) return skip("it names no " + plugin_project);
    auto plugin_on_index = find_plugin(*plugin);
    if (!plugin_on_index) return std::move(plugin_on_index).error();
    if (!*plugin_on_index) {
      return skip(fmt::format("the index has no {} {}", plugin_project, plugin->spec));
    }
    const PluginRelease& found = **plugin_on_index;
    if (std::find(found.platforms.begin(), found.platforms.end(), Platform::linux_x86_64) ==
        found.platforms.end()) {
      return skip(
          fmt::format("{} {} has no manylinux x86_64 wheel", plugin_project, found.version));
    }
    std::string plugin_python;
    const bool with_cuda = std::find(plugin->extras.begin(), plugin->extras.end(), "with-cuda") !=
                           plugin->extras.end();
    if (with_cuda && found.wheel == nullptr) {
      return skip(fmt::format("{} {} has no CPython wheel to read", plugin_project, found.version));
    }
    if (found.wheel != nullptr) {
      auto plugin_metadata = metadata(*found.wheel);
      if (!plugin_metadata) return std::move(plugin_metadata).error();
      if (!*plugin_metadata && with_cuda) {
        return skip(fmt::format("no METADATA of {} on the index", found.wheel->filename));
      }
      if (*plugin_metadata) {
        plugin_python = (*plugin_metadata)->requires_python;
        for (const auto& requirement : (*plugin_metadata)->requires_dist) {
          if (with_cuda && requirement.extra == "with-cuda") requirements.push_back(requirement);
        }
      }
    }
    Build build{.id = fmt::format("cuda{}", *major)};
    const auto* runtime = find_nvidia(requirements, "nvidia-cuda-runtime", *major);
    const auto* cudnn = find_nvidia(requirements, "nvidia-cudnn", *major);
    if (runtime == nullptr) return skip("its requirements name no NVIDIA CUDA runtime");
    if (cudnn == nullptr) return skip("its requirements name no cuDNN");
    auto cuda_spec = cuda_series(*runtime, *major);
    if (!cuda_spec) return std::move(cuda_spec).error();
    auto cudnn_spec = VersionSpec::parse(cudnn->spec);
    if (!cudnn_spec) return std::move(cudnn_spec).error();
    auto python = python_range(jax.requires_python, plugin_python, found.newest_cpython);
    if (!python) return std::move(python).error();
    build.requires_["cuda"] = *cuda_spec;
    build.requires_["cudnn"] = *cudnn_spec;
    if (!python->empty()) build.requires_["python"] = *python;
    build.platforms = found.platforms;
    build.wheel_index = std::string(kPypiIndex);
    return std::optional(std::move(build));
  }

  // The newest release of the plugin that the requirement admits.
  Result<std::optional<PluginRelease>> find_plugin(const MetadataRequirement& requirement) {
    auto releases = plugin_releases(requirement.project);
    if (!releases) return std::move(releases).error();
    auto spec = VersionSpec::parse(requirement.spec);
    if (!spec) return std::move(spec).error();
    for (auto it = (*releases)->rbegin(); it != (*releases)->rend(); ++it) {
      if (spec->contains(it->first)) return std::optional(plugin_release(it->second));
    }
    return std::optional<PluginRelease>{};
  }

  static std::optional<unsigned> cuda_extra_major(std::string_view extra) {
    if (!extra.starts_with("cuda") || extra.size() == 4) return std::nullopt;
    unsigned major = 0;
    for (char c : extra.substr(4)) {
      if (c < '0' || c > '9') return std::nullopt;
      major = major * 10 + static_cast<unsigned>(c - '0');
    }
    return major;
  }

  // `nvidia-cudnn-cu12`; from CUDA 13 NVIDIA also drops the suffix (`nvidia-cuda-runtime`).
  static const MetadataRequirement* find_nvidia(const std::vector<MetadataRequirement>& all,
                                                std::string_view stem, unsigned major) {
    const auto suffixed = fmt::format("{}-cu{}", stem, major);
    for (const auto& requirement : all) {
      if (requirement.project == suffixed || (major >= 13 && requirement.project == stem))
        return &requirement;
    }
    return nullptr;
  }

  // The CUDA releases a runtime requirement admits, as a series: the major of the
  // wheel's name, from the minor of its lower bound (`>=12.1.105` -> `<13,>=12.1`).
  static Result<VersionSpec> cuda_series(const MetadataRequirement& runtime, unsigned major) {
    auto spec = VersionSpec::parse(runtime.spec);
    if (!spec) return std::move(spec).error();
    std::string lowest = std::to_string(major);
    for (const auto& clause : spec->specifiers()) {
      using Op = specs::Specifier::Op;
      const auto op = clause.op();
      if ((op == Op::greater_equal || op == Op::equal || op == Op::compatible) &&
          clause.version() && clause.version()->major() == major &&
          clause.version()->release().size() >= 2) {
        lowest = fmt::format("{}.{}", major, clause.version()->minor());
      }
    }
    return VersionSpec::parse(fmt::format(">={},<{}", lowest, major + 1));
  }

  // jax's Requires-Python and the plugin's, below the CPython after the newest the
  // plugin has a wheel for (no jax CUDA build runs on a Python without one).
  static Result<VersionSpec> python_range(const std::string& jax, const std::string& plugin,
                                          std::optional<unsigned> newest_cpython) {
    VersionSpec range;
    for (const auto& text : {jax, plugin}) {
      if (text.empty()) continue;
      auto spec = VersionSpec::parse(text);
      if (!spec) return std::move(spec).error();
      range = range & *spec;
    }
    if (newest_cpython) {
      auto below = VersionSpec::parse(fmt::format("<3.{}", *newest_cpython + 1));
      if (!below) return std::move(below).error();
      range = range & *below;
    }
    return range;
  }

  const PypiImportOptions& options_;
  PypiJaxImport result_;
  std::map<std::string, std::vector<IndexFile>> plugin_files_;
  std::map<std::string, std::map<Version, ReleaseOnIndex>> plugins_;
};

}  // namespace

Result<WheelMetadata> parse_wheel_metadata(std::string_view text, std::string_view source) {
  WheelMetadata metadata;
  std::vector<std::pair<std::string, int>> written;  // Requires-Dist values and their lines
  std::vector<std::string> extras_as_written;
  int line_number = 0;
  for (auto line : text::split(text, '\n')) {
    ++line_number;
    line = text::trim(line);
    if (line.empty()) break;  // the headers end at the first blank line; the description follows
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const auto key = text::to_lower(line.substr(0, colon));
    const auto value = std::string(text::trim(line.substr(colon + 1)));
    if (key == "name") metadata.name = value;
    if (key == "version") metadata.version = value;
    if (key == "requires-python") metadata.requires_python = value;
    if (key == "provides-extra") extras_as_written.push_back(value);
    if (key == "requires-dist") written.emplace_back(value, line_number);
  }
  for (const auto& extra : extras_as_written)
    metadata.provides_extra.push_back(specs::canonical_package_name(extra));
  for (const auto& [value, line] : written) {
    auto requirement = project::parse_pep508(value, {std::string(source), line, 0});
    if (!requirement) return std::move(requirement).error();
    MetadataRequirement out{.project = specs::canonical_package_name(requirement->name),
                            .extras = {},
                            .spec = requirement->spec,
                            .extra = extra_of(requirement->marker, extras_as_written)};
    for (const auto& extra : requirement->extras)
      out.extras.push_back(specs::canonical_package_name(extra));
    metadata.requires_dist.push_back(std::move(out));
  }
  return metadata;
}

Result<PypiJaxImport> import_pypi_jax(const PypiImportOptions& options) {
  if (!options.fetch) return Error::internal("import_pypi_jax: no fetch function");
  return JaxImporter(options).run();
}

}  // namespace envkit::recipes
