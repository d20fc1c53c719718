#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/oci/tar_writer.hpp"
#include "envkit/store/records.hpp"

// Which files go in which layer of an exported image, and in which order
// (docs/export.md): one layer per installed package, the most stable first,
// the image's own small layer (lock, receipts, links, activation) last.
namespace envkit::oci {

// Where the environment lives in every image: a package's layer is then the
// same bytes in every image that holds it.
inline constexpr std::string_view kImageRoot = "/opt/envkit";
// Past this many layers the smallest wheel layers are merged into one.
inline constexpr std::size_t kMaxLayers = 100;

struct PlannedLayer {
  std::string label;              // "cudnn 9.1.0.70", or "wheels: a 1.0, b 2.0"
  std::vector<TarEntry> entries;  // paths under opt/envkit, parent folders included
  std::uint64_t bytes = 0;        // of its files, for building the biggest first
  std::string key;                // what its tar depends on: the layer cache's key
};

// Where the prefix's paths are read from and what they become in the image.
struct PrefixPaths {
  std::filesystem::path generation;  // the current generation's root: files are read there
  std::filesystem::path prefix;      // the path users and venv files name (the symlink)
};

// The order of packages in an image: CUDA runtime, cuBLAS, other CUDA
// libraries, cuDNN, zlib, Python, the other wheels alphabetically, the framework.
[[nodiscard]] int stability_rank(const store::PackageReceipt& receipt);

// One layer per receipt, ordered by stability_rank then name, small wheel
// layers merged past kMaxLayers. Refused, naming both packages and the path:
// two packages with different content at one path.
[[nodiscard]] Result<std::vector<PlannedLayer>> plan_package_layers(
    const std::vector<store::PackageReceipt>& receipts, const PrefixPaths& paths);

// A symlink's target as the image holds it: absolute targets inside the prefix
// (or its generation) made relative to the link's folder, others unchanged.
[[nodiscard]] std::string image_link_target(const std::string& relative_link,
                                            const std::string& target, const PrefixPaths& paths);

// Adds the folders above each entry (0755, `opt` and `opt/envkit` included)
// that are not entries already.
void add_parent_folders(std::vector<TarEntry>& entries, const std::string& owner);

// sha256 of everything a layer's tar is made of (paths, types, modes, content
// hashes, in-memory content) and of the tar format's version: equal keys give
// equal tars.
[[nodiscard]] std::string layer_key(const std::vector<TarEntry>& entries);

}  // namespace envkit::oci
