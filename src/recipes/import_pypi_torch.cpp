#include "envkit/recipes/import_pypi_torch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/recipes/import_frameworks.hpp"
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

bool manylinux_x86_64(const WheelFilename& wheel) {
  return binary_wheel_platform(wheel) == specs::Platform::linux_x86_64;
}

// A patch release on the index, with the wheel whose metadata speaks for it.
struct PatchOnIndex {
  std::string version;  // as the wheel names it
  const IndexFile* wheel = nullptr;
  std::pair<bool, unsigned> rank{false, 0};  // (metadata advertised, CPython minor)
};

bool is_patch_of(const specs::Version& version, const specs::Version& minor) {
  const auto& release = version.release();
  return !version.is_prerelease() && !version.is_postrelease() && !version.has_local() &&
         release.size() == 3 && release[0] == minor.major() && release[1] == minor.minor();
}

// Offers `file` as the wheel read for its patch: a manylinux x86_64 CPython wheel, one whose
// metadata the page advertises (PEP 658) first, then the newest CPython. Pages that advertise
// none (PyPI's HTML without data-core-metadata) still get one wheel asked for its metadata.
void offer_wheel(PatchOnIndex& patch, const IndexFile& file, const WheelFilename& wheel) {
  const auto cpython = cpython_minor(wheel);
  if (!cpython || !manylinux_x86_64(wheel)) return;
  const std::pair rank{file.has_metadata, *cpython};
  if (patch.wheel == nullptr || rank > patch.rank) {
    patch.wheel = &file;
    patch.rank = rank;
  }
}

// The final patch releases of `minor` that have a file not yanked, oldest first.
using Releases = std::map<specs::Version, std::vector<IndexWheel>>;

std::map<specs::Version, PatchOnIndex> patches_of(const specs::Version& minor,
                                                  const Releases& releases) {
  std::map<specs::Version, PatchOnIndex> patches;
  for (const auto& [version, wheels] : releases) {
    if (!is_patch_of(version, minor)) continue;
    auto& patch = patches[version];
    patch.version = wheels.front().wheel.version;
    for (const auto& [file, wheel] : wheels)
      offer_wheel(patch, *file, wheel);
  }
  return patches;
}

// The pins of `wheel`'s PEP 658 metadata; nullopt when the index serves none (404, 410).
Result<std::optional<TorchWheelPins>> read_pins(const PypiImportOptions& options,
                                                const IndexFile& wheel) {
  auto metadata = fetch_core_metadata(options, wheel);
  if (!metadata) return std::move(metadata).error();
  if (!*metadata) return std::optional<TorchWheelPins>{};
  return std::optional(parse_torch_wheel_pins(**metadata));
}

// ---------------------------------------------------------------- the overlay

// Gives the build made for the wheel's CUDA what the wheel pins; returns its id.
std::optional<std::string> apply_pins(RecipeVersion& version, const TorchWheelPins& pins) {
  const auto id = pins.cuda_runtime ? cuda_build_id(*pins.cuda_runtime) : std::nullopt;
  if (!id) return std::nullopt;
  const auto build = std::find_if(version.builds.begin(), version.builds.end(),
                                  [&](const Build& b) { return b.id == *id; });
  if (build == version.builds.end()) return std::nullopt;
  build->tested["cuda"] = *pins.cuda_runtime;
  build->wheel_index = std::string(kPypiIndex);
  if (pins.cudnn) {
    if (auto cudnn = specs::Version::parse(*pins.cudnn)) {
      build->tested["cudnn"] = *pins.cudnn;
      build->requires_["cudnn"] = cudnn_series_spec(*cudnn);
    }
  }
  return id;
}

RecipeVersion patch_version(const RecipeVersion& minor, const specs::Version& patch) {
  RecipeVersion version = minor;
  version.version = patch;
  version.release_date.reset();  // the minor's date is not the patch's
  return version;
}

std::string unpinned_note(const TorchPatch& patch) {
  const std::string why = patch.wheel.empty() ? "no manylinux x86_64 CPython wheel on the index"
                          : !patch.metadata_read
                              ? "the index serves no metadata of " + patch.wheel
                              : patch.wheel + " pins no CUDA runtime of a build of " + patch.minor;
  return fmt::format("torch {}: {}; builds copied from {} unrefined", patch.version, why,
                     patch.minor);
}

Result<void> refine_minor(const RecipeVersion& minor, const Releases& releases,
                          const PypiImportOptions& options, PypiTorchImport& result) {
  const auto patches = patches_of(minor.version, releases);
  if (patches.empty()) return {};
  for (const auto& [parsed, on_index] : patches) {
    TorchPatch patch{.version = on_index.version, .minor = minor.version.original()};
    RecipeVersion version = patch_version(minor, parsed);
    if (on_index.wheel != nullptr) {
      auto pins = read_pins(options, *on_index.wheel);
      if (!pins) return std::move(pins).error();
      ++result.metadata_fetched;
      patch.wheel = on_index.wheel->filename;
      patch.metadata_read = pins->has_value();
      patch.pins = pins->value_or(TorchWheelPins{});
      patch.build_id = apply_pins(version, patch.pins);
    }
    if (!patch.build_id) result.torch.sources.push_back(unpinned_note(patch));
    result.torch.versions.push_back(std::move(version));
    result.patches.push_back(std::move(patch));
  }
  result.torch.replaces.push_back(minor.version.original());
  return {};
}

bool states_python(const RecipeVersion& version) {
  return std::any_of(version.builds.begin(), version.builds.end(),
                     [](const Build& build) { return build.requires_.contains("python"); });
}

// The tables give no Python range before torch 1.12: the CPython tags of each release's
// wheels do. Returns how many versions got one.
std::size_t add_python_ranges(const Recipe& torch, const Releases& releases, Recipe& overlay) {
  std::size_t added = 0;
  for (const auto& version : torch.versions) {
    if (version.version.release().size() != 3 || states_python(version)) continue;
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
    overlay.versions.push_back(std::move(ranged));
    ++added;
  }
  return added;
}

}  // namespace

TorchWheelPins parse_torch_wheel_pins(std::string_view metadata) {
  TorchWheelPins pins;
  for (auto line : text::split(metadata, '\n')) {
    line = text::trim(line);
    if (line.empty()) break;  // the headers end at the first blank line; the description follows
    if (!text::starts_with_icase(line, "Requires-Dist:")) continue;
    const auto pin = exact_pin(line.substr(line.find(':') + 1));
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
  PypiTorchImport result;
  result.torch.name = torch.name.empty() ? std::string(kProject) : torch.name;
  auto files = fetch_listed_project_files(options, kProject);
  if (!files) return std::move(files).error();
  const auto releases = wheels_by_release(*files);
  for (const auto& minor : torch.versions) {
    if (minor.version.release().size() != 2) continue;
    if (auto refined = refine_minor(minor, releases, options, result); !refined) {
      return refined.error();
    }
  }
  if (const auto ranged = add_python_ranges(torch, releases, result.torch); ranged > 0) {
    result.python_ranges = ranged;
    result.torch.sources.push_back(fmt::format(
        "Python ranges of releases the tables give none (before 1.12): the CPython tags of "
        "their wheels on {}",
        url::redacted(options.index_url)));
  }
  if (!result.torch.versions.empty()) {
    result.torch.sources.push_back(fmt::format(
        "patch releases and CUDA/cuDNN pins: {} ({} wheels' PEP 658 metadata, Requires-Dist)",
        url::redacted(options.index_url), kProject));
  }
  canonicalize(result.torch);
  return result;
}

}  // namespace envkit::recipes
