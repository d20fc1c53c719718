// One-off comparison behind issue 20's raw-deflate decoder (docs/dependencies.md, "ISA-L";
// docs/benchmarks.md, "Raw deflate"): one large deflated entry of a real wheel (cuDNN's
// libcudnn_engines_precompiled.so.9, 570 MB) decoded by zlib, ISA-L and libdeflate, each with
// the CRC-32 the zip reader checks. Not part of the build:
//   g++ -O2 -std=c++20 -Isrc bench/inflate_speed.cpp -o /tmp/inflate_speed -lz -lisal -ldeflate
//   /tmp/inflate_speed WHEEL [ENTRY]   (ENTRY: default the largest)
// The compressed bytes are read into memory first (not timed); the output goes to a 1 MiB
// buffer that is overwritten (zlib, ISA-L: streaming) or to one buffer of the whole entry
// (libdeflate: whole buffers only). Best of 3.
#include <isa-l/crc.h>
#include <isa-l/igzip_lib.h>
#include <libdeflate.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "archive/zip_format.hpp"

using namespace envkit::archive::detail::zip;

namespace {

struct Found {
  std::string name;
  std::uint64_t offset = 0, compressed = 0, size = 0;
  std::uint32_t crc = 0;
};

Found find_entry(const std::string& file, const std::string& wanted) {
  const auto tail =
      std::string_view(file).substr(file.size() - std::min<std::size_t>(file.size(), 66000));
  const auto end = find_end_record(tail);
  std::uint64_t at = le(tail, end + 16, 4);
  const std::uint64_t stop = at + le(tail, end + 12, 4);
  Found best;
  while (at < stop) {
    const std::string_view d(file.data() + at, file.size() - at);
    const auto name_length = le(d, 28, 2), extra = le(d, 30, 2), comment = le(d, 32, 2);
    Found f{std::string(d.substr(46, name_length)), le(d, 42, 4), le(d, 20, 4), le(d, 24, 4),
            static_cast<std::uint32_t>(le(d, 16, 4))};
    read_zip64_extra(d.substr(46 + name_length, extra), f.size, f.compressed, f.offset);
    if (wanted.empty() ? f.size > best.size : f.name == wanted) best = f;
    at += 46 + name_length + extra + comment;
  }
  const std::string_view local(file.data() + best.offset, 30);
  best.offset += 30 + le(local, 26, 2) + le(local, 28, 2);
  return best;
}

constexpr std::size_t kOut = std::size_t{1} << 20;

std::uint32_t with_zlib(std::string_view in, std::uint64_t) {
  z_stream z{};
  inflateInit2(&z, -15);
  std::vector<unsigned char> out(kOut);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());  // < 4 GiB here
  uLong crc = crc32(0, nullptr, 0);
  int status = Z_OK;
  while (status != Z_STREAM_END) {
    z.next_out = out.data();
    z.avail_out = kOut;
    status = inflate(&z, Z_NO_FLUSH);
    if (status != Z_OK && status != Z_STREAM_END) std::abort();
    crc = crc32(crc, out.data(), static_cast<uInt>(kOut - z.avail_out));
  }
  inflateEnd(&z);
  return static_cast<std::uint32_t>(crc);
}

std::uint32_t with_isal(std::string_view in, std::uint64_t) {
  inflate_state state{};
  isal_inflate_init(&state);
  state.crc_flag = ISAL_GZIP_NO_HDR;  // ISA-L keeps the CRC-32 of what it writes
  std::vector<unsigned char> out(kOut);
  state.next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(in.data()));
  state.avail_in = static_cast<uint32_t>(in.size());
  while (state.block_state != ISAL_BLOCK_FINISH) {
    state.next_out = out.data();
    state.avail_out = kOut;
    if (isal_inflate(&state) != ISAL_DECOMP_OK) std::abort();
  }
  return state.crc;
}

std::uint32_t with_libdeflate(std::string_view in, std::uint64_t size) {
  static std::vector<unsigned char> out;
  out.resize(size);
  auto* d = libdeflate_alloc_decompressor();
  if (libdeflate_deflate_decompress(d, in.data(), in.size(), out.data(), size, nullptr) !=
      LIBDEFLATE_SUCCESS) {
    std::abort();
  }
  libdeflate_free_decompressor(d);
  return libdeflate_crc32(0, out.data(), size);
}

std::uint32_t crc_only_zlib(std::string_view, std::uint64_t size) {
  static std::vector<unsigned char> data(size, 7);
  return static_cast<std::uint32_t>(crc32_z(crc32(0, nullptr, 0), data.data(), size));
}

std::uint32_t crc_only_isal(std::string_view, std::uint64_t size) {
  static std::vector<unsigned char> data(size, 7);
  return crc32_gzip_refl(0, data.data(), size);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  std::ifstream stream(argv[1], std::ios::binary);
  std::stringstream buffer;
  buffer << stream.rdbuf();
  const std::string file = buffer.str();
  const auto entry = find_entry(file, argc > 2 ? argv[2] : "");
  const std::string_view in(file.data() + entry.offset, entry.compressed);
  std::printf("entry %s: %llu bytes deflated to %llu (crc %08x)\n", entry.name.c_str(),
              static_cast<unsigned long long>(entry.size),
              static_cast<unsigned long long>(entry.compressed), entry.crc);
  const std::pair<const char*, std::function<std::uint32_t(std::string_view, std::uint64_t)>>
      decoders[] = {{"zlib 1.2.13 inflate + crc32", with_zlib},
                    {"ISA-L 2.30 isal_inflate (crc_flag)", with_isal},
                    {"libdeflate 1.14 whole buffer + crc32", with_libdeflate},
                    {"crc32 alone, zlib", crc_only_zlib},
                    {"crc32 alone, ISA-L", crc_only_isal}};
  for (const auto& [label, decode] : decoders) {
    double best = 1e9;
    for (int i = 0; i < 3; ++i) {
      const auto start = std::chrono::steady_clock::now();
      const auto crc = decode(in, entry.size);
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      if (std::strncmp(label, "crc32 alone", 11) != 0 && crc != entry.crc) {
        std::printf("%s: CRC mismatch\n", label);
        return 1;
      }
      best = std::min(best, took.count());
    }
    std::printf("%-40s %7.3f s  %7.0f MB/s of output\n", label, best, entry.size / best / 1e6);
  }
}
