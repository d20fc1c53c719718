#include "envkit/oci/image_layout.hpp"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/oci/blob_reader.hpp"
#include "envkit/oci/layer_encoder.hpp"
#include "envkit/oci/tar_writer.hpp"
#include "envkit/oci/verify.hpp"
#include "envkit/sys/fs.hpp"
#include "envkit/sys/process.hpp"
#include "support/temp_dir.hpp"

namespace envkit::oci {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::TempDir;

// A small tar compressed into `out`.
Layer encoded_layer(const fs::path& out, Compression compression, const std::string& text) {
  auto encoder = LayerEncoder::create(out, compression, 2);
  REQUIRE(encoder);
  std::string tar;
  REQUIRE(write_tar({{.path = "opt/envkit/a.txt", .content = text}}, 0,
                    [&](std::string_view bytes) -> Result<void> {
                      tar.append(bytes);
                      return encoder->write(bytes);
                    }));
  auto digests = encoder->finish();
  REQUIRE(digests);
  CHECK(digests->diff_id == "sha256:" + core::sha256_hex(tar));
  CHECK(digests->size == fs::file_size(out));
  CHECK(digests->digest == "sha256:" + *core::sha256_file(out));
  return {.digests = *digests,
          .compression = compression,
          .blob = out,
          .annotations = {{"dev.envkit.package", "a 1.0"}}};
}

json read_json(const fs::path& path) {
  return json::parse(sys::read_file(path).value());
}

TEST_CASE("layer encoder: gzip and zstd are deterministic and decompress to the diff_id",
          "[oci][layout]") {
  const TempDir dir;
  const auto gzip = encoded_layer(dir.path() / "a.gz", Compression::gzip, "hello\n");
  const auto gzip_again = encoded_layer(dir.path() / "b.gz", Compression::gzip, "hello\n");
  CHECK(gzip.digests.digest == gzip_again.digests.digest);
  const auto bytes = sys::read_file(gzip.blob).value();
  CHECK(bytes.substr(0, 2) == "\x1f\x8b");
  CHECK(bytes.substr(4, 4) == std::string(4, '\0'));  // no mtime
  CHECK(bytes[9] == '\x03');                          // OS: Unix, on every machine
  const auto zstd = encoded_layer(dir.path() / "a.zst", Compression::zstd, "hello\n");
  CHECK(sys::read_file(zstd.blob).value().substr(0, 4) == "\x28\xb5\x2f\xfd");
  CHECK(encoded_layer(dir.path() / "b.zst", Compression::zstd, "hello\n").digests.digest ==
        zstd.digests.digest);
  const auto plain = encoded_layer(dir.path() / "a.tar", Compression::none, "hello\n");
  CHECK(plain.digests.digest == plain.digests.diff_id);
  CHECK(gzip.digests.diff_id == zstd.digests.diff_id);

  // --verify decompresses each format back to its diff_id.
  const auto layout = dir.path() / "layout";
  REQUIRE(write_image(layout, {.ref = "gz", .layers = {gzip}}));
  REQUIRE(write_image(layout, {.ref = "zst", .layers = {zstd}}));
  REQUIRE(write_image(layout, {.ref = "tar", .layers = {plain}}));
  const auto verified = verify_layout(layout, std::nullopt);
  INFO((verified ? "" : verified.error().to_string()));
  REQUIRE(verified);
  CHECK(verified->manifests == 3);
}

TEST_CASE(
    "layer encoder: gzip in blocks is the same blob on 1 and 4 threads, and gzip reads it back",
    "[oci][export]") {
  TempDir dir;
  // 3.3 MiB that compresses like a binary: several blocks, the last a short one.
  std::string input;
  std::uint32_t state = 12345;
  while (input.size() < (std::size_t{33} << 17)) {
    state = state * 1103515245U + 12345U;
    input += fmt::format("symbol_{:x} {}\n", (state >> 8) % 4096, input.size() % 97);
  }
  const auto encode = [&](const fs::path& out, int threads) {
    auto encoder = LayerEncoder::create(out, Compression::gzip, threads);
    REQUIRE(encoder);
    for (std::size_t at = 0; at < input.size(); at += 100'000)
      REQUIRE(encoder->write(std::string_view(input).substr(at, 100'000)));
    auto digests = encoder->finish();
    REQUIRE(digests);
    return *digests;
  };
  const auto one = encode(dir.path() / "one.gz", 1);
  const auto four = encode(dir.path() / "four.gz", 4);
  CHECK(one.digest == four.digest);
  CHECK(one.diff_id == "sha256:" + core::sha256_hex(input));
  CHECK(one.size < input.size() / 3);
  const auto gunzip = sys::run_process({"gzip", "-dc", (dir.path() / "four.gz").string()});
  REQUIRE(gunzip);
  CHECK(gunzip->exit_code == 0);
  CHECK(gunzip->out == input);
}

TEST_CASE(
    "a layer blob cut short, with bytes after its stream, or of another format than its media "
    "type says is refused, naming the blob",
    "[oci][export]") {
  TempDir dir;
  const auto layer = encoded_layer(dir.path() / "1.gz", Compression::gzip, "one\n");
  const auto media_type = layer_media_type(Compression::gzip);
  REQUIRE(read_layer_blob(layer.blob, media_type));
  const auto whole = sys::read_file(layer.blob).value();
  const auto refused = [&](const std::string& bytes, std::string_view type) {
    REQUIRE(sys::write_file_atomic(layer.blob, bytes));
    auto read = read_layer_blob(layer.blob, type);
    REQUIRE_FALSE(read);
    const auto said = read.error().message() + " " + text::join(read.error().causes(), " ");
    CHECK_THAT(said, Catch::Contains(layer.blob.string()));
    return said;
  };
  CHECK_THAT(refused(whole.substr(0, whole.size() - 6), media_type), Catch::Contains("gzip"));
  refused(whole + "trailing bytes", media_type);
  CHECK_THAT(refused(whole, layer_media_type(Compression::zstd)),
             Catch::Contains("says zstd, its bytes are gzip"));
}

TEST_CASE("image layout: index.json keeps other refs and replaces the same ref and platform",
          "[oci][layout]") {
  const TempDir dir;
  const auto layout = dir.path() / "layout";
  const auto first = encoded_layer(dir.path() / "1.gz", Compression::gzip, "one\n");
  const auto second = encoded_layer(dir.path() / "2.gz", Compression::gzip, "two\n");
  auto digest_one = write_image(layout, {.ref = "latest", .layers = {first}});
  REQUIRE(digest_one);
  REQUIRE(write_image(layout, {.ref = "other", .layers = {first}}));
  auto digest_two = write_image(layout, {.ref = "latest", .layers = {second}});
  REQUIRE(digest_two);
  CHECK(*digest_two != *digest_one);

  CHECK(read_json(layout / "oci-layout") == json{{"imageLayoutVersion", "1.0.0"}});
  const auto manifests = read_json(layout / "index.json").at("manifests");
  REQUIRE(manifests.size() == 2);
  CHECK(manifests[0].at("annotations").at("org.opencontainers.image.ref.name") == "other");
  CHECK(manifests[1].at("annotations").at("org.opencontainers.image.ref.name") == "latest");
  CHECK(manifests[1].at("digest") == *digest_two);
  CHECK(manifests[1].at("platform") == json{{"architecture", "amd64"}, {"os", "linux"}});
  const auto manifest = read_json(blob_path(layout, *digest_two));
  CHECK(manifest.at("layers").at(0).at("annotations").at("dev.envkit.package") == "a 1.0");
  CHECK(manifest.at("layers").at(0).at("mediaType") ==
        "application/vnd.oci.image.layer.v1.tar+gzip");

  // A broken index.json is refused, and left as it was.
  std::ofstream(layout / "index.json") << "{not json";
  auto refused = write_image(layout, {.ref = "latest", .layers = {first}});
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code() == ErrorCode::input);
  CHECK(sys::read_file(layout / "index.json").value() == "{not json");
}

TEST_CASE("export --verify refuses a corrupted blob and a wrong diff_id, naming the blob",
          "[oci][layout]") {
  const TempDir dir;
  const auto layout = dir.path() / "layout";
  const auto layer = encoded_layer(dir.path() / "1.gz", Compression::gzip, "one\n");
  REQUIRE(write_image(layout, {.ref = "good", .layers = {layer}}));
  REQUIRE(verify_layout(layout, "good"));

  SECTION("a blob whose bytes changed") {
    const auto blob = blob_path(layout, layer.digests.digest);
    fs::remove(blob);  // a hard link to the encoder's file: replace, do not write through
    auto bytes = sys::read_file(layer.blob).value();
    bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x55);
    std::ofstream(blob, std::ios::binary) << bytes;
    auto refused = verify_layout(layout, "good");
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code() == ErrorCode::input);
    CHECK_THAT(refused.error().message(), Catch::Contains(blob.string()));
  }
  SECTION("a layer whose config states another diff_id") {
    auto wrong = layer;
    wrong.digests.diff_id = "sha256:" + std::string(64, '0');
    REQUIRE(write_image(layout, {.ref = "bad", .layers = {wrong}}));
    auto refused = verify_layout(layout, "bad");
    REQUIRE_FALSE(refused);
    CHECK_THAT(refused.error().message(),
               Catch::Contains(blob_path(layout, layer.digests.digest).string()) &&
                   Catch::Contains("diff_id"));
    CHECK_FALSE(verify_layout(layout, std::nullopt));
    CHECK(verify_layout(layout, "good"));
  }
  SECTION("a ref the layout does not have") {
    auto missing = verify_layout(layout, "nope");
    REQUIRE_FALSE(missing);
    CHECK_THAT(missing.error().message(), Catch::Contains("no image nope"));
  }
}

}  // namespace
}  // namespace envkit::oci
