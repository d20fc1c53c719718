#include "envkit/oci/blob_reader.hpp"

#include <fmt/format.h>
#include <zlib.h>
#include <zstd.h>

#include <fstream>
#include <vector>

#include "envkit/core/sha256.hpp"

namespace envkit::oci {

namespace {

constexpr std::size_t kBlobChunk = std::size_t{1} << 18;
constexpr int kGunzipWindowBits = 15 + 32;  // 32: a gzip or zlib header, detected

Error unreadable_blob(const std::filesystem::path& blob, std::string_view what) {
  return Error::input(fmt::format("{}: {}", blob.string(), what))
      .hint("export again: `envkit export --oci DIR` rewrites the layout");
}

}  // namespace

Result<ReadBlob> read_layer_blob(const std::filesystem::path& blob, std::string_view media_type,
                                 const std::function<void(std::string_view)>& on_tar) {
  std::ifstream in(blob, std::ios::binary);
  if (!in) return unreadable_blob(blob, "missing or unreadable");
  core::Sha256 stored;
  core::Sha256 decoded;
  const auto emit = [&](std::string_view bytes) {
    decoded.update(bytes);
    if (on_tar) on_tar(bytes);
  };
  std::uint64_t size = 0;
  std::vector<char> buffer(kBlobChunk);
  std::vector<char> out(kBlobChunk);
  const bool gzip = media_type.ends_with("+gzip");
  const bool zstd = media_type.ends_with("+zstd");
  z_stream inflater{};
  if (gzip && inflateInit2(&inflater, kGunzipWindowBits) != Z_OK)
    return Error::internal("zlib's inflateInit2 failed");
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
    stored.update(std::string_view(buffer.data(), got));
    if (gzip) {
      inflater.next_in = reinterpret_cast<Bytef*>(buffer.data());
      inflater.avail_in = static_cast<uInt>(got);
      while (inflater.avail_in > 0 && !ended) {
        inflater.next_out = reinterpret_cast<Bytef*>(out.data());
        inflater.avail_out = static_cast<uInt>(out.size());
        const int status = inflate(&inflater, Z_NO_FLUSH);
        if (status != Z_OK && status != Z_STREAM_END && status != Z_BUF_ERROR)
          return unreadable_blob(blob, "not a valid gzip stream");
        emit(std::string_view(out.data(), out.size() - inflater.avail_out));
        if (status == Z_STREAM_END) ended = true;
        if (status == Z_BUF_ERROR) break;
      }
    } else if (zstd) {
      ZSTD_inBuffer input{buffer.data(), got, 0};
      while (input.pos < input.size) {
        ZSTD_outBuffer output{out.data(), out.size(), 0};
        const auto status = ZSTD_decompressStream(zstd_context, &output, &input);
        if (ZSTD_isError(status) != 0) return unreadable_blob(blob, "not a valid zstd stream");
        emit(std::string_view(out.data(), output.pos));
      }
    } else {
      emit(std::string_view(buffer.data(), got));
    }
  }
  if (!ended) return unreadable_blob(blob, "the gzip stream is cut short");
  return ReadBlob{.stored = "sha256:" + stored.hex_digest(),
                  .size = size,
                  .decoded = "sha256:" + decoded.hex_digest()};
}

}  // namespace envkit::oci
