#pragma once

// Internal to archive: a zip entry's raw deflate data decoded piece by piece
// (ISA-L's isal_inflate), keeping the CRC-32 of what it produced. Twice
// zlib's speed on real wheels (docs/dependencies.md, "ISA-L"), and streaming:
// memory stays at one state (~40 KiB) and the caller's buffers whatever the
// entry's size.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace envkit::archive::detail {

class RawInflater {
 public:
  RawInflater();
  ~RawInflater();
  RawInflater(const RawInflater&) = delete;
  RawInflater& operator=(const RawInflater&) = delete;

  // Starts a new stream.
  void reset();
  // Gives it the next compressed bytes (kept by the caller until consumed()).
  void feed(std::span<const std::byte> input);
  // The input given by feed() is all used up.
  [[nodiscard]] bool consumed() const;

  struct Step {
    std::size_t produced = 0;  // bytes written at the start of `output`
    bool finished = false;     // the deflate stream's last block has ended
    bool corrupt = false;      // the data is not deflate
  };
  // Decodes into `output` until it is full, the input is used up, or the
  // stream ends.
  [[nodiscard]] Step inflate(std::span<std::byte> output);
  // The CRC-32 (zip's, gzip's) of every byte produced since reset().
  [[nodiscard]] std::uint32_t crc32() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The CRC-32 of `bytes` continued from `crc` (0 to start): for stored entries.
[[nodiscard]] std::uint32_t crc32_update(std::uint32_t crc, std::span<const std::byte> bytes);

}  // namespace envkit::archive::detail
