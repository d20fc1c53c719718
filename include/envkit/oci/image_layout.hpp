#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/oci/layer_encoder.hpp"
#include "envkit/specs/platform.hpp"

// An OCI image layout (image-spec 1.1): DIR/oci-layout, DIR/index.json and
// DIR/blobs/sha256/<hex>. Blobs go in first, index.json last by a rename, so a
// failed export leaves the previous layout as it was.
namespace envkit::oci {

inline constexpr std::string_view kManifestMediaType = "application/vnd.oci.image.manifest.v1+json";
inline constexpr std::string_view kConfigMediaType = "application/vnd.oci.image.config.v1+json";
inline constexpr std::string_view kRefAnnotation = "org.opencontainers.image.ref.name";

// A layer ready to go into a layout: its blob file and what it holds.
struct Layer {
  BlobDigests digests;
  Compression compression = Compression::gzip;
  std::filesystem::path blob;  // the compressed file (in the layer cache, or a base layout)
  std::map<std::string, std::string> annotations;  // dev.envkit.package = "name version"
};

struct Image {
  std::string ref = "latest";
  specs::Platform platform = specs::Platform::linux_x86_64;
  std::vector<std::string> env;               // config.Env, "NAME=value"
  std::map<std::string, std::string> labels;  // config.Labels, also the manifest's annotations
  std::vector<Layer> layers;                  // base first
};

// "amd64" / "arm64": the OCI architecture of a platform; its os is "linux".
[[nodiscard]] std::string oci_architecture(specs::Platform platform);

// Writes `image` into the layout at `dir` (made when missing): its layers'
// blobs (hard-linked where the file system allows, else copied), its config,
// its manifest, then index.json with the manifest of the same ref and platform
// replaced and the others kept. Returns the manifest's digest ("sha256:<hex>").
[[nodiscard]] Result<std::string> write_image(const std::filesystem::path& dir, const Image& image);

// DIR/blobs/sha256/<hex> of a "sha256:<hex>" digest.
[[nodiscard]] std::filesystem::path blob_path(const std::filesystem::path& dir,
                                              std::string_view digest);

// Puts `file` at `to` by a hard link, else a copy (through a temporary file and
// a rename). Nothing is done when `to` exists.
[[nodiscard]] Result<void> place_blob(const std::filesystem::path& file,
                                      const std::filesystem::path& to);

}  // namespace envkit::oci
