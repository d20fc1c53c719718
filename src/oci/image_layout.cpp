#include "envkit/oci/image_layout.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/sys/fs.hpp"

namespace envkit::oci {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string hex_of(std::string_view digest) {
  const auto colon = digest.find(':');
  return std::string(colon == std::string_view::npos ? digest : digest.substr(colon + 1));
}

Error cannot_write(const fs::path& path, const std::error_code& error) {
  return Error::failed(fmt::format("cannot write {}", text::quoted(path.string())))
      .because(error.message());
}

// Writes `content` as a blob; returns its digest.
Result<std::string> put_json_blob(const fs::path& dir, const json& content, std::uint64_t& size) {
  const auto text = content.dump();
  const auto digest = "sha256:" + core::sha256_hex(text);
  size = text.size();
  const auto path = blob_path(dir, digest);
  std::error_code ignored;
  if (fs::exists(path, ignored)) return digest;
  if (auto written = sys::write_file_atomic(path, text); !written)
    return std::move(written).error();
  return digest;
}

json platform_json(specs::Platform platform) {
  return {{"architecture", oci_architecture(platform)}, {"os", "linux"}};
}

// The manifests index.json had, or none; a broken index.json is refused rather
// than replaced (it may hold images this export knows nothing of).
Result<json> existing_manifests(const fs::path& index) {
  std::error_code ignored;
  if (!fs::exists(index, ignored)) return json::array();
  auto text = sys::read_file(index);
  if (!text) return std::move(text).error();
  try {
    auto parsed = json::parse(*text);
    if (!parsed.contains("manifests")) return json::array();
    return parsed.at("manifests");
  } catch (const json::exception& error) {
    return Error::input(fmt::format("{} is not an OCI index", text::quoted(index.string())))
        .because(error.what())
        .hint("export into a new folder, or remove it");
  }
}

bool same_slot(const json& manifest, const std::string& ref, specs::Platform platform) {
  const auto annotations = manifest.value("annotations", json::object());
  return annotations.value(std::string(kRefAnnotation), std::string()) == ref &&
         manifest.value("platform", json::object()) == platform_json(platform);
}

}  // namespace

std::string oci_architecture(specs::Platform platform) {
  return platform == specs::Platform::linux_aarch64 ? "arm64" : "amd64";
}

fs::path blob_path(const fs::path& dir, std::string_view digest) {
  return dir / "blobs" / "sha256" / hex_of(digest);
}

Result<void> place_blob(const fs::path& file, const fs::path& to) {
  std::error_code error;
  if (fs::exists(to, error)) return {};
  fs::create_directories(to.parent_path(), error);
  if (error) return cannot_write(to.parent_path(), error);
  const auto temporary =
      to.parent_path() / (".tmp-" + to.filename().string() + "-" + std::to_string(::getpid()));
  fs::remove(temporary, error);
  fs::create_hard_link(file, temporary, error);
  if (error) {
    error.clear();
    fs::copy_file(file, temporary, fs::copy_options::overwrite_existing, error);
    if (error) return cannot_write(to, error);
  }
  fs::rename(temporary, to, error);
  if (error) {
    fs::remove(temporary, error);
    return cannot_write(to, error);
  }
  return {};
}

Result<std::string> write_image(const fs::path& dir, const Image& image) {
  std::error_code error;
  fs::create_directories(dir / "blobs" / "sha256", error);
  if (error) return cannot_write(dir, error);
  json layers = json::array();
  json diff_ids = json::array();
  for (const auto& layer : image.layers) {
    if (auto placed = place_blob(layer.blob, blob_path(dir, layer.digests.digest)); !placed)
      return std::move(placed).error();
    json descriptor = {{"mediaType", layer_media_type(layer.compression)},
                       {"digest", layer.digests.digest},
                       {"size", layer.digests.size}};
    if (!layer.annotations.empty()) descriptor["annotations"] = layer.annotations;
    layers.push_back(std::move(descriptor));
    diff_ids.push_back(layer.digests.diff_id);
  }
  json config = platform_json(image.platform);
  config["config"] = {{"Env", image.env}, {"Labels", image.labels}};
  config["rootfs"] = {{"type", "layers"}, {"diff_ids", diff_ids}};
  std::uint64_t config_size = 0;
  auto config_digest = put_json_blob(dir, config, config_size);
  if (!config_digest) return config_digest;

  const json manifest = {
      {"schemaVersion", 2},
      {"mediaType", kManifestMediaType},
      {"config",
       {{"mediaType", kConfigMediaType}, {"digest", *config_digest}, {"size", config_size}}},
      {"layers", layers},
      {"annotations", image.labels}};
  std::uint64_t manifest_size = 0;
  auto manifest_digest = put_json_blob(dir, manifest, manifest_size);
  if (!manifest_digest) return manifest_digest;

  auto manifests = existing_manifests(dir / "index.json");
  if (!manifests) return std::move(manifests).error();
  json kept = json::array();
  for (const auto& entry : *manifests) {
    if (!same_slot(entry, image.ref, image.platform)) kept.push_back(entry);
  }
  kept.push_back({{"mediaType", kManifestMediaType},
                  {"digest", *manifest_digest},
                  {"size", manifest_size},
                  {"platform", platform_json(image.platform)},
                  {"annotations", {{std::string(kRefAnnotation), image.ref}}}});
  if (!fs::exists(dir / "oci-layout", error)) {
    if (auto written = sys::write_file_atomic(dir / "oci-layout",
                                              json{{"imageLayoutVersion", "1.0.0"}}.dump());
        !written)
      return std::move(written).error();
  }
  const json index = {{"schemaVersion", 2},
                      {"mediaType", "application/vnd.oci.image.index.v1+json"},
                      {"manifests", kept}};
  if (auto written = sys::write_file_atomic(dir / "index.json", index.dump()); !written)
    return std::move(written).error();
  return *manifest_digest;
}

}  // namespace envkit::oci
