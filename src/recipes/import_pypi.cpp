#include "envkit/recipes/import_pypi.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <limits>
#include <nlohmann/json.hpp>
#include <tuple>

#include "envkit/archive/zip_member.hpp"
#include "envkit/core/env_vars.hpp"
#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/sys/fs.hpp"

namespace envkit::recipes {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// pip's own Accept header: JSON preferred, HTML understood.
constexpr std::string_view kAcceptHeader =
    "Accept: application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, "
    "text/html; q=0.01";

// ---------------------------------------------------------------- URLs

bool has_scheme(std::string_view ref) {
  const auto colon = ref.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  return std::all_of(ref.begin(), ref.begin() + static_cast<std::ptrdiff_t>(colon), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
  });
}

// Removes "." and ".." segments (RFC 3986 5.2.4) from an absolute path.
std::string remove_dot_segments(std::string_view path) {
  std::vector<std::string_view> kept;
  const auto segments = text::split(path.substr(1), '/');
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const bool last = i + 1 == segments.size();
    if (segments[i] == "..") {
      if (!kept.empty()) kept.pop_back();
      if (last) kept.emplace_back("");
    } else if (segments[i] == ".") {
      if (last) kept.emplace_back("");
    } else {
      kept.push_back(segments[i]);
    }
  }
  std::string out;
  for (auto segment : kept)
    out += "/" + std::string(segment);
  return out.empty() ? "/" : out;
}

// `ref` resolved against `base`, as a browser would (absolute, //host, /path, relative).
std::string resolve_url(std::string_view base, std::string_view ref) {
  if (has_scheme(ref)) return std::string(ref);
  const auto begin = url::authority_begin(base);
  if (begin == std::string_view::npos) return std::string(ref);
  if (ref.starts_with("//")) return std::string(base.substr(0, begin - 2)) + std::string(ref);
  const auto origin_end = url::authority_end(base, begin);
  const auto origin = base.substr(0, origin_end);
  if (ref.starts_with("/")) return std::string(origin) + remove_dot_segments(ref);
  auto path = base.substr(origin_end);
  path = path.substr(0, path.find_first_of("?#"));
  const auto directory = path.substr(0, path.rfind('/') + 1);
  return std::string(origin) +
         remove_dot_segments(std::string(directory.empty() ? "/" : directory) + std::string(ref));
}

// ---------------------------------------------------------------- pip.conf

struct IndexUrlsInConfig {
  std::optional<std::string> global;
  std::optional<std::string> install;
};

// Reads `index-url` (or `index_url`) from the [global] and [install] sections of one INI file.
IndexUrlsInConfig read_pip_config(std::string_view content) {
  IndexUrlsInConfig found;
  std::string section;
  for (auto line : text::split(content, '\n')) {
    if (!line.empty() && (line.front() == ' ' || line.front() == '\t')) continue;  // continuation
    line = text::trim(line);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = text::to_lower(text::trim(line.substr(1, line.size() - 2)));
      continue;
    }
    const auto separator = line.find_first_of("=:");
    if (separator == std::string_view::npos) continue;
    auto key = text::to_lower(text::trim(line.substr(0, separator)));
    std::replace(key.begin(), key.end(), '_', '-');
    if (key != "index-url") continue;
    const std::string value(text::trim(line.substr(separator + 1)));
    if (section == "global") found.global = value;
    if (section == "install") found.install = value;
  }
  return found;
}

// ---------------------------------------------------------------- index pages

bool is_lower_hex(std::string_view text, std::size_t length) {
  return text.size() == length && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// Splits "https://host/x.whl#sha256=abc" into the URL and its hash.
void take_url_and_fragment_hash(std::string_view href, std::string_view page_url, IndexFile& file) {
  const auto hash = href.find('#');
  file.url = url::without_credentials(resolve_url(page_url, href.substr(0, hash)));
  if (hash == std::string_view::npos) return;
  const auto fragment = href.substr(hash + 1);
  const auto equals = fragment.find('=');
  if (equals == std::string_view::npos) return;
  file.hashes.emplace(text::to_lower(fragment.substr(0, equals)),
                      text::to_lower(fragment.substr(equals + 1)));
}

bool metadata_flag(const json& value) {
  if (value.is_boolean()) return value.get<bool>();
  return value.is_object();
}

bool json_yanked(const json& file) {
  const auto it = file.find("yanked");
  if (it == file.end()) return false;
  if (it->is_boolean()) return it->get<bool>();
  return it->is_string();  // a reason means yanked
}

IndexFile json_file(const json& entry, std::string_view page_url) {
  IndexFile file;
  file.filename = entry.at("filename").get<std::string>();
  take_url_and_fragment_hash(entry.at("url").get<std::string>(), page_url, file);
  if (const auto hashes = entry.find("hashes"); hashes != entry.end()) {
    for (const auto& [algorithm, digest] : hashes->items())
      file.hashes.insert_or_assign(text::to_lower(algorithm),
                                   text::to_lower(digest.get<std::string>()));
  }
  if (const auto size = entry.find("size"); size != entry.end() && size->is_number_unsigned())
    file.size = size->get<std::uint64_t>();
  if (const auto uploaded = entry.find("upload-time");
      uploaded != entry.end() && uploaded->is_string())
    file.upload_time = uploaded->get<std::string>();
  file.yanked = json_yanked(entry);
  for (const char* key : {"core-metadata", "data-dist-info-metadata", "dist-info-metadata"}) {
    if (const auto it = entry.find(key); it != entry.end()) file.has_metadata |= metadata_flag(*it);
  }
  return file;
}

Error page_error(std::string_view page_url, std::string cause) {
  return std::move(
      Error::failed("cannot read the index page " + text::quoted(url::redacted(page_url)))
          .because(std::move(cause)));
}

Result<std::vector<IndexFile>> parse_json_page(std::string_view body, std::string_view page_url) {
  try {
    const json page = json::parse(body);
    const auto version = page.at("meta").at("api-version").get<std::string>();
    if (!version.starts_with("1.")) {
      return page_error(page_url, "unsupported simple API version " + version);
    }
    std::vector<IndexFile> files;
    for (const auto& entry : page.at("files"))
      files.push_back(json_file(entry, page_url));
    return files;
  } catch (const json::exception& e) {
    return page_error(page_url, std::string("malformed JSON: ") + e.what());
  }
}

std::string decode_html_entities(std::string_view text) {
  static constexpr std::array<std::pair<std::string_view, char>, 5> kNamed = {
      {{"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}}};
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto semicolon = text[i] == '&' ? text.find(';', i) : std::string_view::npos;
    if (semicolon == std::string_view::npos || semicolon - i > 10) {
      out += text[i];
      continue;
    }
    const auto name = text.substr(i + 1, semicolon - i - 1);
    unsigned code = 0;
    bool decoded = false;
    if (name.starts_with("#x") || name.starts_with("#X")) {
      decoded =
          std::from_chars(name.data() + 2, name.data() + name.size(), code, 16).ec == std::errc{};
    } else if (name.starts_with("#")) {
      decoded = std::from_chars(name.data() + 1, name.data() + name.size(), code).ec == std::errc{};
    }
    if (decoded && code > 0 && code < 128) {
      out += static_cast<char>(code);  // index pages only escape ASCII
    } else if (auto it = std::find_if(kNamed.begin(), kNamed.end(),
                                      [&](const auto& entry) { return entry.first == name; });
               it != kNamed.end()) {
      out += it->second;
    } else {
      out += text.substr(i, semicolon - i + 1);
    }
    i = semicolon;
  }
  return out;
}

// The attributes of one start tag's inside (`a href="..." data-yanked`), names lowercased.
std::map<std::string, std::string> tag_attributes(std::string_view inside) {
  std::map<std::string, std::string> attributes;
  std::size_t i = 0;
  auto skip_spaces = [&] {
    while (i < inside.size() && std::isspace(static_cast<unsigned char>(inside[i])))
      ++i;
  };
  while (i < inside.size()) {
    skip_spaces();
    const auto name_begin = i;
    while (i < inside.size() && !std::isspace(static_cast<unsigned char>(inside[i])) &&
           inside[i] != '=' && inside[i] != '/')
      ++i;
    const auto name = text::to_lower(inside.substr(name_begin, i - name_begin));
    skip_spaces();
    std::string value;
    if (i < inside.size() && inside[i] == '=') {
      ++i;
      skip_spaces();
      const char quote = i < inside.size() ? inside[i] : '\0';
      const bool quoted = quote == '"' || quote == '\'';
      const auto value_begin = quoted ? i + 1 : i;
      auto value_end =
          quoted ? inside.find(quote, value_begin) : inside.find_first_of(" \t\r\n", value_begin);
      if (value_end == std::string_view::npos) value_end = inside.size();
      value = decode_html_entities(inside.substr(value_begin, value_end - value_begin));
      i = quoted ? value_end + 1 : value_end;
    } else if (name.empty()) {
      ++i;  // a stray '/' or '='
    }
    if (!name.empty()) attributes.insert_or_assign(name, std::move(value));
  }
  return attributes;
}

IndexFile html_file(const std::map<std::string, std::string>& attributes, std::string_view label,
                    std::string_view page_url) {
  IndexFile file;
  const auto& href = attributes.at("href");
  take_url_and_fragment_hash(href, page_url, file);
  file.filename = decode_html_entities(text::trim(label));
  if (file.filename.empty()) file.filename = file.url.substr(file.url.rfind('/') + 1);
  file.yanked = attributes.contains("data-yanked");
  for (const char* key : {"data-core-metadata", "data-dist-info-metadata"}) {
    if (auto it = attributes.find(key); it != attributes.end() && it->second != "false")
      file.has_metadata = true;
  }
  return file;
}

std::vector<IndexFile> parse_html_page(std::string_view body, std::string_view page_url) {
  const std::string lower = text::to_lower(body);
  std::vector<IndexFile> files;
  for (auto open = lower.find("<a"); open != std::string::npos; open = lower.find("<a", open + 2)) {
    const auto after = open + 2;
    if (after >= lower.size() || !std::isspace(static_cast<unsigned char>(lower[after]))) continue;
    const auto tag_end = lower.find('>', after);
    if (tag_end == std::string::npos) break;
    const auto close = lower.find("</a", tag_end);
    const auto attributes = tag_attributes(body.substr(after, tag_end - after));
    if (!attributes.contains("href")) continue;
    const auto label_end = close == std::string::npos ? body.size() : close;
    files.push_back(
        html_file(attributes, body.substr(tag_end + 1, label_end - tag_end - 1), page_url));
  }
  return files;
}

bool looks_like_json(const IndexResponse& page) {
  const auto type = text::to_lower(page.content_type);
  if (type.find("json") != std::string::npos) return true;
  if (!type.empty()) return false;
  const auto body = text::trim(page.body);
  return !body.empty() && body.front() == '{';
}

// ---------------------------------------------------------------- wheel names

std::optional<std::uint64_t> leading_number(std::string_view text) {
  std::uint64_t number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc{} || end == text.data()) return std::nullopt;
  return number;
}

std::vector<std::string> tag_set(std::string_view compressed) {
  std::vector<std::string> tags;
  for (auto tag : text::split(compressed, '.'))
    tags.emplace_back(tag);
  return tags;
}

// The minor of a CPython 3 tag (`cp311` -> 11); nullopt for other tags (`py3`, `cp27`).
std::optional<unsigned> cpython3_minor(std::string_view tag) {
  if (!tag.starts_with("cp3")) return std::nullopt;
  const auto digits = tag.substr(3);
  unsigned minor = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), minor);
  if (ec != std::errc{} || digits.empty() || end != digits.data() + digits.size()) {
    return std::nullopt;
  }
  return minor;
}

std::optional<std::pair<unsigned, unsigned>> glibc_of_tag(std::string_view tag) {
  if (tag.starts_with("manylinux1_")) return std::pair{2U, 5U};
  if (tag.starts_with("manylinux2010_")) return std::pair{2U, 12U};
  if (tag.starts_with("manylinux2014_")) return std::pair{2U, 17U};
  if (!tag.starts_with("manylinux_")) return std::nullopt;
  const auto parts = text::split(tag.substr(10), '_');
  if (parts.size() < 3) return std::nullopt;
  const auto major = leading_number(parts[0]);
  const auto minor = leading_number(parts[1]);
  if (!major || !minor) return std::nullopt;
  return std::pair{static_cast<unsigned>(*major), static_cast<unsigned>(*minor)};
}

// ---------------------------------------------------------------- NVIDIA's names

// A CUDA component's wheel: the project name without its -cuNN suffix and the
// folder inside the (11.x/12.x) wheel. Checked against the real wheels on PyPI.
struct ComponentWheel {
  std::string_view component;
  std::string_view project_stem;  // nvidia-<stem>-cu12; 13.x: nvidia-<stem>
  std::string_view folder;        // nvidia/<folder>; 13.x wheels all use nvidia/cu13
  std::array<bool, 3> published;  // for CUDA 11, 12, 13
};

constexpr std::array<ComponentWheel, 27> kComponentWheels = {{
    {"cuda_cccl", "cuda-cccl", "cuda_cccl", {true, true, true}},
    {"cuda_crt", "cuda-crt", "", {false, false, true}},
    {"cuda_culibos", "cuda-culibos", "", {false, false, true}},
    {"cuda_cudart", "cuda-runtime", "cuda_runtime", {true, true, true}},
    {"cuda_cuobjdump", "cuda-cuobjdump", "", {false, false, true}},
    {"cuda_cupti", "cuda-cupti", "cuda_cupti", {true, true, true}},
    {"cuda_cuxxfilt", "cuda-cuxxfilt", "cuda_cuxxfilt", {true, true, true}},
    {"cuda_nvcc", "cuda-nvcc", "cuda_nvcc", {true, true, true}},
    {"cuda_nvdisasm", "cuda-nvdisasm", "", {false, false, true}},
    {"cuda_nvml_dev", "nvml-dev", "nvml_dev", {true, true, true}},
    {"cuda_nvrtc", "cuda-nvrtc", "cuda_nvrtc", {true, true, true}},
    {"cuda_nvtx", "nvtx", "nvtx", {true, true, true}},
    {"cuda_opencl", "cuda-opencl", "cuda_opencl", {false, true, true}},
    {"cuda_profiler_api", "cuda-profiler-api", "cuda_profiler_api", {true, true, true}},
    {"cuda_sanitizer_api", "cuda-sanitizer-api", "cuda_sanitizer_api", {true, true, true}},
    {"libcublas", "cublas", "cublas", {true, true, true}},
    {"libcufft", "cufft", "cufft", {true, true, true}},
    {"libcufile", "cufile", "cufile", {false, true, true}},
    {"libcurand", "curand", "curand", {true, true, true}},
    {"libcusolver", "cusolver", "cusolver", {true, true, true}},
    {"libcusparse", "cusparse", "cusparse", {true, true, true}},
    {"libnpp", "npp", "npp", {true, true, true}},
    {"libnvfatbin", "nvfatbin", "nvfatbin", {false, true, true}},
    {"libnvjitlink", "nvjitlink", "nvjitlink", {false, true, true}},
    {"libnvjpeg", "nvjpeg", "nvjpeg", {true, true, true}},
    {"libnvptxcompiler", "nvptxcompiler", "", {false, false, true}},
    {"libnvvm", "nvvm", "", {false, false, true}},
}};

// ---------------------------------------------------------------- the import

// One thing that may get wheels: a CUDA component of a version, or a cuDNN build.
struct Target {
  bool is_cudnn = false;
  std::string version;  // as the database spells it
  specs::Version parsed;
  std::vector<std::string> build_ids;
  std::string component;
  std::string wheel_root;
};

using TargetsByProject = std::map<std::string, std::vector<Target>>;

std::vector<std::string> build_ids_of(const RecipeVersion& version) {
  std::vector<std::string> ids;
  for (const auto& build : version.builds)
    ids.push_back(build.id);
  if (ids.empty()) ids.emplace_back();
  return ids;
}

void add_cuda_targets(const Recipe& cuda, TargetsByProject& targets) {
  for (const auto& version : cuda.versions) {
    for (const auto& component : version.components) {
      auto wheel = cuda_component_wheel(component.name, version.version.major());
      auto parsed = specs::Version::parse(component.version);
      if (!wheel || !parsed) continue;
      targets[wheel->project].push_back(Target{.version = version.version.original(),
                                               .parsed = std::move(parsed).value(),
                                               .build_ids = build_ids_of(version),
                                               .component = component.name,
                                               .wheel_root = wheel->wheel_root});
    }
  }
}

void add_cudnn_targets(const Recipe& cudnn, TargetsByProject& targets) {
  for (const auto& version : cudnn.versions) {
    for (const auto& build : version.builds) {
      auto wheel = cudnn_build_wheel(build.id);
      if (!wheel) continue;
      targets[wheel->project].push_back(Target{.is_cudnn = true,
                                               .version = version.version.original(),
                                               .parsed = version.version,
                                               .build_ids = {build.id},
                                               .component = "cudnn",
                                               .wheel_root = wheel->wheel_root});
    }
  }
}

// A wheel worth recording, with what ranks it among wheels for the same platform.
struct Candidate {
  const IndexFile* file = nullptr;
  specs::Platform platform{};
  std::pair<unsigned, unsigned> glibc{0, 0};
  std::uint64_t build = 0;
};

// Prefers the widest manylinux (lowest glibc), then the newest build tag, then the name.
bool better(const Candidate& a, const Candidate& b) {
  if (a.glibc != b.glibc) return a.glibc < b.glibc;
  if (a.build != b.build) return a.build > b.build;
  return a.file->filename < b.file->filename;
}

struct ParsedFile {
  const IndexFile* file;
  WheelFilename wheel;
  specs::Version version;
};

std::vector<ParsedFile> usable_wheels(const std::vector<IndexFile>& files) {
  std::vector<ParsedFile> wheels;
  for (const auto& file : files) {
    const auto sha = file.hashes.find("sha256");
    if (file.yanked || sha == file.hashes.end() || !is_lower_hex(sha->second, 64)) continue;
    auto wheel = parse_wheel_filename(file.filename);
    if (!wheel || !wheel_platform(*wheel)) continue;
    auto version = specs::Version::parse(wheel->version);
    if (!version) continue;
    wheels.push_back({&file, std::move(*wheel), std::move(version).value()});
  }
  return wheels;
}

// A wheel of `version` itself, or a post-release of it (NVIDIA re-uploads a
// component as `12.4.127.post1`: the same files, repackaged). 0 when neither;
// the exact version ranks first, then the newest post-release.
std::uint64_t rank_for(const specs::Version& wheel, const specs::Version& version) {
  if (wheel == version) return std::numeric_limits<std::uint64_t>::max();
  const bool post_of = wheel.is_postrelease() && !wheel.is_prerelease() && !wheel.has_local() &&
                       !version.is_postrelease() && wheel.with_post(std::nullopt) == version;
  return post_of ? *wheel.post() + 1 : 0;
}

std::map<specs::Platform, Candidate> best_per_platform(const std::vector<ParsedFile>& wheels,
                                                       const specs::Version& version) {
  std::uint64_t wanted = 0;  // the best rank any wheel has: versions are not mixed
  for (const auto& parsed : wheels)
    wanted = std::max(wanted, rank_for(parsed.version, version));
  std::map<specs::Platform, Candidate> best;
  for (const auto& parsed : wheels) {
    if (wanted == 0 || rank_for(parsed.version, version) != wanted) continue;
    const Candidate candidate{
        .file = parsed.file,
        .platform = *wheel_platform(parsed.wheel),
        .glibc = manylinux_glibc(parsed.wheel).value_or(std::pair{0U, 0U}),
        .build = parsed.wheel.build.value_or(0),
    };
    auto [it, inserted] = best.try_emplace(candidate.platform, candidate);
    if (!inserted && better(candidate, it->second)) it->second = candidate;
  }
  return best;
}

Artifact wheel_artifact(const Candidate& candidate, const Target& target) {
  return Artifact{.platform = candidate.platform,
                  .component = target.component,
                  .kind = ArtifactKind::wheel,
                  .url = candidate.file->url,
                  .sha256 = candidate.file->hashes.at("sha256"),
                  .size = candidate.file->size,
                  .format = "whl",
                  .layout = Layout::nvidia_wheel,
                  .wheel_root = target.wheel_root};
}

RecipeVersion& version_in(Recipe& recipe, const Target& target) {
  for (auto& version : recipe.versions) {
    if (version.version.original() == target.version) return version;
  }
  recipe.versions.push_back(
      RecipeVersion{.version = specs::Version::parse(target.version).value()});
  return recipe.versions.back();
}

Build& build_in(RecipeVersion& version, const std::string& id) {
  for (auto& build : version.builds) {
    if (build.id == id) return build;
  }
  version.builds.push_back(Build{.id = id});
  return version.builds.back();
}

void place_wheels(const Target& target, const std::map<specs::Platform, Candidate>& wheels,
                  PypiImport& result) {
  Recipe& recipe = target.is_cudnn ? result.cudnn : result.cuda;
  RecipeVersion& version = version_in(recipe, target);
  for (const auto& id : target.build_ids) {
    Build& build = build_in(version, id);
    for (const auto& [platform, candidate] : wheels)
      build.artifacts.push_back(wheel_artifact(candidate, target));
  }
  result.artifacts += wheels.size() * target.build_ids.size();
}

std::string project_url(std::string_view index_url, std::string_view project) {
  std::string url(index_url);
  if (!url.ends_with('/')) url += '/';
  return url + std::string(project) + "/";
}

void add_source(Recipe& recipe, std::string_view index_url) {
  if (recipe.versions.empty()) return;
  recipe.sources.push_back("wheels: " + url::redacted(index_url) + " (PEP 691/503 simple API)");
  canonicalize(recipe);
}

}  // namespace

PipIndexSettings PipIndexSettings::from_environment() {
  PipIndexSettings settings;
  settings.index_url_variable = env::get(env::kPipIndexUrl);
  settings.config_files = {"/etc/xdg/pip/pip.conf", "/etc/pip.conf"};
  const auto config_file = env::get(env::kPipConfigFile);
  const bool config_file_exists = config_file && fs::exists(*config_file);
  const auto home = env::get(env::kHome);
  if (!config_file_exists && home) {
    settings.config_files.push_back(fs::path(*home) / ".pip" / "pip.conf");
    const auto xdg = env::get(env::kXdgConfigHome);
    const fs::path config_home =
        xdg && !xdg->empty() ? fs::path(*xdg) : fs::path(*home) / ".config";
    settings.config_files.push_back(config_home / "pip" / "pip.conf");
  }
  if (config_file_exists) settings.config_files.emplace_back(*config_file);
  return settings;
}

std::string pip_index_url(const PipIndexSettings& settings) {
  if (settings.index_url_variable && !settings.index_url_variable->empty())
    return *settings.index_url_variable;
  IndexUrlsInConfig merged;
  for (const auto& path : settings.config_files) {
    auto content = sys::read_file(path);
    if (!content) continue;
    auto found = read_pip_config(*content);
    if (found.global) merged.global = std::move(found.global);
    if (found.install) merged.install = std::move(found.install);
  }
  // pip lays [install] over [global] after merging all files.
  if (merged.install && !merged.install->empty()) return *merged.install;
  if (merged.global && !merged.global->empty()) return *merged.global;
  return std::string(kPypiSimpleUrl);
}

Result<std::vector<IndexFile>> parse_index_page(const IndexResponse& page,
                                                std::string_view page_url) {
  if (looks_like_json(page)) return parse_json_page(page.body, page_url);
  return parse_html_page(page.body, page_url);
}

std::optional<WheelFilename> parse_wheel_filename(std::string_view filename) {
  if (!filename.ends_with(".whl")) return std::nullopt;
  const auto parts = text::split(filename.substr(0, filename.size() - 4), '-');
  if (parts.size() != 5 && parts.size() != 6) return std::nullopt;
  if (std::any_of(parts.begin(), parts.end(), [](auto part) { return part.empty(); }))
    return std::nullopt;
  WheelFilename wheel{.distribution = std::string(parts[0]), .version = std::string(parts[1])};
  if (parts.size() == 6) {
    wheel.build = leading_number(parts[2]);
    if (!wheel.build) return std::nullopt;  // a build tag starts with a digit
  }
  const auto tags = parts.size() - 3;
  wheel.python_tags = tag_set(parts[tags]);
  wheel.abi_tags = tag_set(parts[tags + 1]);
  wheel.platform_tags = tag_set(parts[tags + 2]);
  return wheel;
}

bool is_final_release(const specs::Version& version) {
  return !version.is_prerelease() && !version.is_postrelease() && !version.is_devrelease() &&
         !version.has_local();
}

std::map<specs::Version, std::vector<IndexWheel>> wheels_by_release(
    const std::vector<IndexFile>& files) {
  std::map<specs::Version, std::vector<IndexWheel>> releases;
  for (const auto& file : files) {
    auto wheel = file.yanked ? std::nullopt : parse_wheel_filename(file.filename);
    if (!wheel) continue;
    if (auto version = specs::Version::parse(wheel->version)) {
      releases[*version].push_back({.file = &file, .wheel = *std::move(wheel)});
    }
  }
  return releases;
}

std::optional<specs::Platform> wheel_platform(const WheelFilename& wheel) {
  auto has = [](const std::vector<std::string>& tags, std::string_view tag) {
    return std::find(tags.begin(), tags.end(), tag) != tags.end();
  };
  if (!has(wheel.python_tags, "py3") || !has(wheel.abi_tags, "none")) return std::nullopt;
  return binary_wheel_platform(wheel);
}

std::optional<specs::Platform> binary_wheel_platform(const WheelFilename& wheel) {
  for (const auto& tag : wheel.platform_tags) {
    if (tag == "win_amd64") return specs::Platform::windows_x86_64;
    if (!glibc_of_tag(tag)) continue;
    if (tag.ends_with("_x86_64")) return specs::Platform::linux_x86_64;
    if (tag.ends_with("_aarch64")) return specs::Platform::linux_aarch64;
  }
  return std::nullopt;
}

std::optional<specs::VersionSpec> cpython_range(const std::vector<WheelFilename>& wheels) {
  std::optional<unsigned> lowest, highest;
  bool open_above = false;
  for (const auto& wheel : wheels) {
    for (const auto& tag : wheel.python_tags) {
      const auto minor = cpython3_minor(tag);
      if (!minor) continue;
      lowest = std::min(lowest.value_or(*minor), *minor);
      highest = std::max(highest.value_or(*minor), *minor);
    }
    open_above = open_above || std::find(wheel.abi_tags.begin(), wheel.abi_tags.end(), "abi3") !=
                                   wheel.abi_tags.end();
  }
  if (!lowest) return std::nullopt;
  const auto text = open_above ? fmt::format(">=3.{}", *lowest)
                               : fmt::format(">=3.{},<3.{}", *lowest, *highest + 1);
  auto spec = specs::VersionSpec::parse(text);
  if (!spec) return std::nullopt;
  return *std::move(spec);
}

std::optional<unsigned> cpython_minor(const WheelFilename& wheel) {
  std::optional<unsigned> newest;
  for (const auto& tag : wheel.python_tags) {
    if (const auto minor = cpython3_minor(tag)) newest = std::max(newest.value_or(0), *minor);
  }
  return newest;
}

std::optional<std::pair<unsigned, unsigned>> manylinux_glibc(const WheelFilename& wheel) {
  std::optional<std::pair<unsigned, unsigned>> lowest;
  for (const auto& tag : wheel.platform_tags) {
    const auto glibc = glibc_of_tag(tag);
    if (glibc && (!lowest || *glibc < *lowest)) lowest = glibc;
  }
  return lowest;
}

std::optional<WheelProject> cuda_component_wheel(std::string_view component,
                                                 std::uint64_t cuda_major) {
  if (cuda_major < 11 || cuda_major > 13) return std::nullopt;
  const auto it = std::find_if(kComponentWheels.begin(), kComponentWheels.end(),
                               [&](const ComponentWheel& w) { return w.component == component; });
  if (it == kComponentWheels.end() || !it->published[cuda_major - 11]) return std::nullopt;
  // From CUDA 13 NVIDIA drops the -cuNN suffix and puts every component under nvidia/cu13.
  if (cuda_major == 13) {
    return WheelProject{"nvidia-" + std::string(it->project_stem), "nvidia/cu13"};
  }
  return WheelProject{fmt::format("nvidia-{}-cu{}", it->project_stem, cuda_major),
                      "nvidia/" + std::string(it->folder)};
}

std::optional<WheelProject> cudnn_build_wheel(std::string_view build_id) {
  for (std::string_view major : {"11", "12", "13"}) {
    if (build_id == "cuda" + std::string(major)) {
      return WheelProject{"nvidia-cudnn-cu" + std::string(major), "nvidia/cudnn"};
    }
  }
  return std::nullopt;
}

Result<std::optional<std::vector<IndexFile>>> fetch_project_files(const PypiImportOptions& options,
                                                                  std::string_view project) {
  const auto url = project_url(options.index_url, project);
  auto response = options.fetch(url, {std::string(kAcceptHeader)});
  if (!response) return std::move(response).error();
  if (response->status == 404 || response->status == 410) {
    return std::optional<std::vector<IndexFile>>{};
  }
  if (response->status < 200 || response->status > 299) {
    return page_error(url, fmt::format("the server answered HTTP {}", response->status));
  }
  if (response->url.empty()) response->url = url;
  auto files = parse_index_page(*response, response->url);
  if (!files) return std::move(files).error();
  if (options.origin_of) {
    for (auto& file : *files)
      file.url = options.origin_of(file.url);
  }
  return std::optional(std::move(files).value());
}

Result<std::optional<std::string>> fetch_core_metadata(const PypiImportOptions& options,
                                                       const IndexFile& wheel) {
  const std::string url = wheel.url + ".metadata";
  auto response = options.fetch(url, {});
  if (!response) return std::move(response).error();
  if (response->status == 404 || response->status == 410) return std::optional<std::string>{};
  if (response->status < 200 || response->status > 299) {
    return Error::failed("cannot read the wheel metadata " + text::quoted(url::redacted(url)))
        .because(fmt::format("the server answered HTTP {}", response->status));
  }
  return std::optional(std::move(response->body));
}

namespace {

// Pieces of one wheel on the index, by HTTP range; a server that answers a
// range with the whole file (200) is read from that copy from then on.
class RangedWheel {
 public:
  RangedWheel(const PypiImportOptions& options, const IndexFile& wheel)
      : options_(options), wheel_(wheel) {}

  // The last `count` bytes, with their offset in the file unknown until the
  // zip's end record says it; nullopt when the index has no such file.
  Result<std::optional<std::string>> tail(std::uint64_t count) {
    return get(fmt::format("bytes=-{}", count), [&](const std::string& whole) {
      return whole.substr(whole.size() - std::min<std::uint64_t>(count, whole.size()));
    });
  }
  // Bytes [first, first + count).
  Result<std::optional<std::string>> range(std::uint64_t first, std::uint64_t count) {
    return get(fmt::format("bytes={}-{}", first, first + count - 1), [&](const std::string& whole) {
      return first >= whole.size() ? std::string() : whole.substr(first, count);
    });
  }

 private:
  template <class Slice>
  Result<std::optional<std::string>> get(const std::string& range, Slice slice) {
    if (whole_) return std::optional(slice(*whole_));
    auto response = options_.fetch(wheel_.url, {"Range: " + range});
    if (!response) return std::move(response).error();
    if (response->status == 404 || response->status == 410) return std::optional<std::string>{};
    if (response->status == 200) {
      whole_ = std::move(response->body);
      return std::optional(slice(*whole_));
    }
    if (response->status != 206) {
      return Error::failed("cannot read the wheel " + text::quoted(url::redacted(wheel_.url)))
          .because(
              fmt::format("the server answered HTTP {} to `Range: {}`", response->status, range));
    }
    return std::optional(std::move(response->body));
  }

  const PypiImportOptions& options_;
  const IndexFile& wheel_;
  std::optional<std::string> whole_;
};

// The end record and the central directory fit in this much of a wheel's end.
constexpr std::uint64_t kWheelTail = 64 * 1024;

bool is_metadata_member(std::string_view path) {
  const auto slash = path.find('/');
  return slash != std::string_view::npos && path.substr(0, slash).ends_with(".dist-info") &&
         path.substr(slash + 1) == "METADATA";
}

Result<std::optional<std::string>> metadata_from_wheel(const PypiImportOptions& options,
                                                       const IndexFile& wheel) {
  RangedWheel file(options, wheel);
  auto tail = file.tail(kWheelTail);
  if (!tail || !*tail) return tail;
  auto where = archive::zip_directory_location(**tail, wheel.filename);
  if (!where) return std::move(where).error();
  std::string directory;
  if (where->offset >= where->tail_offset) {
    directory = (*tail)->substr(where->offset - where->tail_offset, where->size);
  } else {
    auto read = file.range(where->offset, where->size);
    if (!read || !*read) return read;
    directory = **std::move(read);
  }
  auto members = archive::zip_directory_members(directory, wheel.filename);
  if (!members) return std::move(members).error();
  const auto member = std::find_if(members->begin(), members->end(),
                                   [](const auto& m) { return is_metadata_member(m.path); });
  if (member == members->end()) return std::optional<std::string>{};
  // The local header's name and extra field may differ in length from the directory's.
  auto header = file.range(member->offset, 30);
  if (!header || !*header) return header;
  auto span = archive::zip_member_span(**header, *member, wheel.filename);
  if (!span) return std::move(span).error();
  auto local = file.range(member->offset, *span);
  if (!local || !*local) return local;
  auto content = archive::zip_member_content(**local, *member, wheel.filename);
  if (!content) return std::move(content).error();
  return std::optional(std::move(content).value());
}

}  // namespace

Result<std::optional<std::string>> fetch_wheel_metadata(const PypiImportOptions& options,
                                                        const IndexFile& wheel) {
  auto served = fetch_core_metadata(options, wheel);
  if (!served || *served) return served;
  return metadata_from_wheel(options, wheel);
}

Result<std::vector<IndexFile>> fetch_listed_project_files(const PypiImportOptions& options,
                                                          std::string_view project) {
  auto files = fetch_project_files(options, project);
  if (!files) return std::move(files).error();
  if (!*files) {
    return Error::failed(
        fmt::format("the index {} has no project {}", url::redacted(options.index_url), project));
  }
  return *std::move(*files);
}

Result<PypiImport> import_pypi_nvidia(const Recipe& cuda, const Recipe& cudnn,
                                      const PypiImportOptions& options) {
  if (!options.fetch) return Error::internal("import_pypi_nvidia: no fetch function");
  TargetsByProject targets;
  add_cuda_targets(cuda, targets);
  add_cudnn_targets(cudnn, targets);

  PypiImport result;
  result.cuda.name = cuda.name.empty() ? "cuda" : cuda.name;
  result.cudnn.name = cudnn.name.empty() ? "cudnn" : cudnn.name;
  for (const auto& [project, project_targets] : targets) {
    auto files = fetch_project_files(options, project);
    if (!files) return std::move(files).error();
    ++result.projects_fetched;
    if (!*files) {
      ++result.projects_missing;
      result.unmatched += project_targets.size();
      continue;
    }
    const auto wheels = usable_wheels(**files);
    for (const auto& target : project_targets) {
      const auto best = best_per_platform(wheels, target.parsed);
      if (best.empty()) {
        ++result.unmatched;
        continue;
      }
      ++result.matched;
      place_wheels(target, best, result);
    }
  }
  add_source(result.cuda, options.index_url);
  add_source(result.cudnn, options.index_url);
  return result;
}

}  // namespace envkit::recipes
