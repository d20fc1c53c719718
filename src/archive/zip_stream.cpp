// A zip unpacked as it downloads (extract_zip_stream): the bytes are read
// once, in order, and handed to the threads that inflate each entry; nothing
// is spooled to disk. The central directory, read last, must agree with
// every local header read on the way.

#include <fmt/format.h>

#include <unordered_map>

#include "envkit/archive/extract.hpp"
#include "zip_format.hpp"
#include "zip_unpack.hpp"

namespace envkit::archive {

namespace {

namespace fs = std::filesystem;
using detail::LocalHeader;
using detail::PieceChannel;
using detail::PiecePool;
using detail::ZipUnpacker;

// Read ahead of the inflating threads, by every download at once: enough to
// keep them fed, small enough that memory stays flat however large the
// wheels and however many download together.
constexpr std::size_t kPieceSize = std::size_t{256} << 10;
constexpr std::size_t kReadAhead = std::size_t{32} << 20;
// What may follow the last entry: the central directory (read_zip_directory
// reads at most 64 MiB), zip64 records, the end record and its comment.
constexpr std::uint64_t kMaxTail = (std::uint64_t{64} << 20) + detail::zip::kZip64EndSize +
                                   detail::zip::kZip64LocatorSize + detail::zip::kEndSize +
                                   detail::zip::kMaxComment;
// A RECORD's compressed data is kept to check files against when the
// unpacker will read it (detail::kMaxRecordBytes unpacked) and deflate could
// have made it (never twice as large).
bool kept_record(const ZipMember& member) {
  return is_wheel_record(member.path) && member.size <= detail::kMaxRecordBytes &&
         member.compressed_size <= 2 * detail::kMaxRecordBytes;
}

PiecePool& read_ahead() {
  static PiecePool pool(kPieceSize, kReadAhead / kPieceSize);
  return pool;
}

class ZipStream {
 public:
  ZipStream(Source& source, const fs::path& destination, const ExtractOptions& options)
      : source_(source), name_(source.name()), unpacker_(-1, name_, destination, options) {}

  Result<std::optional<ExtractResult>> run() {
    if (auto started = unpacker_.start_stream(read_ahead()); !started)
      return std::move(started).error();
    auto scanned = scan();
    if (!scanned || !*scanned) {
      // The threads' own error explains a stop better than the stop does.
      auto workers = unpacker_.abandon_stream();
      if (!scanned) {
        if (!workers && scanned.error().message() == detail::kStopped) {
          return std::move(workers).error();
        }
        return std::move(scanned).error();
      }
      return std::optional<ExtractResult>();
    }
    auto directory = read_directory();
    if (!directory) return std::move(directory).error();
    if (!*directory) return std::optional<ExtractResult>();
    return unpacker_.finish_stream(**directory, record_data_);
  }

 private:
  // Local headers and their data until something else starts (the central
  // directory); then what is left, into tail_. False where the stream cannot
  // be unpacked as it comes.
  Result<bool> scan() {
    using namespace detail::zip;
    std::string fixed(kLocalHeaderSize, '\0');
    while (true) {
      auto got = read_up_to(as_writable(fixed));
      if (!got) return std::move(got).error();
      if (*got < kLocalHeaderSize || le(fixed, 0, 4) != kLocalSignature) {
        tail_start_ = offset_ - *got;
        tail_ = fixed.substr(0, *got);
        return read_tail();
      }
      std::string rest(detail::local_header_rest(fixed), '\0');
      auto rest_got = read_up_to(as_writable(rest));
      if (!rest_got) return std::move(rest_got).error();
      if (*rest_got < rest.size()) return ended("(a local header)", "inside a local header");
      auto local = detail::parse_local_header(fixed, rest, name_);
      if (!local) return std::move(local).error();
      // Sizes after the data, encryption, another method: the whole file's
      // reader says what it makes of them.
      if (local->sizes_follow() || (local->flags & 0x01U) != 0 ||
          (local->method != 0 && local->method != 8)) {
        return false;
      }
      const auto header_offset = offset_ - kLocalHeaderSize - rest.size();
      const ZipMember member{.path = local->path,
                             .offset = header_offset,
                             .compressed_size = local->compressed_size,
                             .size = local->size,
                             .method = local->method,
                             .flags = local->flags,
                             .crc32 = local->crc32};
      auto channel = unpacker_.stream_entry(member);
      if (!channel) return std::move(channel).error();
      const bool record = kept_record(member);
      record_data_.emplace_back();
      headers_.push_back({header_offset, std::move(*local)});
      if (auto moved = move_data(member, *channel, record ? &record_data_.back() : nullptr);
          !moved) {
        return std::move(moved).error();
      }
    }
  }

  // An entry's data, piece by piece, to the thread inflating it (or nowhere,
  // for an entry left out), kept too where it is the RECORD.
  Result<void> move_data(const ZipMember& member, PieceChannel* channel, std::string* kept) {
    std::uint64_t left = member.compressed_size;
    while (left > 0) {
      auto piece = read_ahead().take(unpacker_.stopped());
      if (!piece) return Error::internal(std::string(detail::kStopped));
      piece->size = static_cast<std::size_t>(std::min<std::uint64_t>(left, kPieceSize));
      const std::span bytes(piece->bytes.get(), piece->size);
      auto got = read_up_to(bytes);
      if (!got) return std::move(got).error();
      if (*got < bytes.size()) return ended(member.path, "inside its data");
      if (kept != nullptr) kept->append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      left -= bytes.size();
      if (channel != nullptr) channel->push(std::move(*piece));
    }
    if (channel != nullptr) channel->close();
    return {};
  }

  // The rest of the stream, at most kMaxTail bytes (false past it).
  Result<bool> read_tail() {
    std::string buffer(std::size_t{64} << 10, '\0');
    while (true) {
      auto got = read_up_to(as_writable(buffer));
      if (!got) return std::move(got).error();
      tail_.append(buffer, 0, *got);
      if (tail_.size() > kMaxTail) return false;
      if (*got < buffer.size()) return true;
    }
  }

  // The central directory from the tail, checked against the local headers
  // read: each one listed, in the same order, saying the same. nullopt where
  // the directory lists what was not read that way.
  Result<std::optional<std::vector<ZipMember>>> read_directory() {
    const auto size = offset_;
    auto directory = detail::read_zip_directory(
        [&](std::uint64_t at, std::size_t count) -> Result<std::string> {
          if (at < tail_start_ || at - tail_start_ + count > tail_.size()) {
            return Error::failed(fmt::format("cannot unpack `{}`", name_))
                .because(fmt::format("its central directory points at byte {}, inside its "
                                     "entries",
                                     at))
                .hint("the archive is truncated, damaged, or not a zip archive");
          }
          return tail_.substr(static_cast<std::size_t>(at - tail_start_), count);
        },
        size, tail_start_, name_, unpacker_options().max_entries);
    if (!directory) return std::move(directory).error();
    const auto& members = directory->members;
    std::unordered_map<std::uint64_t, std::size_t> listed;
    for (std::size_t i = 0; i < members.size(); ++i)
      listed.emplace(members[i].offset, i);
    for (const auto& [offset, header] : headers_) {
      if (listed.contains(offset)) continue;
      return Error::failed(fmt::format("refused to unpack `{}`", name_))
          .because(fmt::format("entry `{}`: its local header is one the central directory does "
                               "not list",
                               header.path))
          .hint("a zip made by a zip tool never does this; do not use this archive");
    }
    if (directory->offset != tail_start_ || members.size() != headers_.size()) {
      return std::optional<std::vector<ZipMember>>();
    }
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (members[i].offset != headers_[i].first) return std::optional<std::vector<ZipMember>>();
      if (auto agree = detail::check_local_header(headers_[i].second, members[i], name_); !agree) {
        return std::move(agree).error();
      }
    }
    return std::optional<std::vector<ZipMember>>(std::move(directory->members));
  }

  // Up to buffer.size() bytes: fewer only at the end of the stream.
  Result<std::size_t> read_up_to(std::span<std::byte> buffer) {
    std::size_t done = 0;
    while (done < buffer.size()) {
      auto count = source_.read(buffer.subspan(done));
      if (!count) return std::move(count).error();
      if (*count == 0) break;
      done += *count;
    }
    offset_ += done;
    return done;
  }

  Error ended(std::string_view entry, std::string_view where) const {
    return Error::failed(fmt::format("cannot unpack `{}`", name_))
        .because(fmt::format("entry `{}`: the download ended {}", entry, where))
        .hint("the archive is truncated, damaged, or not a zip archive");
  }

  [[nodiscard]] const ExtractOptions& unpacker_options() const { return unpacker_.options(); }

  static std::span<std::byte> as_writable(std::string& bytes) {
    return std::as_writable_bytes(std::span(bytes));
  }

  Source& source_;
  std::string name_;
  ZipUnpacker unpacker_;
  std::uint64_t offset_ = 0;      // bytes read so far
  std::uint64_t tail_start_ = 0;  // where what follows the entries starts
  std::string tail_;
  std::vector<std::pair<std::uint64_t, LocalHeader>> headers_;  // each entry's, by offset
  std::vector<std::string> record_data_;  // a RECORD's compressed data, by entry
};

}  // namespace

Result<std::optional<ExtractResult>> extract_zip_stream(Source& source,
                                                        const std::filesystem::path& destination,
                                                        const ExtractOptions& options) {
  // A runfile nested in a zip is for libarchive's Extractor (extract_file).
  if (options.nested_runfile) return std::optional<ExtractResult>();
  ZipStream stream(source, destination, options);
  return stream.run();
}

}  // namespace envkit::archive
