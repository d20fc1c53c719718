#pragma once

// Internal to archive: envkit decompresses gzip, xz, bzip2, zstd and lz4
// itself and gives libarchive only the tar (or zip) inside. libarchive's gzip
// filter never checks the gzip CRC32 and length, and libarchive stops
// reading at the tar's end-of-archive blocks, before any compressed
// stream's trailer; here every stream is read to its end, each member's
// trailer checked by its own library, and bytes after the last member are
// refused.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/archive/extract.hpp"
#include "envkit/core/result.hpp"

namespace envkit::archive::detail {

enum class Compression : std::uint8_t { none, gzip, xz, bzip2, zstd, lz4 };

[[nodiscard]] std::string_view compression_name(Compression compression);

// The compression whose magic number `start` (a stream's first bytes, at
// least 6 where the stream has them) begins with; `none` otherwise.
[[nodiscard]] Compression sniff_compression(std::string_view start);

// Whether `error` is DecodingSource's "the data is cut short" (the input
// ended inside a member).
[[nodiscard]] bool cut_short(const Error& error);

// A Source that decompresses another (or passes it through when it starts
// with no known magic number). Errors name the archive and say what was
// wrong ("gzip CRC mismatch: the download is corrupt").
class DecodingSource final : public Source {
 public:
  explicit DecodingSource(Source& inner);
  ~DecodingSource() override;
  DecodingSource(const DecodingSource&) = delete;
  DecodingSource& operator=(const DecodingSource&) = delete;

  Result<std::size_t> read(std::span<std::byte> buffer) override;
  [[nodiscard]] std::string name() const override { return name_; }

  // What the stream is compressed with (known after the first read).
  [[nodiscard]] Compression compression() const { return compression_; }

  // Decompresses what the reader left (a tar's padding after its end
  // blocks) to the end of the compressed stream, so every trailer is
  // checked. `take` is given the size of each batch of decompressed bytes;
  // its error stops the reading (a bomb hidden after the tar's end). A
  // stream that is not compressed is left as it is.
  Result<void> finish(const std::function<Result<void>(std::uint64_t)>& take);

  class Codec;

 private:
  Result<void> start();
  Result<std::size_t> refill();

  Source& inner_;
  std::string name_;
  Compression compression_ = Compression::none;
  bool started_ = false;
  std::vector<std::byte> input_;
  std::size_t input_at_ = 0;  // first unread byte of input_
  std::size_t input_end_ = 0;
  bool input_done_ = false;   // inner_ gave its last byte
  bool at_boundary_ = false;  // a member ended; the next byte starts another or nothing
  std::unique_ptr<Codec> codec_;
};

}  // namespace envkit::archive::detail
