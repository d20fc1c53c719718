#include "envkit/oci/export.hpp"

#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "envkit/activation/activation.hpp"
#include "envkit/activation/script.hpp"
#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/oci/image_layout.hpp"
#include "envkit/oci/layer_cache.hpp"
#include "envkit/oci/layout_archive.hpp"
#include "envkit/store/prefix.hpp"
#include "envkit/sys/fs.hpp"
#include "envkit/sys/parallel.hpp"

namespace envkit::oci {

namespace {

namespace fs = std::filesystem;

// What a shell in a bare image starts with (Debian's and Ubuntu's default PATH).
constexpr std::string_view kSystemPath =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

const lock::PlatformLock* platform_lock(const lock::Lockfile& lockfile, specs::Platform platform) {
  for (const auto& entry : lockfile.platforms) {
    if (entry.platform == platform) return &entry;
  }
  return nullptr;
}

// The prefix's activation at /opt/envkit over the base image's variables.
std::vector<activation::Assignment> image_assignments(bool has_python,
                                                      const std::vector<std::string>& base_env) {
  activation::Environment inherited = {{"PATH", std::string(kSystemPath)}};
  for (const auto& assignment : base_env) {
    const auto eq = assignment.find('=');
    if (eq != std::string::npos) inherited[assignment.substr(0, eq)] = assignment.substr(eq + 1);
  }
  return activation::assignments(fs::path(kImageRoot), {.has_python = has_python}, inherited);
}

const std::vector<std::string>& base_env_of(const ExportOptions& options) {
  static const std::vector<std::string> none;
  return options.base ? options.base->env : none;
}

// A folder removed on scope exit.
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    auto pattern = (fs::temp_directory_path() / "envkit-export-XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) path = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    if (!path.empty()) fs::remove_all(path, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
};

// The prefix's receipts and state as the image holds them: generation 1,
// files copied, relocated files recorded with the content the image has, a
// package's copy of a wheel's file as the link the image has instead.
store::PrefixState image_state(store::PrefixState state, const std::vector<PlannedLayer>& layers) {
  std::map<std::string, const std::string*> relocated;
  std::map<std::string, const std::string*> linked;  // files the image holds as links
  const auto root = std::string(kImageRoot.substr(1)) + "/";
  for (const auto& layer : layers) {
    for (const auto& entry : layer.entries) {
      if (entry.type == TarEntry::Type::file && entry.source.empty())
        relocated.emplace(entry.path.substr(root.size()), &entry.content);
      if (entry.type == TarEntry::Type::symlink)
        linked.emplace(entry.path.substr(root.size()), &entry.link_target);
    }
  }
  state.generation = 1;
  state.link_mode = std::string(store::kImageLinkMode);
  for (auto& package : state.packages) {
    for (auto& file : package.files) {
      if (const auto link = linked.find(file.path);
          link != linked.end() && file.type == archive::EntryType::file) {
        file = {
            .path = file.path, .type = archive::EntryType::symlink, .link_target = *link->second};
        continue;
      }
      const auto found = relocated.find(file.path);
      if (found == relocated.end()) continue;
      file.sha256 = core::sha256_hex(*found->second);
      file.size = found->second->size();
    }
  }
  return state;
}

// The image's own layer: what no receipt owns.
Result<PlannedLayer> image_layer(const PrefixPaths& paths, const store::PrefixState& state,
                                 const std::vector<PlannedLayer>& package_layers,
                                 const ExportOptions& options, bool has_python) {
  const std::string owner = "envkit";
  PlannedLayer layer{.label = "envkit.lock, receipts, links, activation"};
  const auto at = [](std::string_view relative) {
    return fmt::format("{}/{}", kImageRoot.substr(1), relative);
  };
  layer.entries.push_back(
      {.path = at("envkit.lock"), .content = options.lock_text, .owner = owner});
  const auto changes = image_assignments(has_python, base_env_of(options));
  layer.entries.push_back({.path = at("activate.sh"),
                           .content = activation::activation_script(activation::Shell::bash,
                                                                    fs::path(kImageRoot), changes),
                           .owner = owner});
  for (const auto& link : state.links) {
    if (link.type == archive::EntryType::directory) {
      layer.entries.push_back(
          {.path = at(link.path), .type = TarEntry::Type::directory, .owner = owner});
      continue;
    }
    layer.entries.push_back({.path = at(link.path),
                             .type = TarEntry::Type::symlink,
                             .link_target = image_link_target(link.path, link.link_target, paths),
                             .owner = owner});
  }
  const ScratchDir scratch;
  if (scratch.path.empty()) return Error::failed("cannot make a temporary folder");
  if (auto written = store::write_state(scratch.path, image_state(state, package_layers)); !written)
    return std::move(written).error();
  std::error_code error;
  for (fs::recursive_directory_iterator it(scratch.path, error), end; !error && it != end;
       it.increment(error)) {
    if (!it->is_regular_file()) continue;
    auto content = sys::read_file(it->path());
    if (!content) return std::move(content).error();
    layer.entries.push_back(
        {.path = at(it->path().lexically_relative(scratch.path).generic_string()),
         .content = *std::move(content),
         .owner = owner});
  }
  add_parent_folders(layer.entries, owner);
  layer.key = layer_key(layer.entries);
  return layer;
}

// Each layer from the cache, or built (the biggest first, on `jobs` threads).
Result<std::vector<Layer>> layers_of(const std::vector<PlannedLayer>& planned,
                                     const ExportOptions& options, ExportReport& report) {
  const LayerCache cache(options.cache_root);
  const auto epoch = layer_epoch();
  std::vector<std::optional<Layer>> layers(planned.size());
  std::vector<std::size_t> to_build;
  for (std::size_t i = 0; i < planned.size(); ++i) {
    layers[i] = cache.find(planned[i], options.compression, epoch);
    if (!layers[i]) to_build.push_back(i);
  }
  std::sort(to_build.begin(), to_build.end(),
            [&](std::size_t a, std::size_t b) { return planned[a].bytes > planned[b].bytes; });
  report.cached = planned.size() - to_build.size();
  report.built = to_build.size();
  if (!to_build.empty() && options.note) {
    options.note(fmt::format("compressing {} layer(s) ({})", to_build.size(),
                             to_string(options.compression)));
  }
  // Each layer also compresses on every core (gzip's blocks, zstd's workers): at
  // first the layers share the cores, and the biggest, last to finish, gets them all.
  const int jobs = std::max(options.jobs, 1);
  const int threads = jobs;
  std::mutex failure_mutex;
  std::optional<Error> failure;
  sys::for_each_parallel(to_build.size(), jobs, [&](std::size_t k) {
    const auto i = to_build[k];
    auto built = cache.build(planned[i], options.compression, epoch, threads);
    if (built) {
      layers[i] = *std::move(built);
      return;
    }
    const std::lock_guard guard(failure_mutex);
    if (!failure) failure = std::move(built).error();
  });
  if (failure) return *std::move(failure);
  std::vector<Layer> out;
  for (auto& layer : layers) {
    report.bytes += layer->digests.size;
    out.push_back(*std::move(layer));
  }
  return out;
}

}  // namespace

std::string nvidia_require_cuda(const lock::Lockfile& lockfile, specs::Platform platform) {
  const auto* locked = platform_lock(lockfile, platform);
  if (locked == nullptr) return {};
  std::string out;
  for (const auto& package : locked->packages) {
    if (package.name != "cuda") continue;
    const auto parts = text::split(package.version.original(), '.');
    if (parts.size() < 2) continue;
    out = fmt::format("cuda>={}.{}", parts[0], parts[1]);
  }
  if (out.empty()) return out;
  // Only a floor is a floor: one exact driver is the machine the lock was made on.
  if (const auto& driver = lockfile.system.driver;
      driver && driver->starts_with(">=") && driver->find(',') == std::string::npos) {
    out += " driver>=" + std::string(text::trim(std::string_view(*driver).substr(2)));
  }
  return out;
}

std::vector<std::string> image_env(const lock::Lockfile& lockfile, specs::Platform platform,
                                   bool has_python, const std::vector<std::string>& base_env) {
  std::vector<std::string> env;
  for (const auto& change : image_assignments(has_python, base_env)) {
    if (change.value) env.push_back(change.name + "=" + *change.value);
  }
  env.emplace_back("NVIDIA_VISIBLE_DEVICES=all");
  env.emplace_back("NVIDIA_DRIVER_CAPABILITIES=compute,utility");
  if (auto require = nvidia_require_cuda(lockfile, platform); !require.empty())
    env.push_back("NVIDIA_REQUIRE_CUDA=" + require);
  return merged_env(base_env, env);
}

Result<ExportReport> export_image(const PrefixPaths& paths, const store::PrefixState& state,
                                  const ExportOptions& options) {
  auto platform = specs::parse_platform(state.platform);
  if (!platform) return std::move(platform).error();
  auto planned = plan_package_layers(state.packages, paths);
  if (!planned) return std::move(planned).error();
  std::error_code ignored;
  const bool has_python = fs::exists(paths.generation / "bin" / "python3", ignored);
  auto own = image_layer(paths, state, *planned, options, has_python);
  if (!own) return std::move(own).error();
  planned->push_back(*std::move(own));

  ExportReport report;
  auto layers = layers_of(*planned, options, report);
  if (!layers) return std::move(layers).error();
  std::vector<Layer> all;
  if (options.base) all = options.base->layers;
  all.insert(all.end(), layers->begin(), layers->end());
  report.layers = all.size();
  Image image{.ref = options.ref,
              .platform = *platform,
              .env = image_env(*options.lockfile, *platform, has_python, base_env_of(options)),
              .labels = options.labels,
              .layers = std::move(all)};
  image.labels["dev.envkit.lock.sha256"] = core::sha256_hex(options.lock_text);
  auto digest = write_image(options.out, image);
  if (!digest) return std::move(digest).error();
  report.manifest_digest = *digest;
  if (options.archive) {
    if (auto archived = write_layout_archive(options.out, *options.archive); !archived)
      return std::move(archived).error();
  }
  return report;
}

}  // namespace envkit::oci
