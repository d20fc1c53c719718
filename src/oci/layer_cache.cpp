#include "envkit/oci/layer_cache.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "envkit/core/text.hpp"
#include "envkit/sys/fs.hpp"

namespace envkit::oci {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path record_of(const fs::path& blob) {
  return blob.string() + ".json";
}

Layer layer_of(const PlannedLayer& planned, Compression compression, BlobDigests digests,
               fs::path blob) {
  return Layer{.digests = std::move(digests),
               .compression = compression,
               .blob = std::move(blob),
               .annotations = {{"dev.envkit.package", planned.label}}};
}

}  // namespace

LayerCache::LayerCache(const fs::path& cache_root) : dir_(cache_root / "oci" / "v1" / "layers") {}

fs::path LayerCache::blob_of(const PlannedLayer& layer, Compression compression,
                             std::int64_t epoch) const {
  return dir_ / fmt::format("{}-{}.{}", layer.key, epoch, to_string(compression));
}

std::optional<Layer> LayerCache::find(const PlannedLayer& layer, Compression compression,
                                      std::int64_t epoch) const {
  const auto blob = blob_of(layer, compression, epoch);
  auto text = sys::read_file(record_of(blob));
  if (!text) return std::nullopt;
  try {
    const auto record = json::parse(*text);
    BlobDigests digests{.diff_id = record.at("diff_id").get<std::string>(),
                        .digest = record.at("digest").get<std::string>(),
                        .size = record.at("size").get<std::uint64_t>()};
    // A blob removed or cut short by hand is built again rather than trusted.
    std::error_code error;
    if (fs::file_size(blob, error) != digests.size || error) return std::nullopt;
    return layer_of(layer, compression, std::move(digests), blob);
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

Result<Layer> LayerCache::build(const PlannedLayer& layer, Compression compression,
                                std::int64_t epoch, int threads) const {
  std::error_code error;
  fs::create_directories(dir_, error);
  if (error) {
    return Error::failed(
               fmt::format("cannot write the layer cache {}", text::quoted(dir_.string())))
        .because(error.message());
  }
  const auto blob = blob_of(layer, compression, epoch);
  const auto temporary = fs::path(blob.string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                                  std::to_string(reinterpret_cast<std::uintptr_t>(&layer)));
  struct Remove {
    fs::path path;
    ~Remove() {
      std::error_code ignored;
      if (!path.empty()) fs::remove(path, ignored);
    }
  } remove{temporary};
  auto encoder = LayerEncoder::create(temporary, compression, threads);
  if (!encoder) return std::move(encoder).error();
  if (auto written = write_tar(layer.entries, epoch,
                               [&](std::string_view bytes) { return encoder->write(bytes); });
      !written)
    return std::move(written).error();
  auto digests = encoder->finish();
  if (!digests) return std::move(digests).error();
  fs::rename(temporary, blob, error);
  if (error) {
    return Error::failed(fmt::format("cannot write {}", text::quoted(blob.string())))
        .because(error.message());
  }
  remove.path.clear();
  const json record = {{"diff_id", digests->diff_id},
                       {"digest", digests->digest},
                       {"size", digests->size},
                       {"label", layer.label}};
  // The record last: a blob without it is not trusted (and rebuilt).
  if (auto written =
          sys::write_file_atomic(record_of(blob), record.dump(1) + "\n", sys::Durability::unsynced);
      !written)
    return std::move(written).error();
  return layer_of(layer, compression, *std::move(digests), blob);
}

}  // namespace envkit::oci
