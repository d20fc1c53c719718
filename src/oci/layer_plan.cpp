#include "envkit/oci/layer_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>

#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/store/relocation.hpp"
#include "envkit/sys/fs.hpp"

namespace envkit::oci {

namespace {

namespace fs = std::filesystem;

// Bumped whenever the tar writer, the layer's paths or a compressor change: old cached
// layers then miss instead of standing for new bytes.
constexpr std::string_view kLayerFormat = "envkit-oci-layer 2";  // 2: gzip in blocks

constexpr std::array<std::string_view, 6> kFrameworks = {
    "torch", "tensorflow", "tensorflow-gpu", "tensorflow-cpu", "jax", "jaxlib"};

enum Rank : int {
  cuda_runtime = 0,
  cublas,
  cuda_libraries,
  cudnn,
  zlib,
  python,
  wheels,
  framework,
};

std::string image_path(std::string_view relative) {
  return fmt::format("{}/{}", kImageRoot.substr(1), relative);
}

// A receipt's file as a tar entry, read from the generation.
Result<TarEntry> entry_of(const store::PackageReceipt& receipt, const store::FileRecord& file,
                          const PrefixPaths& paths) {
  TarEntry entry{.path = image_path(file.path), .owner = receipt.name + " " + receipt.version};
  switch (file.type) {
    case archive::EntryType::directory:
      entry.type = TarEntry::Type::directory;
      return entry;
    case archive::EntryType::symlink:
      entry.type = TarEntry::Type::symlink;
      entry.link_target = image_link_target(file.path, file.link_target, paths);
      return entry;
    default:
      break;
  }
  entry.executable = file.executable;
  entry.sha256 = file.sha256;
  const auto source = paths.generation / file.path;
  // Only what envkit wrote itself names the prefix; a package's bytes are its own.
  if (receipt.packaging == "venv" && store::names_its_prefix(file.path)) {
    auto content = sys::read_file(source);
    if (!content) return std::move(content).error();
    auto relocated = store::replace_path(*content, paths.generation.string(), kImageRoot);
    entry.content = store::replace_path(relocated, paths.prefix.string(), kImageRoot);
    entry.sha256.clear();
    return entry;
  }
  entry.source = source;
  return entry;
}

// Closure wheels' files by content ("sha256 size"), each the first of its paths.
std::map<std::string, std::string> wheel_files_by_content(
    const std::vector<store::PackageReceipt>& receipts) {
  std::map<std::string, std::string> found;
  for (const auto& receipt : receipts) {
    if (receipt.packaging != "pip") continue;
    for (const auto& file : receipt.files) {
      if (file.type != archive::EntryType::file || file.sha256.empty()) continue;
      auto [at, inserted] = found.emplace(fmt::format("{} {}", file.sha256, file.size), file.path);
      if (!inserted && file.path < at->second) at->second = file.path;
    }
  }
  return found;
}

// A package's file that is also a closure wheel's (the CUDA stack's `lib/`
// view of NVIDIA's wheels: one inode in the prefix) as a link to the wheel's
// path. Hard links cannot cross layers, and a copy would store cuDNN twice;
// the wheel's own layer stays the same bytes in every image.
std::optional<TarEntry> link_to_wheel_copy(const store::PackageReceipt& receipt,
                                           const store::FileRecord& file,
                                           const std::map<std::string, std::string>& wheels) {
  if (receipt.packaging == "pip" || file.type != archive::EntryType::file) return std::nullopt;
  const auto found = wheels.find(fmt::format("{} {}", file.sha256, file.size));
  if (found == wheels.end() || found->second == file.path) return std::nullopt;
  const auto from = fs::path(file.path).parent_path();
  return TarEntry{.path = image_path(file.path),
                  .type = TarEntry::Type::symlink,
                  .link_target = fs::path(found->second).lexically_relative(from).generic_string(),
                  .owner = receipt.name + " " + receipt.version};
}

// What identifies a file's content at a path, to find two packages disagreeing.
std::string identity(const store::FileRecord& file) {
  return fmt::format("{}|{}|{}|{}", static_cast<int>(file.type), file.sha256, file.link_target,
                     file.executable);
}

bool is_wheel_rank(int rank) {
  return rank == wheels;
}

// Merges the smallest wheel layers into one until at most kMaxLayers remain
// (`reserved` more layers follow: the image's own).
void merge_small_wheels(std::vector<PlannedLayer>& layers, std::vector<int>& ranks) {
  if (layers.size() + 1 <= kMaxLayers) return;
  std::vector<std::size_t> small;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (is_wheel_rank(ranks[i])) small.push_back(i);
  }
  std::sort(small.begin(), small.end(),
            [&](std::size_t a, std::size_t b) { return layers[a].bytes < layers[b].bytes; });
  const auto excess = layers.size() + 1 - kMaxLayers;  // merging n layers removes n - 1
  if (small.size() < 2) return;
  small.resize(std::min(small.size(), excess + 1));
  std::sort(small.begin(), small.end());
  PlannedLayer merged{.label = "wheels:"};
  std::vector<std::string> names;
  for (const auto i : small) {
    names.push_back(layers[i].label);
    merged.bytes += layers[i].bytes;
    for (auto& entry : layers[i].entries)
      merged.entries.push_back(std::move(entry));
  }
  merged.label = "wheels: " + text::join(names, ", ");
  const auto at = small.front();
  for (auto it = small.rbegin(); it != small.rend(); ++it) {
    if (*it == at) continue;
    layers.erase(layers.begin() + static_cast<std::ptrdiff_t>(*it));
    ranks.erase(ranks.begin() + static_cast<std::ptrdiff_t>(*it));
  }
  layers[at] = std::move(merged);
}

}  // namespace

int stability_rank(const store::PackageReceipt& receipt) {
  const std::string_view name = receipt.name;
  if (name == "cuda" || name.find("cuda-runtime") != std::string_view::npos) return cuda_runtime;
  if (name.find("cublas") != std::string_view::npos) return cublas;
  if (name == "cudnn" || name.starts_with("nvidia-cudnn")) return cudnn;
  if (name.starts_with("nvidia-") || name.starts_with("cuda-")) return cuda_libraries;
  if (name == "zlib") return zlib;
  if (name == "python" || receipt.packaging == "venv") return python;
  if (std::find(kFrameworks.begin(), kFrameworks.end(), name) != kFrameworks.end())
    return framework;
  return wheels;
}

std::string image_link_target(const std::string& relative_link, const std::string& target,
                              const PrefixPaths& paths) {
  const fs::path absolute(target);
  if (!absolute.is_absolute()) return target;
  for (const auto& root : {paths.generation, paths.prefix}) {
    const auto inside = absolute.lexically_relative(root);
    if (inside.empty() || *inside.begin() == "..") continue;
    const auto from = fs::path(relative_link).parent_path();
    return from.empty() ? inside.generic_string()
                        : inside.lexically_relative(from).generic_string();
  }
  return target;
}

void add_parent_folders(std::vector<TarEntry>& entries, const std::string& owner) {
  std::set<std::string> present;
  for (const auto& entry : entries)
    present.insert(entry.path);
  std::set<std::string> folders;
  for (const auto& entry : entries) {
    for (auto parent = fs::path(entry.path).parent_path(); !parent.empty();
         parent = parent.parent_path()) {
      if (present.contains(parent.generic_string())) continue;
      folders.insert(parent.generic_string());
    }
  }
  for (const auto& folder : folders)
    entries.push_back({.path = folder, .type = TarEntry::Type::directory, .owner = owner});
}

std::string layer_key(const std::vector<TarEntry>& entries) {
  std::vector<std::string> lines;
  lines.reserve(entries.size());
  for (const auto& entry : entries) {
    const auto content = entry.source.empty() ? core::sha256_hex(entry.content) : entry.sha256;
    lines.push_back(fmt::format("{}\t{}\t{}\t{}\t{}", entry.path, static_cast<int>(entry.type),
                                entry.executable, content, entry.link_target));
  }
  std::sort(lines.begin(), lines.end());
  core::Sha256 digest;
  digest.update(kLayerFormat);
  for (const auto& line : lines) {
    digest.update("\n");
    digest.update(line);
  }
  return digest.hex_digest();
}

Result<std::vector<PlannedLayer>> plan_package_layers(
    const std::vector<store::PackageReceipt>& receipts, const PrefixPaths& paths) {
  std::vector<const store::PackageReceipt*> ordered;
  for (const auto& receipt : receipts)
    ordered.push_back(&receipt);
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto* a, const auto* b) {
    const auto ra = stability_rank(*a);
    const auto rb = stability_rank(*b);
    return ra != rb ? ra < rb : a->name < b->name;
  });
  // path -> (owner, identity): two packages may share a path only with one content.
  std::map<std::string, std::pair<std::string, std::string>> owners;
  std::vector<PlannedLayer> layers;
  std::vector<int> ranks;
  const auto wheel_files = wheel_files_by_content(receipts);
  for (const auto* receipt : ordered) {
    const auto owner = receipt->name + " " + receipt->version;
    PlannedLayer layer{.label = owner};
    for (const auto& file : receipt->files) {
      if (file.type != archive::EntryType::directory) {
        const auto [at, inserted] = owners.emplace(file.path, std::pair{owner, identity(file)});
        if (!inserted && at->second.second != identity(file)) {
          return Error::input(fmt::format("{} is in both {} and {} with different content: one "
                                          "image cannot hold both",
                                          file.path, at->second.first, owner))
              .hint("lock the two packages so that they agree, or leave one out");
        }
      }
      if (auto link = link_to_wheel_copy(*receipt, file, wheel_files)) {
        layer.entries.push_back(*std::move(link));
        continue;
      }
      auto entry = entry_of(*receipt, file, paths);
      if (!entry) return std::move(entry).error();
      layer.bytes += file.size;
      layer.entries.push_back(*std::move(entry));
    }
    add_parent_folders(layer.entries, owner);
    layers.push_back(std::move(layer));
    ranks.push_back(stability_rank(*receipt));
  }
  merge_small_wheels(layers, ranks);
  for (auto& layer : layers)
    layer.key = layer_key(layer.entries);
  return layers;
}

}  // namespace envkit::oci
