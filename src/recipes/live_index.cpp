#include "envkit/recipes/live_index.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>

#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/recipes/import_pypi_cuda.hpp"
#include "envkit/recipes/import_pypi_jax.hpp"
#include "envkit/recipes/import_pypi_tensorflow.hpp"
#include "envkit/recipes/import_pypi_torch.hpp"
#include "envkit/recipes/recipe_io.hpp"
#include "envkit/sys/fs.hpp"

namespace envkit::recipes {

namespace fs = std::filesystem;

namespace {

// PyPI's torch wheels pin NVIDIA's wheels from 1.13 on (torch 1.13.0's METADATA:
// `nvidia-cuda-runtime-cu11==11.7.99`); before, their METADATA says nothing of CUDA.
const specs::Version kFirstPinnedTorch = specs::Version::parse("1.13").value();

// What the database already holds from an earlier read of the same (immutable) wheels:
// torch releases it has a PyPI build of, or from before PyPI's wheels pinned CUDA; jax
// releases up to its newest (older ones without CUDA builds were read and left out);
// tensorflow releases it has. The overlay adds what is new, it does not redo the database.
PypiImportOptions::KnownRelease known_releases(const Database& database) {
  const auto facts_of = [&database](std::string_view name) -> const Recipe* {
    if (!database.contains(name)) return nullptr;
    auto facts = database.facts(name);
    return facts ? *facts : nullptr;
  };
  std::optional<specs::Version> newest_jax;
  if (const auto* jax = facts_of("jax")) {
    for (const auto& version : jax->versions)
      newest_jax = std::max(newest_jax.value_or(version.version), version.version);
  }
  return [facts_of, newest_jax](std::string_view project, const specs::Version& release) {
    if (project == "jax") return newest_jax && !(*newest_jax < release);
    const auto* known = facts_of(project);
    const auto* version = known != nullptr ? known->find(release) : nullptr;
    if (project == "tensorflow" || project == "tensorflow-gpu") return version != nullptr;
    if (project != "torch" || known == nullptr) return false;
    if (release < kFirstPinnedTorch) return true;
    return version != nullptr &&
           std::any_of(version->builds.begin(), version->builds.end(),
                       [](const Build& build) { return !build.wheel_index.empty(); });
  };
}

// Pages are asked for more than once in a refresh (the torch page by its importer and for
// its releases): each is fetched once.
FetchIndexPage memoized(FetchIndexPage fetch) {
  auto pages = std::make_shared<std::map<std::string, IndexResponse>>();
  return [fetch = std::move(fetch), pages](
             const std::string& url,
             const std::vector<std::string>& headers) -> Result<IndexResponse> {
    const auto key = url + "\n" + text::join(headers, "\n");
    if (const auto it = pages->find(key); it != pages->end()) return it->second;
    auto response = fetch(url, headers);
    if (response) pages->emplace(key, *response);
    return response;
  };
}

// The final releases `project` has a wheel of on the index, oldest first.
Result<std::vector<std::string>> served_releases(const PypiImportOptions& options,
                                                 std::string_view project) {
  auto files = fetch_project_files(options, project);
  if (!files) return std::move(files).error();
  std::vector<std::string> releases;
  if (!*files) return releases;
  for (const auto& [version, wheels] : wheels_by_release(**files)) {
    if (is_final_release(version)) releases.push_back(wheels.front().wheel.version);
  }
  return releases;
}

void keep_if_any(std::vector<Recipe>& recipes, Recipe recipe) {
  if (!recipe.versions.empty()) recipes.push_back(std::move(recipe));
}

template <class T>
void append(std::vector<T>& to, const std::vector<T>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

Result<void> import_tensorflow(const Database& database, const PypiImportOptions& options,
                               LiveImport& out) {
  auto tensorflow = database.tables("tensorflow");
  if (!tensorflow) return std::move(tensorflow).error();
  auto tensorflow_gpu = database.tables("tensorflow-gpu");
  if (!tensorflow_gpu) return std::move(tensorflow_gpu).error();
  auto imported = import_pypi_tensorflow(*tensorflow, *tensorflow_gpu, options);
  if (!imported) return std::move(imported).error();
  keep_if_any(out.recipes, std::move(imported->tensorflow));
  keep_if_any(out.recipes, std::move(imported->tensorflow_gpu));
  return {};
}

Result<void> import_framework(const Database& database, const PypiImportOptions& options,
                              std::string_view framework, LiveImport& out) {
  if (framework == "torch") {
    auto tables = database.tables("torch");
    if (!tables) return std::move(tables).error();
    auto imported = import_pypi_torch(*tables, options);
    if (!imported) return std::move(imported).error();
    append(out.state.problems, imported->problems);
    keep_if_any(out.recipes, std::move(imported->torch));
  } else if (framework == "jax") {
    auto imported = import_pypi_jax(options);
    if (!imported) return std::move(imported).error();
    keep_if_any(out.recipes, std::move(imported->jax));
  } else if (framework == "tensorflow" || framework == "tensorflow-gpu") {
    // One import gives both: do it for whichever comes first.
    if (!out.state.releases.contains("tensorflow") &&
        !out.state.releases.contains("tensorflow-gpu")) {
      if (auto imported = import_tensorflow(database, options, out); !imported) return imported;
    }
  } else {
    return Error::internal(fmt::format("the live overlay reads no framework {}", framework));
  }
  auto releases = served_releases(options, framework);
  if (!releases) return std::move(releases).error();
  out.state.releases[std::string(framework)] = *std::move(releases);
  return {};
}

// The layer's files: each recipe's facts as <name>.yaml, its artifacts per version.
Result<void> write_layer(const fs::path& dir, const std::vector<Recipe>& recipes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error::failed(fmt::format("cannot create {}", dir.string())).because(ec.message());
  for (const auto& recipe : recipes) {
    Recipe facts = recipe;
    for (auto& version : facts.versions) {
      for (auto& build : version.builds)
        build.artifacts.clear();
    }
    if (auto written = sys::write_file_atomic(dir / (recipe.name + ".yaml"), write_facts(facts));
        !written)
      return written;
    for (const auto& version : recipe.versions) {
      const auto text = write_artifacts(version, ArtifactSet::all);
      if (text.empty()) continue;
      fs::create_directories(dir / recipe.name, ec);
      if (auto written = sys::write_file_atomic(
              dir / recipe.name / (version.version.original() + ".yaml"), text);
          !written)
        return written;
    }
  }
  return {};
}

constexpr std::string_view kStateFile = "state.json";

nlohmann::json state_json(const LiveState& state) {
  return {{"format", kLiveStateFormat},     {"index", state.index_url},
          {"read-at", state.read_at},       {"layer", state.layer},
          {"frameworks", state.frameworks}, {"releases", state.releases},
          {"notes", state.notes},           {"problems", state.problems}};
}

}  // namespace

std::string LiveState::read_date() const {
  const std::time_t seconds = read_at;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  return fmt::format("{:04}-{:02}-{:02}", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday);
}

bool LiveState::covers(std::string_view framework) const {
  return std::find(frameworks.begin(), frameworks.end(), framework) != frameworks.end();
}

Result<LiveImport> import_live(const Database& database, const PypiImportOptions& options,
                               std::vector<std::string> frameworks) {
  std::sort(frameworks.begin(), frameworks.end());
  frameworks.erase(std::unique(frameworks.begin(), frameworks.end()), frameworks.end());
  LiveImport out;
  out.state.index_url = url::redacted(options.index_url);
  out.state.frameworks = frameworks;
  PypiImportOptions asking = options;
  asking.fetch = memoized(options.fetch);
  asking.known_release = known_releases(database);

  if (database.contains("cuda") && database.contains("cudnn")) {
    auto cuda = database.facts("cuda");
    if (!cuda) return std::move(cuda).error();
    auto cudnn = database.facts("cudnn");
    if (!cudnn) return std::move(cudnn).error();
    auto nvidia = import_pypi_cuda_releases(**cuda, **cudnn, asking);
    if (!nvidia) return std::move(nvidia).error();
    append(out.state.notes, nvidia->notes);
    append(out.state.problems, nvidia->problems);
    keep_if_any(out.recipes, std::move(nvidia->cuda));
    keep_if_any(out.recipes, std::move(nvidia->cudnn));
  }
  for (const auto& framework : frameworks) {
    if (auto imported = import_framework(database, asking, framework, out); !imported)
      return imported.error();
  }
  return out;
}

fs::path live_overlay_dir(const fs::path& cache_root, std::string_view index_url) {
  const auto redacted = url::redacted(index_url);
  std::string slug;
  for (char c : redacted.substr(std::min(redacted.find("://") + 3, redacted.size()))) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '.' || c == '-';
    if (slug.size() < 48) slug += plain ? c : '-';
  }
  while (slug.ends_with('-'))
    slug.pop_back();
  // The hash tells apart URLs that differ only where the slug dropped something.
  return cache_root / "recipes" / "live" /
         fmt::format("{}-{}", slug, core::sha256_hex(index_url).substr(0, 12));
}

Result<std::optional<LiveState>> read_live_state(const fs::path& overlay) {
  const auto path = overlay / kStateFile;
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::optional<LiveState>{};
  auto text = sys::read_file(path);
  if (!text) return std::move(text).error();
  const auto json = nlohmann::json::parse(*text, nullptr, false);
  const auto bad = [&](std::string_view why) {
    return Error::input(fmt::format("{} is not an overlay state envkit wrote", path.string()))
        .because(std::string(why))
        .hint(fmt::format("delete {} (the next lock reads the index again)", overlay.string()));
  };
  if (json.is_discarded() || !json.is_object()) return bad("it is not a JSON object");
  if (json.value("format", 0) != kLiveStateFormat) return std::optional<LiveState>{};
  try {
    LiveState state{
        .index_url = json.at("index").get<std::string>(),
        .read_at = json.at("read-at").get<std::int64_t>(),
        .layer = json.at("layer").get<std::string>(),
        .frameworks = json.at("frameworks").get<std::vector<std::string>>(),
        .releases = json.at("releases").get<std::map<std::string, std::vector<std::string>>>(),
        .notes = json.at("notes").get<std::vector<std::string>>(),
        .problems = json.at("problems").get<std::vector<std::string>>()};
    if (state.layer.empty() || state.layer.find('/') != std::string::npos ||
        state.layer.starts_with("."))
      return bad("its `layer` names no folder of the overlay");
    return std::optional(std::move(state));
  } catch (const nlohmann::json::exception& error) {
    return bad(error.what());
  }
}

Result<LiveState> write_live_overlay(const fs::path& overlay, LiveImport imported,
                                     std::int64_t read_at) {
  auto previous = read_live_state(overlay);
  std::optional<std::string> replaced;
  if (previous && *previous) replaced = (*previous)->layer;
  LiveState state = std::move(imported.state);
  state.read_at = read_at;
  state.layer = fmt::format("layer-{}-{}", read_at, ::getpid());
  if (auto written = write_layer(overlay / state.layer, imported.recipes); !written)
    return written.error();
  if (auto written = sys::write_file_atomic(overlay / kStateFile, state_json(state).dump(1) + "\n");
      !written)
    return written.error();
  // Layers before the one just replaced: no reader can still be on them.
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(overlay, ec)) {
    const auto name = entry.path().filename().string();
    if (name.starts_with("layer-") && name != state.layer && name != replaced)
      fs::remove_all(entry.path(), ec);
  }
  return state;
}

Layer live_layer(const fs::path& overlay, const LiveState& state) {
  return Layer{.dir = overlay / state.layer,
               .source = fmt::format("{} (read {})", state.index_url, state.read_date())};
}

}  // namespace envkit::recipes
