#include "envkit/oci/layer_encoder.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/sys/unique_fd.hpp"

namespace envkit::oci {

namespace {

constexpr std::size_t kChunk = std::size_t{1} << 18;
constexpr int kGzipLevel = 6;
constexpr int kZstdLevel = 3;
constexpr int kGzipWindowBits = 15 + 16;  // 16: a gzip wrapper, not zlib's
constexpr int kGzipMemLevel = 8;
constexpr int kOsUnix = 3;

}  // namespace

std::string_view to_string(Compression compression) {
  switch (compression) {
    case Compression::gzip:
      return "gzip";
    case Compression::zstd:
      return "zstd";
    case Compression::none:
      return "none";
  }
  return "none";
}

std::optional<Compression> parse_compression(std::string_view text) {
  for (const auto compression : {Compression::gzip, Compression::zstd, Compression::none}) {
    if (text == to_string(compression)) return compression;
  }
  return std::nullopt;
}

std::string_view layer_media_type(Compression compression) {
  switch (compression) {
    case Compression::gzip:
      return "application/vnd.oci.image.layer.v1.tar+gzip";
    case Compression::zstd:
      return "application/vnd.oci.image.layer.v1.tar+zstd";
    case Compression::none:
      return "application/vnd.oci.image.layer.v1.tar";
  }
  return "application/vnd.oci.image.layer.v1.tar";
}

struct LayerEncoder::State {
  std::filesystem::path path;
  sys::UniqueFd fd;
  Compression compression = Compression::none;
  core::Sha256 tar_digest;
  core::Sha256 blob_digest;
  std::uint64_t size = 0;
  z_stream gzip{};
  gz_header gzip_header{};
  bool gzip_open = false;
  ZSTD_CCtx* zstd = nullptr;
  std::vector<char> out = std::vector<char>(kChunk);

  ~State() {
    if (gzip_open) deflateEnd(&gzip);
    if (zstd != nullptr) ZSTD_freeCCtx(zstd);
  }

  Result<void> put(const char* data, std::size_t length) {
    blob_digest.update(std::string_view(data, length));
    size += length;
    while (length > 0) {
      const auto wrote = ::write(fd.get(), data, length);
      if (wrote < 0) {
        if (errno == EINTR) continue;
        return Error::failed(fmt::format("cannot write {}", text::quoted(path.string())))
            .because(std::strerror(errno));
      }
      data += wrote;
      length -= static_cast<std::size_t>(wrote);
    }
    return {};
  }

  Result<void> deflate_some(std::string_view in, int flush) {
    gzip.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));  // NOLINT
    gzip.avail_in = static_cast<uInt>(in.size());
    for (;;) {
      gzip.next_out = reinterpret_cast<Bytef*>(out.data());
      gzip.avail_out = static_cast<uInt>(out.size());
      const int status = deflate(&gzip, flush);
      if (status == Z_STREAM_ERROR) return Error::internal("zlib's deflate failed");
      const auto produced = out.size() - gzip.avail_out;
      if (auto put_out = put(out.data(), produced); !put_out) return put_out;
      if (flush == Z_FINISH ? status == Z_STREAM_END : gzip.avail_out != 0) return {};
    }
  }

  Result<void> zstd_some(std::string_view in, ZSTD_EndDirective mode) {
    ZSTD_inBuffer input{in.data(), in.size(), 0};
    for (;;) {
      ZSTD_outBuffer output{out.data(), out.size(), 0};
      const auto left = ZSTD_compressStream2(zstd, &output, &input, mode);
      if (ZSTD_isError(left) != 0) {
        return Error::internal(fmt::format("zstd failed: {}", ZSTD_getErrorName(left)));
      }
      if (auto put_out = put(out.data(), output.pos); !put_out) return put_out;
      const bool done = mode == ZSTD_e_end ? left == 0 : input.pos == input.size;
      if (done) return {};
    }
  }
};

LayerEncoder::LayerEncoder(std::unique_ptr<State> state) : state_(std::move(state)) {}
LayerEncoder::~LayerEncoder() = default;
LayerEncoder::LayerEncoder(LayerEncoder&&) noexcept = default;
LayerEncoder& LayerEncoder::operator=(LayerEncoder&&) noexcept = default;

Result<LayerEncoder> LayerEncoder::create(const std::filesystem::path& out, Compression compression,
                                          int threads) {
  auto state = std::make_unique<State>();
  state->path = out;
  state->compression = compression;
  state->fd = sys::UniqueFd(::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!state->fd.valid()) {
    return Error::failed(fmt::format("cannot create {}", text::quoted(out.string())))
        .because(std::strerror(errno));
  }
  if (compression == Compression::gzip) {
    if (deflateInit2(&state->gzip, kGzipLevel, Z_DEFLATED, kGzipWindowBits, kGzipMemLevel,
                     Z_DEFAULT_STRATEGY) != Z_OK)
      return Error::internal("zlib's deflateInit2 failed");
    state->gzip_open = true;
    // No name, no time, and the same OS byte on every machine.
    state->gzip_header.os = kOsUnix;
    if (deflateSetHeader(&state->gzip, &state->gzip_header) != Z_OK)
      return Error::internal("zlib's deflateSetHeader failed");
  } else if (compression == Compression::zstd) {
    state->zstd = ZSTD_createCCtx();
    if (state->zstd == nullptr) return Error::internal("cannot make a zstd context");
    ZSTD_CCtx_setParameter(state->zstd, ZSTD_c_compressionLevel, kZstdLevel);
    ZSTD_CCtx_setParameter(state->zstd, ZSTD_c_checksumFlag, 1);
    const auto workers =
        ZSTD_CCtx_setParameter(state->zstd, ZSTD_c_nbWorkers, std::max(threads, 1));
    if (ZSTD_isError(workers) != 0) {
      return Error::failed(
                 "this libzstd has no worker threads: its output would differ from "
                 "other machines'")
          .hint("use --compress gzip, or a libzstd built with multithreading");
    }
  }
  return LayerEncoder(std::move(state));
}

Result<void> LayerEncoder::write(std::string_view bytes) {
  auto& state = *state_;
  state.tar_digest.update(bytes);
  switch (state.compression) {
    case Compression::none:
      return state.put(bytes.data(), bytes.size());
    case Compression::gzip:
      return state.deflate_some(bytes, Z_NO_FLUSH);
    case Compression::zstd:
      return state.zstd_some(bytes, ZSTD_e_continue);
  }
  return {};
}

Result<BlobDigests> LayerEncoder::finish() {
  auto& state = *state_;
  if (state.compression == Compression::gzip) {
    if (auto done = state.deflate_some({}, Z_FINISH); !done) return std::move(done).error();
  } else if (state.compression == Compression::zstd) {
    if (auto done = state.zstd_some({}, ZSTD_e_end); !done) return std::move(done).error();
  }
  if (::fsync(state.fd.get()) != 0) {
    return Error::failed(fmt::format("cannot write {}", text::quoted(state.path.string())))
        .because(std::strerror(errno));
  }
  state.fd = sys::UniqueFd();
  return BlobDigests{.diff_id = "sha256:" + state.tar_digest.hex_digest(),
                     .digest = "sha256:" + state.blob_digest.hex_digest(),
                     .size = state.size};
}

}  // namespace envkit::oci
