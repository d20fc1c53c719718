#include "envkit/oci/layer_encoder.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/sys/unique_fd.hpp"

namespace envkit::oci {

namespace {

constexpr std::size_t kChunk = std::size_t{1} << 18;
constexpr int kGzipLevel = 6;
constexpr int kZstdLevel = 3;
constexpr int kRawDeflateBits = -15;  // raw deflate: the gzip wrapper is written here
constexpr int kGzipMemLevel = 8;
// gzip is made as pigz makes it: the tar cut into blocks of a fixed size, each
// deflated on its own (with the previous block's last 32 KiB as its dictionary,
// so the ratio stays zlib's) and ended on a byte boundary, then joined into one
// stream. The blocks do not depend on the number of threads: neither does the blob.
constexpr std::size_t kGzipBlock = std::size_t{512} << 10;
constexpr std::size_t kDictionary = std::size_t{32} << 10;
// magic, deflate, no flags, mtime 0, no extra flags, OS "Unix": the same on every machine.
constexpr unsigned char kGzipHeader[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};

}  // namespace

// Named, not anonymous: LayerEncoder::State holds them.
namespace detail {

struct DeflatedBlock {
  std::string bytes;
  uLong crc = 0;
  std::size_t input_size = 0;
};

// One block of the gzip stream: raw deflate, primed with `dictionary`, ended
// with a sync flush (byte-aligned, not final) or, for the last, the final block.
DeflatedBlock deflate_block(const std::string& input, const std::string& dictionary, bool last) {
  z_stream stream{};
  DeflatedBlock block;
  block.input_size = input.size();
  block.crc = crc32(0L, reinterpret_cast<const Bytef*>(input.data()),  // NOLINT
                    static_cast<uInt>(input.size()));
  if (deflateInit2(&stream, kGzipLevel, Z_DEFLATED, kRawDeflateBits, kGzipMemLevel,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("zlib's deflateInit2 failed");
  }
  if (!dictionary.empty()) {
    deflateSetDictionary(&stream, reinterpret_cast<const Bytef*>(dictionary.data()),  // NOLINT
                         static_cast<uInt>(dictionary.size()));
  }
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));  // NOLINT
  stream.avail_in = static_cast<uInt>(input.size());
  block.bytes.resize(deflateBound(&stream, stream.avail_in) + 64);
  std::size_t produced = 0;
  for (;;) {
    stream.next_out = reinterpret_cast<Bytef*>(block.bytes.data() + produced);  // NOLINT
    stream.avail_out = static_cast<uInt>(block.bytes.size() - produced);
    const int status = deflate(&stream, last ? Z_FINISH : Z_SYNC_FLUSH);
    produced = block.bytes.size() - stream.avail_out;
    if (status == Z_STREAM_ERROR) {
      deflateEnd(&stream);
      throw std::runtime_error("zlib's deflate failed");
    }
    const bool done = last ? status == Z_STREAM_END : stream.avail_out != 0;
    if (done) break;
    block.bytes.resize(block.bytes.size() * 2);
  }
  deflateEnd(&stream);
  block.bytes.resize(produced);
  return block;
}

// A few threads that run tasks; results are taken in the order given.
class BlockWorkers {
 public:
  explicit BlockWorkers(int threads) {
    for (int i = 0; i < std::max(threads, 1); ++i)
      threads_.emplace_back([this] { work(); });
  }
  ~BlockWorkers() {
    {
      const std::lock_guard guard(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
  }
  BlockWorkers(const BlockWorkers&) = delete;
  BlockWorkers& operator=(const BlockWorkers&) = delete;

  std::future<DeflatedBlock> run(std::function<DeflatedBlock()> task) {
    std::packaged_task<DeflatedBlock()> job(std::move(task));
    auto result = job.get_future();
    {
      const std::lock_guard guard(mutex_);
      jobs_.push_back(std::move(job));
    }
    ready_.notify_one();
    return result;
  }
  [[nodiscard]] std::size_t size() const { return threads_.size(); }

 private:
  void work() {
    for (;;) {
      std::packaged_task<DeflatedBlock()> job;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return closed_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::packaged_task<DeflatedBlock()>> jobs_;
  bool closed_ = false;
  std::vector<std::jthread> threads_;  // last: joined before the rest goes
};

}  // namespace detail

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

std::optional<Compression> compression_of_media_type(std::string_view media_type) {
  if (media_type.ends_with("+gzip") || media_type.ends_with(".tar.gzip")) return Compression::gzip;
  if (media_type.ends_with("+zstd") || media_type.ends_with(".tar.zstd")) return Compression::zstd;
  if (media_type.ends_with(".tar")) return Compression::none;
  return std::nullopt;
}

struct LayerEncoder::State {
  std::filesystem::path path;
  sys::UniqueFd fd;
  Compression compression = Compression::none;
  core::Sha256 tar_digest;
  core::Sha256 blob_digest;
  std::uint64_t size = 0;
  // gzip: the block being filled, the dictionary for the next, blocks in flight.
  std::string block;
  std::string dictionary;
  std::deque<std::future<detail::DeflatedBlock>> deflating;
  uLong crc = crc32(0L, Z_NULL, 0);
  std::uint64_t tar_size = 0;
  std::unique_ptr<detail::BlockWorkers> workers;
  ZSTD_CCtx* zstd = nullptr;
  std::vector<char> out = std::vector<char>(kChunk);

  ~State() {
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

  // Writes finished blocks in order: all of them when `all`, else while more
  // are in flight than the workers can run (memory stays a few blocks).
  Result<void> write_deflated(bool all) {
    while (!deflating.empty() &&
           (all || deflating.size() > 2 * workers->size() ||
            deflating.front().wait_for(std::chrono::seconds(0)) == std::future_status::ready)) {
      detail::DeflatedBlock done;
      try {
        done = deflating.front().get();
      } catch (const std::exception& error) {
        return Error::internal(error.what());
      }
      deflating.pop_front();
      crc = crc32_combine(crc, done.crc, static_cast<z_off_t>(done.input_size));
      if (auto put_out = put(done.bytes.data(), done.bytes.size()); !put_out) return put_out;
    }
    return {};
  }

  Result<void> deflate_block_async(bool last) {
    auto input = std::move(block);
    block.clear();
    auto previous = std::move(dictionary);
    // Only the last block can be shorter than the dictionary: nothing follows it.
    dictionary = input.substr(input.size() - std::min(input.size(), kDictionary));
    deflating.push_back(
        workers->run([input = std::move(input), previous = std::move(previous), last] {
          return detail::deflate_block(input, previous, last);
        }));
    return write_deflated(false);
  }

  Result<void> gzip_some(std::string_view in) {
    tar_size += in.size();
    while (!in.empty()) {
      const auto take = std::min(in.size(), kGzipBlock - block.size());
      block.append(in.substr(0, take));
      in.remove_prefix(take);
      if (block.size() == kGzipBlock) {
        if (auto sent = deflate_block_async(false); !sent) return sent;
      }
    }
    return {};
  }

  Result<void> gzip_finish() {
    if (auto sent = deflate_block_async(true); !sent) return sent;
    if (auto written = write_deflated(true); !written) return written;
    unsigned char trailer[8];
    for (int i = 0; i < 4; ++i) {
      trailer[i] = static_cast<unsigned char>((crc >> (8 * i)) & 0xffU);
      trailer[4 + i] = static_cast<unsigned char>((tar_size >> (8 * i)) & 0xffU);
    }
    return put(reinterpret_cast<const char*>(trailer), sizeof trailer);  // NOLINT
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
    state->workers = std::make_unique<detail::BlockWorkers>(threads);
    if (auto header = state->put(reinterpret_cast<const char*>(kGzipHeader),  // NOLINT
                                 sizeof kGzipHeader);
        !header)
      return std::move(header).error();
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
      return state.gzip_some(bytes);
    case Compression::zstd:
      return state.zstd_some(bytes, ZSTD_e_continue);
  }
  return {};
}

Result<BlobDigests> LayerEncoder::finish() {
  auto& state = *state_;
  if (state.compression == Compression::gzip) {
    if (auto done = state.gzip_finish(); !done) return std::move(done).error();
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
