#include "envkit/oci/verify.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <set>

#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/oci/blob_reader.hpp"
#include "envkit/oci/image_layout.hpp"
#include "envkit/sys/fs.hpp"

namespace envkit::oci {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Error bad_blob(const fs::path& blob, const std::string& what) {
  return Error::input(fmt::format("{}: {}", blob.string(), what))
      .hint("export again: `envkit export --oci DIR` rewrites the layout");
}

Result<json> read_json_blob(const fs::path& dir, const json& descriptor,
                            std::set<std::string>& seen, VerifyReport& report) {
  const auto digest = descriptor.at("digest").get<std::string>();
  const auto path = blob_path(dir, digest);
  auto text = sys::read_file(path);
  if (!text) return bad_blob(path, "missing or unreadable");
  const auto actual = "sha256:" + core::sha256_hex(*text);
  if (actual != digest)
    return bad_blob(path, fmt::format("its sha256 is {}, not {}", actual, digest));
  if (text->size() != descriptor.at("size").get<std::uint64_t>()) {
    return bad_blob(path, fmt::format("{} bytes, its descriptor says {}", text->size(),
                                      descriptor.at("size").get<std::uint64_t>()));
  }
  if (seen.insert(digest).second) ++report.blobs;
  return json::parse(*text);
}

Result<void> verify_manifest(const fs::path& dir, const json& descriptor,
                             std::set<std::string>& seen, VerifyReport& report) {
  auto manifest = read_json_blob(dir, descriptor, seen, report);
  if (!manifest) return std::move(manifest).error();
  auto config = read_json_blob(dir, manifest->at("config"), seen, report);
  if (!config) return std::move(config).error();
  const auto& layers = manifest->at("layers");
  const auto& diff_ids = config->at("rootfs").at("diff_ids");
  if (layers.size() != diff_ids.size()) {
    return bad_blob(blob_path(dir, manifest->at("config").at("digest").get<std::string>()),
                    fmt::format("{} diff_ids for {} layers", diff_ids.size(), layers.size()));
  }
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const auto digest = layers[i].at("digest").get<std::string>();
    const auto path = blob_path(dir, digest);
    auto digests = read_layer_blob(path, layers[i].at("mediaType").get<std::string>());
    if (!digests) return std::move(digests).error();
    if (digests->stored != digest)
      return bad_blob(path, fmt::format("its sha256 is {}, not {}", digests->stored, digest));
    if (digests->size != layers[i].at("size").get<std::uint64_t>()) {
      return bad_blob(path, fmt::format("{} bytes, its descriptor says {}", digests->size,
                                        layers[i].at("size").get<std::uint64_t>()));
    }
    if (digests->decoded != diff_ids[i].get<std::string>()) {
      return bad_blob(path, fmt::format("its tar's sha256 is {}, the config's diff_id says {}",
                                        digests->decoded, diff_ids[i].get<std::string>()));
    }
    if (seen.insert(digest).second) ++report.blobs;
  }
  ++report.manifests;
  return {};
}

}  // namespace

Result<VerifyReport> verify_layout(const fs::path& dir, const std::optional<std::string>& ref) {
  const auto index_path = dir / "index.json";
  auto text = sys::read_file(index_path);
  if (!text) {
    return Error::input(fmt::format("{} is not an OCI image layout", text::quoted(dir.string())))
        .because(text.error().message());
  }
  VerifyReport report;
  std::set<std::string> seen;
  try {
    const auto index = json::parse(*text);
    for (const auto& descriptor : index.at("manifests")) {
      const auto name = descriptor.value("annotations", json::object())
                            .value(std::string(kRefAnnotation), std::string());
      if (ref && name != *ref) continue;
      if (auto checked = verify_manifest(dir, descriptor, seen, report); !checked)
        return std::move(checked).error();
    }
  } catch (const json::exception& error) {
    return Error::input(fmt::format("{} holds a malformed index, manifest or config",
                                    text::quoted(dir.string())))
        .because(error.what());
  }
  if (report.manifests == 0) {
    return Error::input(ref ? fmt::format("{} has no image {}", text::quoted(dir.string()), *ref)
                            : fmt::format("{} has no image", text::quoted(dir.string())));
  }
  return report;
}

}  // namespace envkit::oci
