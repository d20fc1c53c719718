#include "decoder.hpp"

#include <bzlib.h>
#include <fmt/format.h>
#include <lz4frame.h>
#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "envkit/archive/decompress.hpp"

namespace envkit::archive::detail {

namespace {

// Input is read from the inner source in blocks of this size.
constexpr std::size_t kInputSize = std::size_t{1} << 20;
// Real archives need at most 64 MiB (xz -9); a hostile header may not ask
// for more memory than this.
constexpr std::uint64_t kXzMemoryLimit = std::uint64_t{128} << 20;

// The reason a codec gives, wrapped by DecodingSource with the archive's name.
Error reason(std::string text) {
  return Error::failed(std::move(text));
}

bool has_prefix(std::span<const std::byte> bytes, std::string_view magic) {
  return bytes.size() >= magic.size() && std::memcmp(bytes.data(), magic.data(), magic.size()) == 0;
}

// A zstd or lz4 skippable frame: 0x184D2A50 to 0x184D2A5F, little-endian.
bool skippable_frame(std::span<const std::byte> bytes) {
  return bytes.size() >= 4 && (std::to_integer<unsigned>(bytes[0]) & 0xF0U) == 0x50U &&
         has_prefix(bytes.subspan(1), "\x2a\x4d\x18");
}

constexpr std::string_view kGzipMagic = "\x1f\x8b";
constexpr std::string_view kXzMagic{
    "\xfd"
    "7zXZ\0",
    6};
constexpr std::string_view kBzip2Magic = "BZh";
constexpr std::string_view kZstdMagic = "\x28\xb5\x2f\xfd";
constexpr std::string_view kLz4Magic = "\x04\x22\x4d\x18";
// The words cut_short() looks for.
constexpr std::string_view kCutShort = "data is cut short";

}  // namespace

// One compression's decoder. step() decodes what it can of `in` into `out`;
// `member_end`: a member (gzip member, bzip2 stream, zstd or lz4 frame, the
// whole xz stream) ended, its trailer checked.
class DecodingSource::Codec {
 public:
  struct Step {
    std::size_t consumed = 0;
    std::size_t produced = 0;
    bool member_end = false;
  };
  virtual ~Codec() = default;
  virtual Result<Step> step(std::span<const std::byte> in, std::span<std::byte> out,
                            bool input_done) = 0;
  // Whether `bytes` (at least 4 when the stream has them) start another
  // member, after one ended.
  [[nodiscard]] virtual bool starts_member(std::span<const std::byte> bytes) const = 0;
  virtual Result<void> next_member() = 0;
};

namespace {

using Codec = DecodingSource::Codec;
using Step = Codec::Step;

template <typename T>
T* bytes_as(std::span<const std::byte> bytes) {
  // The C libraries take non-const input pointers they never write through.
  return reinterpret_cast<T*>(const_cast<std::byte*>(bytes.data()));
}

class GzipCodec final : public Codec {
 public:
  GzipCodec() {
    // 15 + 16: a gzip wrapper, whose CRC32 and ISIZE inflate checks.
    if (inflateInit2(&stream_, 15 + 16) != Z_OK) throw std::bad_alloc();
  }
  ~GzipCodec() override { inflateEnd(&stream_); }
  GzipCodec(const GzipCodec&) = delete;
  GzipCodec& operator=(const GzipCodec&) = delete;

  Result<Step> step(std::span<const std::byte> in, std::span<std::byte> out, bool) override {
    stream_.next_in = bytes_as<Bytef>(in);
    stream_.avail_in = static_cast<uInt>(std::min<std::size_t>(in.size(), UINT32_MAX));
    stream_.next_out = reinterpret_cast<Bytef*>(out.data());
    stream_.avail_out = static_cast<uInt>(std::min<std::size_t>(out.size(), UINT32_MAX));
    const auto in_before = stream_.avail_in;
    const auto out_before = stream_.avail_out;
    const int status = inflate(&stream_, Z_NO_FLUSH);
    Step step{.consumed = in_before - stream_.avail_in,
              .produced = out_before - stream_.avail_out,
              .member_end = status == Z_STREAM_END};
    if (status == Z_OK || status == Z_STREAM_END || status == Z_BUF_ERROR) return step;
    if (status == Z_MEM_ERROR) throw std::bad_alloc();
    const std::string_view message = stream_.msg != nullptr ? stream_.msg : "";
    if (message == "incorrect data check") {
      return reason("gzip CRC mismatch: the download is corrupt");
    }
    if (message == "incorrect length check") {
      return reason(
          "gzip length mismatch (ISIZE, the member's size stated in its trailer): the download "
          "is corrupt");
    }
    return reason(fmt::format("corrupt gzip data ({}): the download is corrupt",
                              message.empty() ? "zlib gave no reason" : message));
  }
  [[nodiscard]] bool starts_member(std::span<const std::byte> bytes) const override {
    return has_prefix(bytes, kGzipMagic);
  }
  Result<void> next_member() override {
    if (inflateReset(&stream_) != Z_OK) return reason("zlib could not start the next member");
    return {};
  }

 private:
  z_stream stream_{};
};

class XzCodec final : public Codec {
 public:
  XzCodec() {
    // Concatenated streams and their padding are liblzma's to check.
    if (lzma_stream_decoder(&stream_, kXzMemoryLimit, LZMA_CONCATENATED) != LZMA_OK) {
      throw std::bad_alloc();
    }
  }
  ~XzCodec() override { lzma_end(&stream_); }
  XzCodec(const XzCodec&) = delete;
  XzCodec& operator=(const XzCodec&) = delete;

  Result<Step> step(std::span<const std::byte> in, std::span<std::byte> out,
                    bool input_done) override {
    stream_.next_in = bytes_as<const std::uint8_t>(in);
    stream_.avail_in = in.size();
    stream_.next_out = reinterpret_cast<std::uint8_t*>(out.data());
    stream_.avail_out = out.size();
    // LZMA_FINISH once the input is all given: only then does a
    // concatenated decoder say the stream is whole.
    const auto status = lzma_code(&stream_, input_done ? LZMA_FINISH : LZMA_RUN);
    Step step{.consumed = in.size() - stream_.avail_in,
              .produced = out.size() - stream_.avail_out,
              .member_end = status == LZMA_STREAM_END};
    switch (status) {
      case LZMA_OK:
      case LZMA_STREAM_END:
      case LZMA_BUF_ERROR:  // no progress: the caller tells a cut stream
        return step;
      case LZMA_MEM_ERROR:
        throw std::bad_alloc();
      case LZMA_MEMLIMIT_ERROR:
        return reason(fmt::format("the xz stream needs more than {} MiB of memory to decompress",
                                  kXzMemoryLimit >> 20));
      case LZMA_FORMAT_ERROR:
        return reason("not xz data where the next xz stream (or the end) should be");
      case LZMA_OPTIONS_ERROR:
        return reason("the xz stream uses options this liblzma does not support");
      default:
        // After a whole stream, bytes that are not another one land here too.
        return reason(
            "corrupt xz data (a block's check, the index or the stream footer does not match, or "
            "bytes after the stream are not another xz stream): the download is corrupt");
    }
  }
  // The xz decoder reads concatenated streams itself: its one member ends
  // with the input.
  [[nodiscard]] bool starts_member(std::span<const std::byte>) const override { return false; }
  Result<void> next_member() override { return {}; }

 private:
  lzma_stream stream_ = LZMA_STREAM_INIT;
};

class Bzip2Codec final : public Codec {
 public:
  Bzip2Codec() { init(); }
  ~Bzip2Codec() override { BZ2_bzDecompressEnd(&stream_); }
  Bzip2Codec(const Bzip2Codec&) = delete;
  Bzip2Codec& operator=(const Bzip2Codec&) = delete;

  Result<Step> step(std::span<const std::byte> in, std::span<std::byte> out, bool) override {
    stream_.next_in = bytes_as<char>(in);
    stream_.avail_in = static_cast<unsigned>(std::min<std::size_t>(in.size(), UINT32_MAX));
    stream_.next_out = reinterpret_cast<char*>(out.data());
    stream_.avail_out = static_cast<unsigned>(std::min<std::size_t>(out.size(), UINT32_MAX));
    const auto in_before = stream_.avail_in;
    const auto out_before = stream_.avail_out;
    const int status = BZ2_bzDecompress(&stream_);
    Step step{.consumed = in_before - stream_.avail_in,
              .produced = out_before - stream_.avail_out,
              .member_end = status == BZ_STREAM_END};
    switch (status) {
      case BZ_OK:
      case BZ_STREAM_END:
        return step;
      case BZ_MEM_ERROR:
        throw std::bad_alloc();
      case BZ_DATA_ERROR_MAGIC:
        return reason("not bzip2 data where the next bzip2 stream should be");
      default:
        return reason(
            "corrupt bzip2 data (a block's CRC or the stream's CRC does not match): the download "
            "is corrupt");
    }
  }
  // pbzip2 writes one stream per block, one after another.
  [[nodiscard]] bool starts_member(std::span<const std::byte> bytes) const override {
    return has_prefix(bytes, kBzip2Magic);
  }
  Result<void> next_member() override {
    BZ2_bzDecompressEnd(&stream_);
    init();
    return {};
  }

 private:
  void init() {
    stream_ = bz_stream{};
    if (BZ2_bzDecompressInit(&stream_, 0, 0) != BZ_OK) throw std::bad_alloc();
  }
  bz_stream stream_{};
};

class ZstdCodec final : public Codec {
 public:
  ZstdCodec() : context_(ZSTD_createDCtx()) {
    if (context_ == nullptr) throw std::bad_alloc();
  }
  ~ZstdCodec() override { ZSTD_freeDCtx(context_); }
  ZstdCodec(const ZstdCodec&) = delete;
  ZstdCodec& operator=(const ZstdCodec&) = delete;

  Result<Step> step(std::span<const std::byte> in, std::span<std::byte> out, bool) override {
    ZSTD_inBuffer input{in.data(), in.size(), 0};
    ZSTD_outBuffer output{out.data(), out.size(), 0};
    // Its window is limited by zstd's default (128 MiB); the frame's
    // checksum, when it has one, is checked at the frame's end.
    const auto status = ZSTD_decompressStream(context_, &output, &input);
    if (ZSTD_isError(status) != 0U) {
      return reason(fmt::format("corrupt zstd data ({}): the download is corrupt",
                                ZSTD_getErrorName(status)));
    }
    return Step{.consumed = input.pos, .produced = output.pos, .member_end = status == 0};
  }
  [[nodiscard]] bool starts_member(std::span<const std::byte> bytes) const override {
    return has_prefix(bytes, kZstdMagic) || skippable_frame(bytes);
  }
  Result<void> next_member() override { return {}; }  // a new frame starts by itself

 private:
  ZSTD_DCtx* context_;
};

class Lz4Codec final : public Codec {
 public:
  Lz4Codec() {
    if (LZ4F_isError(LZ4F_createDecompressionContext(&context_, LZ4F_VERSION)) != 0U) {
      throw std::bad_alloc();
    }
  }
  ~Lz4Codec() override { LZ4F_freeDecompressionContext(context_); }
  Lz4Codec(const Lz4Codec&) = delete;
  Lz4Codec& operator=(const Lz4Codec&) = delete;

  Result<Step> step(std::span<const std::byte> in, std::span<std::byte> out, bool) override {
    std::size_t consumed = in.size();
    std::size_t produced = out.size();
    // The frame's and its blocks' checksums, when it has them, are checked here.
    const auto hint =
        LZ4F_decompress(context_, out.data(), &produced, in.data(), &consumed, nullptr);
    if (LZ4F_isError(hint) != 0U) {
      return reason(
          fmt::format("corrupt lz4 data ({}): the download is corrupt", LZ4F_getErrorName(hint)));
    }
    return Step{.consumed = consumed, .produced = produced, .member_end = hint == 0};
  }
  [[nodiscard]] bool starts_member(std::span<const std::byte> bytes) const override {
    return has_prefix(bytes, kLz4Magic) || skippable_frame(bytes);
  }
  Result<void> next_member() override { return {}; }  // a new frame starts by itself

 private:
  LZ4F_dctx* context_ = nullptr;
};

std::unique_ptr<Codec> make_codec(Compression compression) {
  switch (compression) {
    case Compression::gzip:
      return std::make_unique<GzipCodec>();
    case Compression::xz:
      return std::make_unique<XzCodec>();
    case Compression::bzip2:
      return std::make_unique<Bzip2Codec>();
    case Compression::zstd:
      return std::make_unique<ZstdCodec>();
    case Compression::lz4:
      return std::make_unique<Lz4Codec>();
    case Compression::none:
      break;
  }
  return nullptr;
}

}  // namespace

std::string_view compression_name(Compression compression) {
  switch (compression) {
    case Compression::gzip:
      return "gzip";
    case Compression::xz:
      return "xz";
    case Compression::bzip2:
      return "bzip2";
    case Compression::zstd:
      return "zstd";
    case Compression::lz4:
      return "lz4";
    case Compression::none:
      break;
  }
  return "none";
}

bool cut_short(const Error& error) {
  for (const auto& cause : error.causes()) {
    if (cause.find(kCutShort) != std::string::npos) return true;
  }
  return false;
}

Compression sniff_compression(std::string_view start) {
  if (start.starts_with(kGzipMagic)) return Compression::gzip;
  if (start.starts_with(kXzMagic)) return Compression::xz;
  // "BZh" and a block size digit.
  if (start.starts_with(kBzip2Magic) && start.size() > 3 && start[3] >= '1' && start[3] <= '9') {
    return Compression::bzip2;
  }
  if (start.starts_with(kZstdMagic)) return Compression::zstd;
  if (start.starts_with(kLz4Magic)) return Compression::lz4;
  return Compression::none;
}

DecodingSource::DecodingSource(Source& inner)
    : inner_(inner), name_(inner.name()), input_(kInputSize) {}

DecodingSource::~DecodingSource() = default;

Result<std::size_t> DecodingSource::refill() {
  // Keep what is unread, at the front.
  if (input_at_ > 0) {
    std::memmove(input_.data(), input_.data() + input_at_, input_end_ - input_at_);
    input_end_ -= input_at_;
    input_at_ = 0;
  }
  if (input_end_ == input_.size()) {
    return Error::internal(
        fmt::format("decompressing `{}` needed more than {} bytes at once", name_, input_.size()));
  }
  auto n = inner_.read(std::span(input_).subspan(input_end_));
  if (!n) return std::move(n).error();
  if (*n > input_.size() - input_end_) {
    return Error::internal("the archive source returned more bytes than asked");
  }
  if (*n == 0) input_done_ = true;
  input_end_ += *n;
  return *n;
}

Result<void> DecodingSource::start() {
  started_ = true;
  while (input_end_ < kXzMagic.size() && !input_done_) {
    if (auto n = refill(); !n) return std::move(n).error();
  }
  compression_ =
      sniff_compression(std::string_view(reinterpret_cast<const char*>(input_.data()), input_end_));
  codec_ = make_codec(compression_);
  return {};
}

namespace {

Error corrupt(std::string_view name, Error why) {
  return Error::failed(fmt::format("cannot unpack `{}`", name))
      .because(why.message())
      .hint("download it again; nothing unpacked from it can be trusted");
}

}  // namespace

Result<std::size_t> DecodingSource::read(std::span<std::byte> buffer) {
  if (!started_) {
    if (auto started = start(); !started) return std::move(started).error();
  }
  if (compression_ == Compression::none) {
    if (input_at_ < input_end_) {
      const auto n = std::min(buffer.size(), input_end_ - input_at_);
      std::memcpy(buffer.data(), input_.data() + input_at_, n);
      input_at_ += n;
      return n;
    }
    return inner_.read(buffer);
  }
  if (buffer.empty()) return std::size_t{0};
  const auto name = compression_name(compression_);
  while (true) {
    if (input_at_ == input_end_ && !input_done_) {
      if (auto n = refill(); !n) return std::move(n).error();
    }
    auto in = std::span<const std::byte>(input_).subspan(input_at_, input_end_ - input_at_);
    if (at_boundary_) {
      if (in.empty()) return std::size_t{0};  // the input ended with a whole member
      if (in.size() < 4 && !input_done_) {
        if (auto n = refill(); !n) return std::move(n).error();
        continue;
      }
      if (!codec_->starts_member(in)) {
        return corrupt(name_, reason(fmt::format("bytes follow the end of the {} data, and they "
                                                 "are not another {} member (trailing garbage)",
                                                 name, name)));
      }
      if (auto next = codec_->next_member(); !next) return corrupt(name_, next.error());
      at_boundary_ = false;
    }
    auto step = codec_->step(in, buffer, input_done_);
    if (!step) return corrupt(name_, std::move(step).error());
    input_at_ += step->consumed;
    if (step->member_end) at_boundary_ = true;
    if (step->produced > 0) return step->produced;
    if (step->consumed > 0 || step->member_end) continue;
    // No progress: the codec needs more input than there is.
    if (input_done_) {
      return corrupt(name_,
                     reason(fmt::format("the {} {} (its end and trailer are missing): the download "
                                        "is truncated",
                                        name, kCutShort)));
    }
    if (auto n = refill(); !n) return std::move(n).error();
  }
}

Result<void> DecodingSource::finish(const std::function<Result<void>(std::uint64_t)>& take) {
  if (!started_) {
    if (auto started = start(); !started) return std::move(started).error();
  }
  if (compression_ == Compression::none) return {};
  std::vector<std::byte> scratch(std::size_t{256} << 10);
  while (true) {
    auto n = read(scratch);
    if (!n) return std::move(n).error();
    if (*n == 0) return {};
    if (auto taken = take(*n); !taken) return taken;
  }
}

}  // namespace envkit::archive::detail

namespace envkit::archive {

Result<std::string> decompress_all(Source& source,
                                   const std::function<void(std::string_view)>& on_bytes) {
  detail::DecodingSource decoded(source);
  std::vector<std::byte> buffer(std::size_t{1} << 18);
  for (;;) {
    auto got = decoded.read(buffer);
    if (!got) return std::move(got).error();
    if (*got == 0) break;
    on_bytes(std::string_view(reinterpret_cast<const char*>(buffer.data()), *got));
  }
  return std::string(detail::compression_name(decoded.compression()));
}

}  // namespace envkit::archive
