// Unpacks a makeself runfile's payload in one pass: header, then exactly the
// stated payload bytes through the safe extractor, with the stated checksums
// computed on a second thread while libarchive decodes the same block.
#include "envkit/archive/runfile.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "decoder.hpp"
#include "envkit/core/sha256.hpp"
#include "envkit/sys/unique_fd.hpp"
#include "file_source.hpp"
#include "runfile_stream.hpp"

namespace envkit::archive {

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kHeaderChunk = std::size_t{64} << 10;

// POSIX cksum (makeself's CRCsum): CRC-32, polynomial 0x04C11DB7, most
// significant bit first, then the length, complemented. Slicing by 8 bytes.
class Cksum {
 public:
  void update(std::span<const std::byte> bytes) {
    const auto& t = tables();
    auto crc = crc_;
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
    std::size_t n = bytes.size();
    length_ += n;
    while (n >= 8) {
      const std::uint32_t one = crc ^ (std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 |
                                       std::uint32_t{p[2]} << 8 | p[3]);
      crc = t[7][one >> 24] ^ t[6][(one >> 16) & 0xff] ^ t[5][(one >> 8) & 0xff] ^
            t[4][one & 0xff] ^ t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
      p += 8;
      n -= 8;
    }
    while (n-- > 0)
      crc = (crc << 8) ^ t[0][((crc >> 24) ^ *p++) & 0xff];
    crc_ = crc;
  }
  [[nodiscard]] std::uint32_t value() const {
    auto crc = crc_;
    const auto& t = tables();
    for (auto length = length_; length != 0; length >>= 8)
      crc = (crc << 8) ^ t[0][((crc >> 24) ^ (length & 0xff)) & 0xff];
    return ~crc;
  }

 private:
  using Tables = std::array<std::array<std::uint32_t, 256>, 8>;
  static const Tables& tables() {
    static const Tables built = [] {
      Tables t{};
      for (std::uint32_t i = 0; i < 256; ++i) {
        std::uint32_t c = i << 24;
        for (int bit = 0; bit < 8; ++bit)
          c = (c & 0x80000000U) != 0 ? (c << 1) ^ 0x04C11DB7U : c << 1;
        t[0][i] = c;
      }
      for (std::size_t k = 1; k < 8; ++k)
        for (std::size_t i = 0; i < 256; ++i)
          t[k][i] = (t[k - 1][i] << 8) ^ t[0][t[k - 1][i] >> 24];
      return t;
    }();
    return built;
  }

  std::uint32_t crc_ = 0;
  std::uint64_t length_ = 0;
};

// The checksums one payload states, computed on a worker thread: the block
// handed over is hashed while libarchive decodes it, and the next hand-over
// waits for it, so the block is never rewritten while hashed and no copy is
// made.
class PayloadDigests {
 public:
  PayloadDigests(const MakeselfHeader& header, std::size_t index) {
    if (header.crc[index]) crc_.emplace();
    if (!header.md5[index].empty()) md5_.emplace();
    if (!header.sha256[index].empty()) sha256_.emplace();
    if (crc_ || md5_ || sha256_) worker_ = std::thread([this] { work(); });
  }
  ~PayloadDigests() {
    if (!worker_.joinable()) return;
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    changed_.notify_all();
    worker_.join();
  }
  PayloadDigests(const PayloadDigests&) = delete;
  PayloadDigests& operator=(const PayloadDigests&) = delete;

  // Hashes `block` in the background; it must stay unchanged until the next
  // call to submit() or wait().
  void submit(std::span<const std::byte> block) {
    if (!worker_.joinable()) return;
    wait();
    {
      std::lock_guard lock(mutex_);
      pending_ = block;
      busy_ = true;
    }
    changed_.notify_all();
  }
  void wait() {
    if (!worker_.joinable()) return;
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return !busy_; });
  }

  // The stated checksums that differ, as messages; call after wait().
  std::vector<std::string> mismatches(const MakeselfHeader& header, std::size_t index) {
    wait();
    std::vector<std::string> out;
    if (crc_ && crc_->value() != *header.crc[index]) {
      out.push_back(fmt::format("CRCsum (cksum) is {}, the header states {}", crc_->value(),
                                *header.crc[index]));
    }
    if (md5_) {
      if (auto md5 = md5_->hex_digest(); md5 != header.md5[index]) {
        out.push_back(fmt::format("MD5 is {}, the header states {}", md5, header.md5[index]));
      }
    }
    if (sha256_) {
      if (auto sha = sha256_->hex_digest(); sha != header.sha256[index]) {
        out.push_back(fmt::format("SHA256 is {}, the header states {}", sha, header.sha256[index]));
      }
    }
    return out;
  }

 private:
  void work() {
    std::unique_lock lock(mutex_);
    while (true) {
      changed_.wait(lock, [this] { return busy_ || done_; });
      if (!busy_) return;
      const auto block = pending_;
      lock.unlock();
      if (crc_) crc_->update(block);
      if (md5_) md5_->update(block);
      if (sha256_) sha256_->update(block);
      lock.lock();
      busy_ = false;
      changed_.notify_all();
    }
  }

  std::optional<Cksum> crc_;
  std::optional<core::Md5> md5_;
  std::optional<core::Sha256> sha256_;
  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::span<const std::byte> pending_;
  bool busy_ = false;
  bool done_ = false;
};

// The runfile's bytes after the header: what was read with the header first,
// then the source.
class Remainder {
 public:
  Remainder(Source& source, std::string already_read)
      : source_(source), pending_(std::move(already_read)) {}

  Result<std::size_t> read(std::span<std::byte> buffer) {
    if (offset_ < pending_.size()) {
      const auto n = std::min(buffer.size(), pending_.size() - offset_);
      std::memcpy(buffer.data(), pending_.data() + offset_, n);
      offset_ += n;
      if (offset_ == pending_.size()) {
        pending_ = std::string();
        offset_ = 0;
      }
      return n;
    }
    return source_.read(buffer);
  }
  // `bytes` are given again first, before what is pending.
  void put_back(std::string_view bytes) {
    pending_ = std::string(bytes) + pending_.substr(offset_);
    offset_ = 0;
  }
  // Up to `count` bytes that the next reads will give again.
  Result<std::string_view> peek(std::size_t count) {
    pending_.erase(0, offset_);
    offset_ = 0;
    std::array<std::byte, 4096> chunk{};
    while (pending_.size() < count) {
      auto n = source_.read(chunk);
      if (!n) return std::move(n).error();
      if (*n == 0) break;
      pending_.append(reinterpret_cast<const char*>(chunk.data()), *n);
    }
    return std::string_view(pending_).substr(0, count);
  }

 private:
  Source& source_;
  std::string pending_;
  std::size_t offset_ = 0;
};

// Exactly one payload's stated bytes, hashed on the way.
class PayloadSource final : public Source {
 public:
  PayloadSource(Remainder& rest, std::string name, std::uint64_t offset, std::uint64_t size,
                PayloadDigests& digests)
      : rest_(rest), name_(std::move(name)), offset_(offset), size_(size), digests_(digests) {}

  Result<std::size_t> read(std::span<std::byte> buffer) override {
    digests_.wait();  // the previous block is hashed before it is overwritten
    if (read_ == size_) return std::size_t{0};
    const auto want =
        static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), size_ - read_));
    auto n = rest_.read(buffer.first(want));
    if (!n) return std::move(n).error();
    if (*n == 0) {
      return Error::failed(fmt::format("the runfile `{}` ends early", name_))
          .because(fmt::format("its payload ends at byte {}; the header states {} bytes from "
                               "byte {} (filesizes), up to byte {}",
                               offset_ + read_, size_, offset_, offset_ + size_))
          .hint("the download was cut or the file is damaged: download it again");
    }
    read_ += *n;
    digests_.submit(buffer.first(*n));
    return *n;
  }
  [[nodiscard]] std::string name() const override { return name_; }

  // Reads what libarchive left (the compressed stream's tail), so the
  // checksums cover every stated byte.
  Result<void> drain() {
    std::vector<std::byte> buffer(kHeaderChunk);
    while (true) {
      auto n = read(buffer);
      if (!n) return std::move(n).error();
      if (*n == 0) break;
    }
    digests_.wait();
    return {};
  }
  [[nodiscard]] std::uint64_t consumed() const { return read_; }

 private:
  Remainder& rest_;
  std::string name_;
  std::uint64_t offset_;
  std::uint64_t size_;
  PayloadDigests& digests_;
  std::uint64_t read_ = 0;
};

// Whether `bytes` start as the header's compression does: the decoder's magic
// numbers (both enums name the compressions alike), or a tar's `ustar` for none.
bool starts_like(MakeselfCompression compression, std::string_view bytes) {
  if (compression == MakeselfCompression::none) {
    return bytes.size() < 262 || bytes.substr(257, 5) == "ustar";
  }
  return detail::compression_name(detail::sniff_compression(bytes)) == to_string(compression);
}

// Reads the header: first enough text to find the line count, then that many
// lines, never more than kMaxMakeselfHeaderBytes. What was read past it is put
// back into `rest`.
Result<MakeselfHeader> read_header(Remainder& rest, const std::string& name) {
  std::string text;
  std::vector<std::byte> chunk(kHeaderChunk);
  std::optional<std::uint64_t> lines;
  std::uint64_t newlines = 0;  // in `text`
  bool at_end = false;
  while (true) {
    if (!lines && looks_like_makeself(text)) {
      if (auto count = makeself_line_count(text, name)) lines = *count;
    }
    if (lines && newlines >= *lines) break;
    if (at_end) break;
    if (text.size() >= kMaxMakeselfHeaderBytes) {
      return Error::failed(fmt::format("cannot read the makeself header of `{}`", name))
          .because(fmt::format("no makeself header ends within its first {} bytes{}",
                               kMaxMakeselfHeaderBytes,
                               lines ? fmt::format(" (it states {} lines)", *lines) : ""))
          .hint("envkit reads NVIDIA's runfile installers, whose headers are a few KiB");
    }
    auto n = rest.read(chunk);
    if (!n) return std::move(n).error();
    if (*n == 0) {
      at_end = true;
      continue;
    }
    const std::string_view added(reinterpret_cast<const char*>(chunk.data()), *n);
    newlines += static_cast<std::uint64_t>(std::count(added.begin(), added.end(), '\n'));
    text += added;
  }
  if (!looks_like_makeself(text)) {
    return Error::failed(fmt::format("`{}` is not a makeself runfile", name))
        .because("expected a shell script naming Makeself and stating filesizes= at byte 0")
        .hint("NVIDIA's runfile installers (cuda_*_linux.run) are makeself archives");
  }
  auto header = parse_makeself_header(text, name);
  if (!header) return std::move(header).error();
  rest.put_back(std::string_view(text).substr(header->header_bytes));
  return header;
}

void append(ExtractResult& into, ExtractResult&& from) {
  into.bytes_written += from.bytes_written;
  for (auto& entry : from.entries)
    into.entries.push_back(std::move(entry));
}

}  // namespace

Result<ExtractResult> extract_runfile(Source& source, const fs::path& destination,
                                      const ExtractOptions& options) {
  return detail::extract_runfile_after(source, {}, destination, options);
}

Result<ExtractResult> detail::extract_runfile_after(Source& source, std::string already_read,
                                                    const fs::path& destination,
                                                    const ExtractOptions& options) {
  const auto name = source.name();
  Remainder rest(source, std::move(already_read));
  auto read = read_header(rest, name);
  if (!read) return std::move(read).error();
  const auto& header = *read;

  ExtractResult result;
  std::uint64_t offset = header.header_bytes;
  for (std::size_t i = 0; i < header.filesizes.size(); ++i) {
    const auto size = header.filesizes[i];
    // A wrong `head -n` count puts the offset inside the script or the payload.
    auto start = rest.peek(262);
    if (!start) return std::move(start).error();
    if (!starts_like(header.compression, *start)) {
      return Error::failed(fmt::format("cannot unpack `{}`", name))
          .because(fmt::format("no {} data at byte {}, where the header's {} lines end (head -n "
                               "{}); the header states the wrong line count or the file is "
                               "damaged",
                               to_string(header.compression), offset, header.line_count,
                               header.line_count))
          .hint("download the runfile again");
    }
    PayloadDigests digests(header, i);
    PayloadSource payload(rest, name, offset, size, digests);
    ExtractOptions payload_options = options;
    payload_options.max_bytes =
        options.max_bytes - std::min(options.max_bytes, result.bytes_written);
    auto unpacked = extract(payload, destination, payload_options);
    if (!unpacked) {
      Error error = std::move(unpacked).error();
      // The compressed data was cut at the stated size: filesizes states too few bytes.
      if (payload.consumed() == size && detail::cut_short(error)) {
        error.because(
            fmt::format("the header states {} payload bytes from byte {} (filesizes); "
                        "the compressed data goes on past them",
                        size, offset));
      }
      return error;
    }
    if (auto drained = payload.drain(); !drained) return std::move(drained).error();
    if (const auto wrong = digests.mismatches(header, i); !wrong.empty()) {
      Error error = Error::failed(fmt::format("the runfile `{}` is damaged", name));
      for (const auto& why : wrong)
        error.because(
            fmt::format("payload {} (bytes {} to {}): {}", i + 1, offset, offset + size, why));
      return error.hint("download it again; what was unpacked so far is left in `" +
                        destination.string() + "`, discard it");
    }
    append(result, std::move(*unpacked));
    offset += size;
  }
  auto after = rest.peek(1);
  if (!after) return std::move(after).error();
  if (!after->empty()) {
    return Error::failed(fmt::format("the runfile `{}` is damaged", name))
        .because(fmt::format("it goes on after byte {}, where the header's payload ends "
                             "(filesizes=\"{}\")",
                             offset, fmt::join(header.filesizes, " ")))
        .hint("download it again");
  }
  return result;
}

Result<ExtractResult> extract_runfile_file(const fs::path& runfile, const fs::path& destination,
                                           const ExtractOptions& options) {
  const auto name = runfile.string();
  std::error_code error;
  const auto status = fs::status(runfile, error);
  if (!fs::exists(status))
    return Error::input(fmt::format("the runfile `{}` does not exist", name));
  if (!fs::is_regular_file(status)) return Error::input(fmt::format("`{}` is not a file", name));
  sys::UniqueFd fd(::open(runfile.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    return Error::failed(fmt::format("cannot open `{}`", name)).because(std::strerror(errno));
  }
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  detail::FileSource source(std::move(fd), name);
  return extract_runfile(source, destination, options);
}

bool is_runfile(const fs::path& path) {
  sys::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return false;
  std::string prefix(4096, '\0');
  const auto n = ::read(fd.get(), prefix.data(), prefix.size());
  if (n <= 0) return false;
  prefix.resize(static_cast<std::size_t>(n));
  return looks_like_makeself(prefix);
}

}  // namespace envkit::archive
