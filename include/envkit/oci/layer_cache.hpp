#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

#include "envkit/core/result.hpp"
#include "envkit/oci/image_layout.hpp"
#include "envkit/oci/layer_plan.hpp"

// Compressed layers kept in envkit's cache, so that exporting the same lock
// again costs nothing:
//   <cache>/oci/v1/layers/<key>-<epoch>.<format>        the blob
//   <cache>/oci/v1/layers/<key>-<epoch>.<format>.json   its digests, renamed in last
// <key> is layer_key(): the files' paths, modes and sha256s and the layer
// format's version. Blobs are hard-linked from here into a layout.
namespace envkit::oci {

class LayerCache {
 public:
  explicit LayerCache(const std::filesystem::path& cache_root);

  // The cached layer for `layer` compressed so, or nullopt.
  [[nodiscard]] std::optional<Layer> find(const PlannedLayer& layer, Compression compression,
                                          std::int64_t epoch) const;
  // Writes `layer`'s tar through the compressor into the cache; `threads` for zstd.
  [[nodiscard]] Result<Layer> build(const PlannedLayer& layer, Compression compression,
                                    std::int64_t epoch, int threads) const;

 private:
  [[nodiscard]] std::filesystem::path blob_of(const PlannedLayer& layer, Compression compression,
                                              std::int64_t epoch) const;
  std::filesystem::path dir_;
};

}  // namespace envkit::oci
