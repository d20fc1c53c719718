#include "raw_inflate.hpp"

#include <isa-l/crc.h>
#include <isa-l/igzip_lib.h>

#include <limits>

namespace envkit::archive::detail {

struct RawInflater::State {
  inflate_state isal{};
};

RawInflater::RawInflater() : state_(std::make_unique<State>()) {
  reset();
}

RawInflater::~RawInflater() = default;

void RawInflater::reset() {
  isal_inflate_init(&state_->isal);
  // Raw deflate (no header) whose CRC-32 ISA-L keeps as it writes: no
  // second pass over the output.
  state_->isal.crc_flag = ISAL_GZIP_NO_HDR;
}

void RawInflater::feed(std::span<const std::byte> input) {
  // The callers' chunks are 1 MiB; avail_in is 32 bits.
  state_->isal.next_in = reinterpret_cast<std::uint8_t*>(const_cast<std::byte*>(input.data()));
  state_->isal.avail_in = static_cast<std::uint32_t>(
      std::min<std::size_t>(input.size(), std::numeric_limits<std::uint32_t>::max()));
}

bool RawInflater::consumed() const {
  return state_->isal.avail_in == 0;
}

RawInflater::Step RawInflater::inflate(std::span<std::byte> output) {
  auto& isal = state_->isal;
  isal.next_out = reinterpret_cast<std::uint8_t*>(output.data());
  isal.avail_out = static_cast<std::uint32_t>(
      std::min<std::size_t>(output.size(), std::numeric_limits<std::uint32_t>::max()));
  const auto before = isal.avail_out;
  const int status = isal_inflate(&isal);
  return Step{.produced = before - isal.avail_out,
              .finished = isal.block_state == ISAL_BLOCK_FINISH,
              .corrupt = status != ISAL_DECOMP_OK};
}

std::uint32_t RawInflater::crc32() const {
  return state_->isal.crc;
}

std::uint32_t crc32_update(std::uint32_t crc, std::span<const std::byte> bytes) {
  return crc32_gzip_refl(crc, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

}  // namespace envkit::archive::detail
