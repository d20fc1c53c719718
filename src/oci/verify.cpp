#include "envkit/oci/verify.hpp"

#include <fmt/format.h>
#include <zlib.h>
#include <zstd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/oci/image_layout.hpp"
#include "envkit/sys/fs.hpp"

namespace envkit::oci {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::size_t kReadChunk = std::size_t{1} << 18;

Error bad_blob(const fs::path& blob, const std::string& what) {
  return Error::input(fmt::format("{}: {}", blob.string(), what))
      .hint("export again: `envkit export --oci DIR` rewrites the layout");
}

// Hashes a blob's stored bytes and, through `decode`, the bytes it decompresses to.
struct StreamDigests {
  std::string stored;
  std::uint64_t size = 0;
  std::string decoded;
};

Result<StreamDigests> digest_blob(const fs::path& blob, const std::string& media_type) {
  std::ifstream in(blob, std::ios::binary);
  if (!in) return bad_blob(blob, "missing or unreadable");
  core::Sha256 stored;
  core::Sha256 decoded;
  std::uint64_t size = 0;
  std::vector<char> buffer(kReadChunk);
  std::vector<char> out(kReadChunk);
  const bool gzip = media_type.ends_with("+gzip");
  const bool zstd = media_type.ends_with("+zstd");
  z_stream inflater{};
  if (gzip && inflateInit2(&inflater, 15 + 32) != Z_OK)
    return Error::internal("inflateInit2 failed");
  ZSTD_DCtx* zstd_context = zstd ? ZSTD_createDCtx() : nullptr;
  struct Cleanup {
    z_stream* inflater;
    bool gzip;
    ZSTD_DCtx* zstd;
    ~Cleanup() {
      if (gzip) inflateEnd(inflater);
      if (zstd != nullptr) ZSTD_freeDCtx(zstd);
    }
  } cleanup{&inflater, gzip, zstd_context};
  bool ended = !gzip;
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0) break;
    size += got;
    const std::string_view chunk(buffer.data(), got);
    stored.update(chunk);
    if (gzip) {
      inflater.next_in = reinterpret_cast<Bytef*>(buffer.data());
      inflater.avail_in = static_cast<uInt>(got);
      while (inflater.avail_in > 0 && !ended) {
        inflater.next_out = reinterpret_cast<Bytef*>(out.data());
        inflater.avail_out = static_cast<uInt>(out.size());
        const int status = inflate(&inflater, Z_NO_FLUSH);
        if (status != Z_OK && status != Z_STREAM_END && status != Z_BUF_ERROR)
          return bad_blob(blob, "not a valid gzip stream");
        decoded.update(std::string_view(out.data(), out.size() - inflater.avail_out));
        if (status == Z_STREAM_END) ended = true;
        if (status == Z_BUF_ERROR) break;
      }
    } else if (zstd) {
      ZSTD_inBuffer input{buffer.data(), got, 0};
      while (input.pos < input.size) {
        ZSTD_outBuffer output{out.data(), out.size(), 0};
        const auto status = ZSTD_decompressStream(zstd_context, &output, &input);
        if (ZSTD_isError(status) != 0) return bad_blob(blob, "not a valid zstd stream");
        decoded.update(std::string_view(out.data(), output.pos));
      }
    } else {
      decoded.update(chunk);
    }
  }
  if (!ended) return bad_blob(blob, "the gzip stream is cut short");
  return StreamDigests{.stored = "sha256:" + stored.hex_digest(),
                       .size = size,
                       .decoded = "sha256:" + decoded.hex_digest()};
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
    auto digests = digest_blob(path, layers[i].at("mediaType").get<std::string>());
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
