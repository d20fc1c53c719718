#include "envkit/recipes/import_pypi_torch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/project/marker.hpp"
#include "envkit/recipes/import_frameworks.hpp"
#include "envkit/recipes/import_pypi_jax.hpp"
#include "envkit/specs/package_name.hpp"

namespace envkit::recipes {

namespace {

constexpr std::string_view kProject = "torch";

// ---------------------------------------------------------------- METADATA

// `nvidia-cudnn-cu12` and (CUDA 13 names) `nvidia-cuda-runtime` both match `nvidia-cudnn`.
bool is_project(std::string_view name, std::string_view stem) {
  if (name == stem) return true;
  if (!name.starts_with(stem)) return false;
  const auto suffix = name.substr(stem.size());
  return suffix.size() > 3 && suffix.starts_with("-cu") &&
         std::all_of(suffix.begin() + 3, suffix.end(), [](char c) { return c >= '0' && c <= '9'; });
}

struct Pin {
  std::string project;  // normalized
  std::string extras;   // `cublas,cudart` of `cuda-toolkit[cublas,cudart]`
  std::string version;
};

// One requirement (`nvidia-cudnn-cu12 (==8.9.2.26) ; platform_system == "Linux"`), when
// it pins an exact version.
std::optional<Pin> exact_pin(std::string_view requirement) {
  std::string compact;
  for (char c : requirement.substr(0, requirement.find(';'))) {
    if (c != ' ' && c != '\t' && c != '(' && c != ')') compact += c;
  }
  const std::string_view rest(compact);
  const auto name_end = rest.find_first_of("=<>!~[");
  if (name_end == std::string_view::npos) return std::nullopt;
  Pin pin{.project = specs::canonical_package_name(rest.substr(0, name_end))};
  auto op = name_end;
  if (rest[name_end] == '[') {
    op = rest.find(']', name_end);
    if (op == std::string_view::npos) return std::nullopt;
    pin.extras = text::to_lower(rest.substr(name_end + 1, op - name_end - 1));
    ++op;
  }
  const auto version = rest.substr(op);
  if (!version.starts_with("==") || version.size() == 2 ||
      version.find_first_of(",*=", 2) != std::string_view::npos) {
    return std::nullopt;
  }
  pin.version = std::string(version.substr(2));
  return pin;
}

bool has_extra(const Pin& pin, std::string_view extra) {
  const auto extras = text::split(pin.extras, ',');
  return std::find(extras.begin(), extras.end(), extra) != extras.end();
}

// ---------------------------------------------------------------- the index

using specs::Platform;

// The wheel of a release whose metadata speaks for it on one platform.
struct WheelOnIndex {
  const IndexFile* file = nullptr;
  std::pair<bool, unsigned> rank{false, 0};  // (metadata advertised, CPython minor)
};

// A patch release on the index: its wheels, and the one per platform whose metadata is read.
struct PatchOnIndex {
  std::string version;  // as the wheel names it
  std::vector<IndexWheel> wheels;
  WheelOnIndex x86_64;
  WheelOnIndex aarch64;
  WheelOnIndex windows;
};

// A patch release: final, major.minor.patch.
bool is_final_patch(const specs::Version& version) {
  return is_final_release(version) && version.release().size() == 3;
}

bool is_patch_of(const specs::Version& version, const specs::Version& minor) {
  const auto& release = version.release();
  return is_final_patch(version) && release[0] == minor.major() && release[1] == minor.minor();
}

// Offers `file` as the wheel read for its platform: a manylinux CPython wheel, one whose
// metadata the page advertises (PEP 658) first, then the newest CPython. Pages that advertise
// none (PyPI's HTML without data-core-metadata) still get one wheel asked for its metadata.
void offer_wheel(PatchOnIndex& patch, const IndexFile& file, const WheelFilename& wheel) {
  const auto cpython = cpython_minor(wheel);
  const auto platform = binary_wheel_platform(wheel);
  if (!cpython || !platform) return;
  auto& slot = *platform == Platform::linux_x86_64    ? patch.x86_64
               : *platform == Platform::linux_aarch64 ? patch.aarch64
                                                      : patch.windows;
  const std::pair rank{file.has_metadata, *cpython};
  if (slot.file == nullptr || rank > slot.rank) slot = {&file, rank};
}

using Releases = std::map<specs::Version, std::vector<IndexWheel>>;

PatchOnIndex patch_on_index(const std::vector<IndexWheel>& wheels) {
  PatchOnIndex patch{.version = wheels.front().wheel.version, .wheels = wheels};
  for (const auto& [file, wheel] : wheels)
    offer_wheel(patch, *file, wheel);
  return patch;
}

// ---------------------------------------------------------------- a release's metadata

// What the METADATA of the wheel that speaks for a release says.
struct ReleaseMetadata {
  TorchWheelPins pins;
  std::string requires_python;
};

// The metadata of `wheel` (PEP 658, else out of the wheel); nullopt when the index has
// neither. METADATA that names another project or version than the file is a problem
// (the release is left out), as is one that does not parse.
Result<std::optional<ReleaseMetadata>> read_metadata(const PypiImportOptions& options,
                                                     const IndexFile& wheel,
                                                     std::string_view version,
                                                     std::vector<std::string>& problems,
                                                     Platform platform) {
  auto text = fetch_wheel_metadata(options, wheel);
  if (!text) return std::move(text).error();
  if (!*text) return std::optional<ReleaseMetadata>{};
  auto parsed = parse_wheel_metadata(**text, wheel.filename);
  if (!parsed) {
    problems.push_back(fmt::format("torch {}: {}; left out", version, parsed.error().message()));
    return std::optional<ReleaseMetadata>{};
  }
  const auto stated = specs::Version::parse(parsed->version);
  const auto named = specs::Version::parse(version);
  if (specs::canonical_package_name(parsed->name) != kProject || !stated || !named ||
      *stated != *named) {
    problems.push_back(fmt::format(
        "torch {}: the METADATA of {} names {} {}, not what its file name says; left out", version,
        url::redacted(wheel.url), text::quoted(parsed->name), text::quoted(parsed->version)));
    return std::optional<ReleaseMetadata>{};
  }
  return std::optional(ReleaseMetadata{parse_torch_wheel_pins(**text, platform),
                                       std::move(parsed->requires_python)});
}

// ---------------------------------------------------------------- builds

// Gives the build made for the wheel's CUDA what the wheel pins; returns its id. The
// aarch64 wheel speaks for the tables' `<id>-aarch64` build where they have one (their
// arch lists differ), else for `<id>` where that lists linux-aarch64.
std::optional<std::string> apply_pins(RecipeVersion& version, const TorchWheelPins& pins,
                                      Platform platform = Platform::linux_x86_64) {
  const auto id = pins.cuda_runtime ? cuda_build_id(*pins.cuda_runtime) : std::nullopt;
  if (!id) return std::nullopt;
  const auto named = [&](const std::string& wanted) {
    return std::find_if(version.builds.begin(), version.builds.end(),
                        [&](const Build& b) { return b.id == wanted; });
  };
  auto build = named(*id);
  if (platform == Platform::linux_aarch64) {
    if (const auto arm = named(*id + "-aarch64"); arm != version.builds.end()) {
      build = arm;
    } else if (build != version.builds.end() &&
               std::find(build->platforms.begin(), build->platforms.end(), platform) ==
                   build->platforms.end()) {
      build = version.builds.end();
    }
  }
  if (build == version.builds.end()) return std::nullopt;
  build->tested["cuda"] = *pins.cuda_runtime;
  build->wheel_index = std::string(kPypiIndex);
  if (pins.cudnn) {
    if (auto cudnn = specs::Version::parse(*pins.cudnn)) {
      build->tested["cudnn"] = *pins.cudnn;
      build->requires_["cudnn"] = cudnn_series_spec(*cudnn);
    }
  }
  return build->id;
}

// The index serves build `id` on Linux; where the tables list Windows for it too but the
// Windows wheel pins another CUDA or none (PyPI's Windows wheels are CPU builds), Windows is
// split off into `<id>-windows`, which only PyTorch's own index serves.
void split_windows(RecipeVersion& version, const std::string& id,
                   const std::optional<TorchWheelPins>& windows) {
  const auto build = std::find_if(version.builds.begin(), version.builds.end(),
                                  [&](const Build& b) { return b.id == id; });
  if (build == version.builds.end()) return;
  auto& platforms = build->platforms;
  const auto on_windows = std::find(platforms.begin(), platforms.end(), Platform::windows_x86_64);
  if (on_windows == platforms.end()) return;
  const auto windows_id =
      windows && windows->cuda_runtime ? cuda_build_id(*windows->cuda_runtime) : std::nullopt;
  if (windows_id == id) return;
  platforms.erase(on_windows);
  Build split = *build;
  split.id = id + "-windows";
  split.platforms = {Platform::windows_x86_64};
  split.wheel_index.clear();
  split.min_glibc.clear();
  version.builds.push_back(std::move(split));
}

bool lists_windows(const RecipeVersion& version, std::string_view id) {
  return std::any_of(version.builds.begin(), version.builds.end(), [&](const Build& b) {
    return b.id == id && std::find(b.platforms.begin(), b.platforms.end(),
                                   Platform::windows_x86_64) != b.platforms.end();
  });
}

// The Python a release installs on: its Requires-Python within the range of its Linux
// CPython wheels' tags (2.15.0: >=3.11 and cp311 … cp315 -> >=3.11,<3.16).
Result<specs::VersionSpec> python_of(const ReleaseMetadata& metadata,
                                     const std::vector<IndexWheel>& wheels) {
  std::vector<WheelFilename> linux;
  for (const auto& [file, wheel] : wheels) {
    const auto platform = binary_wheel_platform(wheel);
    if (platform && *platform != Platform::windows_x86_64) linux.push_back(wheel);
  }
  specs::VersionSpec range = cpython_range(linux).value_or(specs::VersionSpec{});
  if (metadata.requires_python.empty()) return range;
  auto stated = specs::VersionSpec::parse(metadata.requires_python);
  if (!stated) {
    return Error::input(fmt::format("its Requires-Python {} does not parse",
                                    text::quoted(metadata.requires_python)))
        .because(stated.error().message());
  }
  range = range & *stated;
  // A Requires-Python no CPython of its wheels meets installs nowhere.
  std::set<unsigned> minors;
  for (const auto& wheel : linux) {
    if (const auto minor = cpython_minor(wheel)) minors.insert(*minor);
  }
  const bool admitted = std::any_of(minors.begin(), minors.end(), [&](unsigned minor) {
    return range.contains(specs::Version::parse(fmt::format("3.{}", minor)).value());
  });
  if (!minors.empty() && !admitted) {
    std::vector<std::string> tagged;
    for (const auto minor : minors)
      tagged.push_back(fmt::format("3.{}", minor));
    return Error::input(
        fmt::format("its Requires-Python {} admits none of the CPythons its wheels are for ({})",
                    text::quoted(metadata.requires_python), text::join(tagged, ", ")));
  }
  return range;
}

// The lowest glibc the manylinux wheels of `platform` need.
std::optional<specs::Version> glibc_of(const std::vector<IndexWheel>& wheels, Platform platform) {
  std::optional<std::pair<unsigned, unsigned>> lowest;
  for (const auto& [file, wheel] : wheels) {
    const auto glibc = manylinux_glibc(wheel);
    if (binary_wheel_platform(wheel) == platform && glibc && (!lowest || *glibc < *lowest))
      lowest = glibc;
  }
  if (!lowest) return std::nullopt;
  return specs::Version::parse(fmt::format("{}.{}", lowest->first, lowest->second)).value();
}

std::optional<std::uint64_t> cuda_major_of(const TorchWheelPins& pins) {
  if (!pins.cuda_runtime) return std::nullopt;
  const auto runtime = specs::Version::parse(*pins.cuda_runtime);
  if (!runtime) return std::nullopt;
  return runtime->major();
}

// A build made from a release's wheels where the tables have none of its CUDA: the CUDA
// series its x86_64 wheel pins (cuda_series_spec), the cuDNN series, the Python of its
// tags and Requires-Python, the glibc of its manylinux tags; linux-aarch64 too where that
// wheel pins the same CUDA. nullopt when the wheel pins no CUDA runtime.
Result<std::optional<Build>> wheel_build(const PatchOnIndex& patch, const ReleaseMetadata& x86_64,
                                         const std::optional<ReleaseMetadata>& aarch64,
                                         std::vector<std::string>& problems) {
  const auto id =
      x86_64.pins.cuda_runtime ? cuda_build_id(*x86_64.pins.cuda_runtime) : std::nullopt;
  if (!id) return std::optional<Build>{};
  Build build{.id = *id};
  const auto runtime = specs::Version::parse(*x86_64.pins.cuda_runtime).value();
  build.requires_["cuda"] = cuda_series_spec(runtime);
  build.tested["cuda"] = *x86_64.pins.cuda_runtime;
  if (x86_64.pins.cudnn) {
    if (auto cudnn = specs::Version::parse(*x86_64.pins.cudnn)) {
      build.requires_["cudnn"] = cudnn_series_spec(*cudnn);
      build.tested["cudnn"] = *x86_64.pins.cudnn;
    }
  }
  auto python = python_of(x86_64, patch.wheels);
  if (!python) {
    problems.push_back(
        fmt::format("torch {}: {}; left out", patch.version, python.error().message()));
    return std::optional<Build>{};
  }
  if (!python->empty()) build.requires_["python"] = *python;
  build.platforms = {Platform::linux_x86_64};
  if (aarch64) {
    const auto arm_id =
        aarch64->pins.cuda_runtime ? cuda_build_id(*aarch64->pins.cuda_runtime) : std::nullopt;
    if (arm_id == id) {
      build.platforms.push_back(Platform::linux_aarch64);
    } else if (arm_id && cuda_major_of(aarch64->pins) != cuda_major_of(x86_64.pins)) {
      problems.push_back(fmt::format(
          "torch {}: its wheels pin two CUDA majors (x86_64 {}, aarch64 {}); linux-aarch64 "
          "left out",
          patch.version, *x86_64.pins.cuda_runtime, *aarch64->pins.cuda_runtime));
    }
  }
  for (const auto platform : build.platforms) {
    if (auto glibc = glibc_of(patch.wheels, platform)) build.min_glibc.emplace(platform, *glibc);
  }
  build.wheel_index = std::string(kPypiIndex);
  return std::optional(std::move(build));
}

RecipeVersion patch_version(const RecipeVersion& minor, const specs::Version& patch) {
  RecipeVersion version = minor;
  version.version = patch;
  version.release_date.reset();  // the minor's date is not the patch's
  return version;
}

std::string unpinned_note(const TorchPatch& patch) {
  const std::string why = patch.wheel.empty()    ? "no manylinux x86_64 CPython wheel on the index"
                          : !patch.metadata_read ? "the index serves no metadata of " + patch.wheel
                                                 : patch.wheel + " pins no CUDA runtime";
  return patch.minor.empty() ? fmt::format("torch {}: {}; left out", patch.version, why)
                             : fmt::format("torch {}: {}; builds copied from {} unrefined",
                                           patch.version, why, patch.minor);
}

// ---------------------------------------------------------------- the import

class TorchImporter {
 public:
  TorchImporter(const Recipe& tables, const PypiImportOptions& options)
      : tables_(tables), options_(options) {}

  Result<PypiTorchImport> run() {
    result_.torch.name = tables_.name.empty() ? std::string(kProject) : tables_.name;
    auto files = fetch_listed_project_files(options_, kProject);
    if (!files) return std::move(files).error();
    const auto releases = wheels_by_release(*files);
    for (const auto& minor : tables_.versions) {
      if (minor.version.release().size() != 2) continue;
      if (auto refined = refine_minor(minor, releases); !refined) return refined.error();
    }
    if (auto added = add_newer_releases(releases); !added) return added.error();
    if (const auto ranged = add_python_ranges(releases); ranged > 0) {
      result_.python_ranges = ranged;
      result_.torch.sources.push_back(fmt::format(
          "Python ranges of releases the tables give none (before 1.12): the CPython tags of "
          "their wheels on {}",
          url::redacted(options_.index_url)));
    }
    if (!result_.torch.versions.empty()) {
      result_.torch.sources.push_back(
          fmt::format("patch releases and CUDA/cuDNN pins: {} ({} wheels' METADATA, Requires-Dist)",
                      url::redacted(options_.index_url), kProject));
    }
    canonicalize(result_.torch);
    return std::move(result_);
  }

 private:
  // Reads the release's metadata and gives `version` its pinned build: the tables' build of
  // that CUDA, refined, else one made from the wheels.
  Result<TorchPatch> read_patch(TorchPatch patch, const PatchOnIndex& on_index,
                                RecipeVersion& version) {
    if (on_index.x86_64.file == nullptr) return patch;
    auto x86_64 = read_metadata(options_, *on_index.x86_64.file, patch.version, result_.problems,
                                Platform::linux_x86_64);
    if (!x86_64) return std::move(x86_64).error();
    ++result_.metadata_fetched;
    patch.wheel = on_index.x86_64.file->filename;
    patch.metadata_read = x86_64->has_value();
    if (!*x86_64) return patch;
    patch.pins = (*x86_64)->pins;
    if (!patch.pins.cuda_runtime) return patch;
    // The tables' build of the pinned CUDA, where they list Windows for it, is PyPI's on
    // Windows only if that wheel pins the same: read it before the build is refined.
    if (const auto id = cuda_build_id(*patch.pins.cuda_runtime);
        id && lists_windows(version, *id)) {
      auto windows = windows_pins(on_index, patch.version);
      if (!windows) return std::move(windows).error();
      split_windows(version, *id, *windows);
    }
    patch.build_id = apply_pins(version, patch.pins);
    std::optional<ReleaseMetadata> aarch64;
    if (on_index.aarch64.file != nullptr) {
      auto read = read_metadata(options_, *on_index.aarch64.file, patch.version, result_.problems,
                                Platform::linux_aarch64);
      if (!read) return std::move(read).error();
      ++result_.metadata_fetched;
      aarch64 = *std::move(read);
    }
    if (patch.build_id) {
      if (aarch64) (void)apply_pins(version, aarch64->pins, Platform::linux_aarch64);
      return patch;
    }
    auto build = wheel_build(on_index, **x86_64, aarch64, result_.problems);
    if (!build) return std::move(build).error();
    if (*build) {
      patch.build_id = (*build)->id;
      patch.from_wheels = true;
      version.builds.push_back(**std::move(build));
    }
    return patch;
  }

  // What the release's Windows wheel pins; nullopt when it has none or pins no CUDA (PyPI's
  // Windows wheels are CPU builds).
  Result<std::optional<TorchWheelPins>> windows_pins(const PatchOnIndex& on_index,
                                                     std::string_view version) {
    if (on_index.windows.file == nullptr) return std::optional<TorchWheelPins>{};
    auto read = read_metadata(options_, *on_index.windows.file, version, result_.problems,
                              Platform::windows_x86_64);
    if (!read) return std::move(read).error();
    ++result_.metadata_fetched;
    if (!*read || !(*read)->pins.cuda_runtime) return std::optional<TorchWheelPins>{};
    return std::optional((*read)->pins);
  }

  void keep(TorchPatch patch, RecipeVersion version) {
    if (!patch.build_id) result_.torch.sources.push_back(unpinned_note(patch));
    if (!version.builds.empty()) result_.torch.versions.push_back(std::move(version));
    result_.patches.push_back(std::move(patch));
  }

  Result<void> refine_minor(const RecipeVersion& minor, const Releases& releases) {
    bool refined = false;
    for (const auto& [parsed, wheels] : releases) {
      if (!is_patch_of(parsed, minor.version)) continue;
      refined = true;  // a release the index has: the minor-keyed version goes
      if (options_.is_known(kProject, parsed)) continue;
      const auto on_index = patch_on_index(wheels);
      RecipeVersion version = patch_version(minor, parsed);
      auto patch = read_patch({.version = on_index.version, .minor = minor.version.original()},
                              on_index, version);
      if (!patch) return std::move(patch).error();
      keep(*std::move(patch), std::move(version));
    }
    if (refined) result_.torch.replaces.push_back(minor.version.original());
    return {};
  }

  // Releases newer than every version the tables give: only their wheels speak for them.
  Result<void> add_newer_releases(const Releases& releases) {
    std::optional<specs::Version> newest;
    for (const auto& version : tables_.versions)
      newest = std::max(newest.value_or(version.version), version.version);
    for (const auto& [parsed, wheels] : releases) {
      if (!is_final_patch(parsed) || (newest && parsed.major_minor() <= newest->major_minor()) ||
          options_.is_known(kProject, parsed))
        continue;
      const auto on_index = patch_on_index(wheels);
      RecipeVersion version{.version = parsed};
      auto patch = read_patch({.version = on_index.version}, on_index, version);
      if (!patch) return std::move(patch).error();
      keep(*std::move(patch), std::move(version));
    }
    return {};
  }

  // The tables give no Python range before torch 1.12: the CPython tags of each release's
  // wheels do. Returns how many versions got one.
  std::size_t add_python_ranges(const Releases& releases) {
    std::size_t added = 0;
    for (const auto& version : tables_.versions) {
      if (version.version.release().size() != 3 || states_python(version) ||
          options_.is_known(kProject, version.version))
        continue;
      const auto it = releases.find(version.version);
      if (it == releases.end()) continue;
      std::vector<WheelFilename> binary;
      for (const auto& [file, wheel] : it->second) {
        if (binary_wheel_platform(wheel)) binary.push_back(wheel);
      }
      const auto range = cpython_range(binary);
      if (!range) continue;
      RecipeVersion ranged{.version = version.version};
      for (const auto& build : version.builds) {
        ranged.builds.push_back(Build{.id = build.id, .requires_ = {{"python", *range}}});
      }
      result_.torch.versions.push_back(std::move(ranged));
      ++added;
    }
    return added;
  }

  static bool states_python(const RecipeVersion& version) {
    return std::any_of(version.builds.begin(), version.builds.end(),
                       [](const Build& build) { return build.requires_.contains("python"); });
  }

  const Recipe& tables_;
  const PypiImportOptions& options_;
  PypiTorchImport result_;
};

}  // namespace

TorchWheelPins parse_torch_wheel_pins(std::string_view metadata, specs::Platform platform) {
  TorchWheelPins pins;
  const auto environment = project::cpython_environment(platform);
  for (auto line : text::split(metadata, '\n')) {
    line = text::trim(line);
    if (line.empty()) break;  // the headers end at the first blank line; the description follows
    if (!text::starts_with_icase(line, "Requires-Dist:")) continue;
    const auto requirement = line.substr(line.find(':') + 1);
    if (const auto semicolon = requirement.find(';');
        semicolon != std::string_view::npos &&
        project::evaluate_marker(text::trim(requirement.substr(semicolon + 1)), environment) ==
            project::Truth::no)
      continue;
    const auto pin = exact_pin(requirement);
    if (!pin) continue;
    if (is_project(pin->project, "nvidia-cuda-runtime")) pins.cuda_runtime = pin->version;
    // From torch 2.13 (CUDA 13) the runtime comes with NVIDIA's toolkit meta-package.
    if (pin->project == "cuda-toolkit" && has_extra(*pin, "cudart") && !pins.cuda_runtime) {
      pins.cuda_runtime = pin->version;
    }
    if (is_project(pin->project, "nvidia-cudnn")) pins.cudnn = pin->version;
    if (is_project(pin->project, "nvidia-cublas")) pins.cublas = pin->version;
  }
  return pins;
}

std::optional<std::string> cuda_build_id(std::string_view cuda_runtime) {
  const auto version = specs::Version::parse(cuda_runtime);
  if (!version || version->release().size() < 2) return std::nullopt;
  return fmt::format("cu{}{}", version->major(), version->minor());
}

Result<PypiTorchImport> import_pypi_torch(const Recipe& torch, const PypiImportOptions& options) {
  if (!options.fetch) return Error::internal("import_pypi_torch: no fetch function");
  return TorchImporter(torch, options).run();
}

}  // namespace envkit::recipes
