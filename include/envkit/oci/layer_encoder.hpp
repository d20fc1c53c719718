#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "envkit/core/result.hpp"

// A layer's blob written as its tar streams in: the tar compressed (or not)
// into a file, with both digests computed on the way (never re-read).
namespace envkit::oci {

enum class Compression : std::uint8_t { gzip, zstd, none };
[[nodiscard]] std::string_view to_string(Compression compression);
[[nodiscard]] std::optional<Compression> parse_compression(std::string_view text);
// The OCI media type of a layer compressed so.
[[nodiscard]] std::string_view layer_media_type(Compression compression);
// The compression a layer's media type names (OCI's `+gzip`, `+zstd`, plain
// `.tar`, and Docker's `.tar.gzip`); nullopt for a type that is no layer.
[[nodiscard]] std::optional<Compression> compression_of_media_type(std::string_view media_type);

struct BlobDigests {
  std::string diff_id;  // "sha256:<hex>" of the uncompressed tar
  std::string digest;   // "sha256:<hex>" of the blob as stored
  std::uint64_t size = 0;
};

class LayerEncoder {
 public:
  // gzip: zlib, level 6, a header with mtime 0 and OS "Unix" whatever the
  // machine. zstd: level 3 on `threads` worker threads (at least 1: its output
  // is then the same for any number of workers).
  [[nodiscard]] static Result<LayerEncoder> create(const std::filesystem::path& out,
                                                   Compression compression, int threads = 1);
  ~LayerEncoder();
  LayerEncoder(LayerEncoder&&) noexcept;
  LayerEncoder& operator=(LayerEncoder&&) noexcept;
  LayerEncoder(const LayerEncoder&) = delete;
  LayerEncoder& operator=(const LayerEncoder&) = delete;

  [[nodiscard]] Result<void> write(std::string_view bytes);
  // Flushes the compressor and the file (synced): the blob is complete.
  [[nodiscard]] Result<BlobDigests> finish();

 private:
  struct State;
  explicit LayerEncoder(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace envkit::oci
