#include "spool.hpp"

#include <fmt/format.h>

#include <fstream>
#include <vector>

#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"

namespace envkit::store {

namespace {

// Few, large writes: a CUDA wheel is spooled in about a thousand.
constexpr std::size_t kChunk = std::size_t{1} << 20;

Error cannot_write(const std::filesystem::path& file) {
  return Error::failed("cannot write " + text::quoted(file.string()))
      .because("the disk may be full");
}

}  // namespace

TempFile::~TempFile() {
  if (path_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove(path_, ignored);
}

Result<Spooled> spool(net::ByteStream& stream, const std::filesystem::path& file,
                      bool& unreachable) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) return Error::failed("cannot write " + text::quoted(file.string()));
  core::Sha256 sha;
  Spooled spooled;
  std::vector<std::byte> buffer(kChunk);
  while (true) {
    auto count = stream.read(buffer);
    if (!count) {
      unreachable = true;
      return std::move(count).error();
    }
    if (*count == 0) break;
    sha.update(std::span(buffer).first(*count));
    out.write(reinterpret_cast<const char*>(buffer.data()), static_cast<std::streamsize>(*count));
    if (!out) return cannot_write(file);
    spooled.bytes += *count;
  }
  if (!out.flush()) return cannot_write(file);
  spooled.sha256 = sha.hex_digest();
  return spooled;
}

Error checksum_mismatch(std::string_view label, std::string_view expected, std::string_view actual,
                        std::string_view url) {
  return Error::failed(fmt::format("checksum mismatch for {}", label))
      .because(fmt::format("expected sha256 {}", expected))
      .because(fmt::format("got      sha256 {}", actual))
      .because(fmt::format("downloaded from {}", url));
}

}  // namespace envkit::store
