#include "envkit/recipes/import_nvidia_redist.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "envkit/core/text.hpp"

namespace envkit::recipes {

namespace nvidia {

std::optional<specs::Platform> envkit_platform(std::string_view nvidia_platform) {
  if (nvidia_platform == "linux-x86_64") return specs::Platform::linux_x86_64;
  if (nvidia_platform == "linux-sbsa") return specs::Platform::linux_aarch64;
  if (nvidia_platform == "windows-x86_64") return specs::Platform::windows_x86_64;
  return std::nullopt;
}

std::optional<std::string> archive_format(std::string_view file_name) {
  // Longest first, so `x.tar.xz` is tar.xz and not xz.
  constexpr std::array<std::string_view, 7> kFormats = {"tar.xz", "tar.gz", "tar.bz2", "tgz",
                                                        "zip",    "whl",    "run"};
  for (auto format : kFormats) {
    if (file_name.ends_with(fmt::format(".{}", format))) return std::string(format);
  }
  return std::nullopt;
}

std::optional<std::string> normalize_sha256(std::string_view text) {
  if (text.size() != 64) return std::nullopt;
  const bool all_hex = std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  });
  if (!all_hex) return std::nullopt;
  return text::to_lower(text);
}

std::string provenance(std::string_view file) {
  const auto name_start = file.find_last_of("/\\");
  if (name_start == std::string_view::npos) return std::string(file);
  const auto folder_start = file.substr(0, name_start).find_last_of("/\\");
  const auto from = folder_start == std::string_view::npos ? 0 : folder_start + 1;
  return std::string(file.substr(from));
}

specs::VersionSpec cuda_major_range(std::uint64_t major) {
  return specs::VersionSpec::parse(fmt::format(">={},<{}", major, major + 1)).value();
}

void add_cudnn_runtime_requirements(Build& build, const specs::Version& cudnn_version) {
  if (cudnn_version < specs::Version::from_release({8, 3})) return;
  build.requires_.insert_or_assign("zlib", specs::VersionSpec{});
  // cuDNN 9 on Windows needs no zlib; cuDNN 8 on Windows needs zlibwapi, which envkit does not
  // model, so its zlib requirement stays on every platform.
  if (cudnn_version >= specs::Version::from_release({9})) {
    build.requires_only_on.insert_or_assign(
        "zlib", std::vector<specs::Platform>{specs::Platform::linux_x86_64,
                                             specs::Platform::linux_aarch64});
  } else {
    build.requires_only_on.erase("zlib");
  }
}

}  // namespace nvidia

namespace {

using nlohmann::json;

// From CUDA 13 on, nvcc's headers (crt/) and its device compiler (nvvm/) are
// components of their own: without them the prefix's nvcc cannot compile.
constexpr std::array<std::string_view, 13> kCudaDefaultComponents = {
    "cuda_cudart", "cuda_nvcc",   "cuda_crt",     "libnvvm",  "cuda_nvrtc",
    "cuda_cccl",   "cuda_cupti",  "libcublas",    "libcufft", "libcurand",
    "libcusolver", "libcusparse", "libnvjitlink",
};

// What one manifest is being read as.
struct ManifestContext {
  std::string_view file;
  std::string base_url;  // ends with '/'
};

Error input_error(std::string_view file, std::string message) {
  return std::move(Error::input(std::move(message)).at({std::string(file)}));
}

// nlohmann gives the 1-based index of the last byte it read; people want line:column.
SourceLocation location_of_byte(std::string_view text, std::size_t byte, std::string_view file) {
  const auto index = std::min(byte == 0 ? 0 : byte - 1, text.size());
  const auto before = text.substr(0, index);
  const auto line = 1 + std::count(before.begin(), before.end(), '\n');
  const auto line_start = before.find_last_of('\n');
  const auto column = line_start == std::string_view::npos ? index + 1 : index - line_start;
  return {std::string(file), static_cast<int>(line), static_cast<int>(column)};
}

Result<json> parse_json(std::string_view text, std::string_view file) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    // what(): "[json.exception.parse_error.101] parse error at line 1, column 2: <why>"
    std::string_view why = e.what();
    if (const auto colon = why.find(": "); colon != std::string_view::npos) {
      why.remove_prefix(colon + 2);
    }
    return Error::input(fmt::format("malformed JSON: {}", why))
        .at(location_of_byte(text, e.byte, file));
  }
}

std::optional<std::string> string_member(const json& object, std::string_view key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

Result<std::string> product_of(const json& manifest, std::string_view file) {
  if (auto product = string_member(manifest, "release_product")) return *product;
  // CUDA 11.x-12.1.x manifests have no release_product; their components say what they are.
  if (manifest.contains("cuda_cudart")) return std::string("cuda");
  if (manifest.contains("cudnn")) return std::string("cudnn");
  return input_error(file, "missing `release_product` (and no `cuda_cudart` or `cudnn` component)");
}

std::string file_name_of(std::string_view file) {
  const auto slash = file.find_last_of("/\\");
  return std::string(slash == std::string_view::npos ? file : file.substr(slash + 1));
}

Result<std::string> release_label_of(const json& manifest, std::string_view file) {
  if (auto label = string_member(manifest, "release_label")) return *label;
  // Older manifests carry the label only in their file name, as NVIDIA publishes them.
  static const std::regex kFileLabel(R"(redistrib_(.+)\.json)");
  std::smatch match;
  const auto name = file_name_of(file);
  if (std::regex_match(name, match, kFileLabel)) return match[1].str();
  return input_error(file,
                     "missing `release_label` (and the file is not named redistrib_<label>.json)");
}

Result<specs::Version> parse_version(std::string_view text, std::string_view what,
                                     std::string_view file) {
  auto version = specs::Version::parse(text);
  if (!version) {
    return input_error(file, fmt::format("{} {} is not a version", what, text::quoted(text)));
  }
  return std::move(version).value();
}

// One archive as the manifest lists it, before it is placed in a build.
struct RedistEntry {
  std::optional<std::uint64_t> cuda_major;  // cuDNN's per-CUDA-major variants
  Artifact artifact;
};

Result<std::optional<std::uint64_t>> parse_size(const json& entry, std::string_view where,
                                                std::string_view file) {
  const auto it = entry.find("size");
  if (it == entry.end()) return std::optional<std::uint64_t>{};
  if (it->is_number_unsigned()) return std::optional<std::uint64_t>{it->get<std::uint64_t>()};
  const std::string text = it->is_string() ? it->get<std::string>() : it->dump();
  std::uint64_t size = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), size);
  if (error != std::errc() || end != text.data() + text.size()) {
    return input_error(file, fmt::format("{}: size {} is not a number of bytes", where, text));
  }
  return std::optional<std::uint64_t>{size};
}

Result<Artifact> read_artifact(const json& entry, std::string_view component,
                               specs::Platform platform, const ManifestContext& context) {
  const auto where = fmt::format("{} {}", component, specs::to_string(platform));
  const auto relative_path = string_member(entry, "relative_path");
  if (!relative_path) return input_error(context.file, fmt::format("{}: no relative_path", where));
  const auto sha256 = nvidia::normalize_sha256(string_member(entry, "sha256").value_or(""));
  if (!sha256) {
    return input_error(context.file, fmt::format("{}: sha256 {} is not 64 hex digits", where,
                                                 text::quoted(entry.value("sha256", ""))));
  }
  const auto format = nvidia::archive_format(*relative_path);
  if (!format) {
    return input_error(context.file,
                       fmt::format("{}: unknown archive format of {}", where, *relative_path));
  }
  auto size = parse_size(entry, where, context.file);
  if (!size) return std::move(size).error();
  return Artifact{
      .platform = platform,
      .component = std::string(component),
      .kind = ArtifactKind::archive,
      .url = context.base_url + *relative_path,
      .sha256 = *sha256,
      .size = *size,
      .format = *format,
      .layout = Layout::nvidia_redist,
  };
}

// `_cuda12-archive` / `_cuda11.6-archive` in an archive's name: the CUDA major it was built for.
std::optional<std::uint64_t> cuda_major_in_name(std::string_view relative_path) {
  static const std::regex kVariant(R"(_cuda(\d+)(\.\d+)?-archive)");
  std::match_results<std::string_view::const_iterator> match;
  if (!std::regex_search(relative_path.begin(), relative_path.end(), match, kVariant)) {
    return std::nullopt;
  }
  return std::stoull(match[1].str());
}

// A variant key under a platform: `cuda12` -> 12.
std::optional<std::uint64_t> cuda_major_of_key(std::string_view key) {
  if (!key.starts_with("cuda") || key.size() == 4) return std::nullopt;
  std::uint64_t major = 0;
  const auto digits = key.substr(4);
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), major);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return major;
}

// The archives of one component on one platform: one directly, or one per CUDA variant.
Result<std::vector<RedistEntry>> read_platform(const json& platform_entry,
                                               std::string_view component, specs::Platform platform,
                                               const ManifestContext& context) {
  std::vector<RedistEntry> entries;
  if (platform_entry.contains("relative_path")) {
    auto artifact = read_artifact(platform_entry, component, platform, context);
    if (!artifact) return std::move(artifact).error();
    const auto major = cuda_major_in_name(artifact->url);
    entries.push_back({major, std::move(artifact).value()});
    return entries;
  }
  for (const auto& [key, variant] : platform_entry.items()) {
    const auto major = cuda_major_of_key(key);
    if (!major || !variant.is_object()) {
      return input_error(context.file, fmt::format("{} {}: unknown variant {}", component,
                                                   specs::to_string(platform), text::quoted(key)));
    }
    auto artifact = read_artifact(variant, component, platform, context);
    if (!artifact) return std::move(artifact).error();
    entries.push_back({major, std::move(artifact).value()});
  }
  return entries;
}

// Every archive of every component on the platforms envkit serves.
Result<std::vector<RedistEntry>> read_entries(const json& manifest,
                                              const ManifestContext& context) {
  std::vector<RedistEntry> entries;
  for (const auto& [component, body] : manifest.items()) {
    if (!body.is_object()) continue;  // release_date, release_label, release_product
    for (const auto& [platform_name, platform_entry] : body.items()) {
      if (!platform_entry.is_object()) continue;  // name, license, version, cuda_variant
      const auto platform = nvidia::envkit_platform(platform_name);
      if (!platform) continue;
      auto found = read_platform(platform_entry, component, *platform, context);
      if (!found) return std::move(found).error();
      entries.insert(entries.end(), found->begin(), found->end());
    }
  }
  return entries;
}

std::vector<specs::Platform> platforms_of(const std::vector<Artifact>& artifacts,
                                          std::string_view main_component) {
  std::vector<specs::Platform> platforms;
  for (const auto& artifact : artifacts) {
    if (artifact.component == main_component &&
        std::find(platforms.begin(), platforms.end(), artifact.platform) == platforms.end()) {
      platforms.push_back(artifact.platform);
    }
  }
  std::sort(platforms.begin(), platforms.end());
  return platforms;
}

Result<std::vector<Component>> components_of(const json& manifest, std::string_view file) {
  std::vector<Component> components;
  for (const auto& [name, body] : manifest.items()) {
    if (!body.is_object()) continue;
    auto version = string_member(body, "version");
    if (!version) return input_error(file, fmt::format("component `{}` has no version", name));
    components.push_back({name, *version});
  }
  return components;
}

Result<Recipe> cuda_recipe(const json& manifest, std::vector<RedistEntry> entries,
                           std::string_view file) {
  auto label = release_label_of(manifest, file);
  if (!label) return std::move(label).error();
  auto version = parse_version(*label, "release label", file);
  if (!version) return std::move(version).error();
  auto components = components_of(manifest, file);
  if (!components) return std::move(components).error();

  Build build;
  for (auto& entry : entries) {
    if (entry.cuda_major) {
      return input_error(
          file, fmt::format("{}: per-CUDA variants in a CUDA manifest", entry.artifact.component));
    }
    build.artifacts.push_back(std::move(entry.artifact));
  }
  build.platforms = platforms_of(build.artifacts, "cuda_cudart");

  Recipe recipe{.name = "cuda", .sources = {nvidia::provenance(file)}};
  for (auto name : kCudaDefaultComponents) {
    if (manifest.contains(name)) recipe.default_components.emplace_back(name);
  }
  recipe.versions.push_back({
      .version = std::move(version).value(),
      .release_date = string_member(manifest, "release_date"),
      .components = std::move(components).value(),
      .builds = {std::move(build)},
  });
  canonicalize(recipe);
  return recipe;
}

std::string cudnn_build_id(std::optional<std::uint64_t> cuda_major) {
  return cuda_major ? fmt::format("cuda{}", *cuda_major) : std::string();
}

Result<Recipe> cudnn_recipe(const json& manifest, std::vector<RedistEntry> entries,
                            std::string_view file) {
  const auto cudnn = manifest.find("cudnn");
  if (cudnn == manifest.end() || !cudnn->is_object()) {
    return input_error(file, "a cudnn manifest without a `cudnn` component");
  }
  const auto version_text = string_member(*cudnn, "version");
  if (!version_text) return input_error(file, "component `cudnn` has no version");
  auto version = parse_version(*version_text, "cudnn version", file);
  if (!version) return std::move(version).error();

  std::map<std::optional<std::uint64_t>, Build> builds;
  for (auto& entry : entries) {
    builds[entry.cuda_major].artifacts.push_back(std::move(entry.artifact));
  }
  RecipeVersion recipe_version{.version = std::move(version).value(),
                               .release_date = string_member(manifest, "release_date")};
  for (auto& [cuda_major, build] : builds) {
    build.id = cudnn_build_id(cuda_major);
    if (cuda_major) build.requires_.emplace("cuda", nvidia::cuda_major_range(*cuda_major));
    nvidia::add_cudnn_runtime_requirements(build, recipe_version.version);
    build.platforms = platforms_of(build.artifacts, "cudnn");
    recipe_version.builds.push_back(std::move(build));
  }

  Recipe recipe{
      .name = "cudnn", .sources = {nvidia::provenance(file)}, .default_components = {"cudnn"}};
  recipe.versions.push_back(std::move(recipe_version));
  canonicalize(recipe);
  return recipe;
}

std::string base_url_for(std::string_view product, const RedistOptions& options) {
  if (!options.base_url) {
    return fmt::format("https://developer.download.nvidia.com/compute/{}/redist/", product);
  }
  std::string_view base = *options.base_url;
  while (base.ends_with('/'))
    base.remove_suffix(1);
  return fmt::format("{}/", base);
}

}  // namespace

Result<Recipe> import_nvidia_redist(std::string_view json_text, std::string_view file,
                                    const RedistOptions& options) {
  auto manifest = parse_json(json_text, file);
  if (!manifest) return std::move(manifest).error();
  if (!manifest->is_object())
    return input_error(file, "a redistrib manifest must be a JSON object");
  auto product = product_of(*manifest, file);
  if (!product) return std::move(product).error();
  if (*product != "cuda" && *product != "cudnn") {
    return input_error(
        file, fmt::format("release_product {} is not `cuda` or `cudnn`", text::quoted(*product)));
  }

  const ManifestContext context{.file = file, .base_url = base_url_for(*product, options)};
  auto entries = read_entries(*manifest, context);
  if (!entries) return std::move(entries).error();
  if (*product == "cuda") return cuda_recipe(*manifest, std::move(entries).value(), file);
  return cudnn_recipe(*manifest, std::move(entries).value(), file);
}

}  // namespace envkit::recipes
