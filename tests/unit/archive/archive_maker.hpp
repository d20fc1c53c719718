#pragma once

// Builds archives in memory with libarchive's write side, so tests can craft
// any entry a hostile archive could hold (the write side checks nothing).
// Header-only: the test glob builds only *_test.cpp files.
#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "envkit/archive/extract.hpp"
#include "envkit/core/sha256.hpp"
#include "support/record_hash.hpp"

namespace envkit::test {

enum class Kind { file, directory, symlink, hardlink, char_device, fifo };

struct Entry {
  std::string path;
  Kind kind = Kind::file;
  std::string content;        // files
  unsigned mode = 0644;       // permission bits, setuid and friends included
  std::string link;           // symlink or hard link target
  std::uint64_t zeros = 0;    // files: this many zero bytes after `content`
  bool size_unknown = false;  // zip files: size only in the data descriptor, after the data

  static Entry file(std::string path, std::string content, unsigned mode = 0644) {
    return {.path = std::move(path), .content = std::move(content), .mode = mode};
  }
  static Entry dir(std::string path) {
    return {.path = std::move(path), .kind = Kind::directory, .mode = 0755};
  }
  static Entry symlink(std::string path, std::string target) {
    return {
        .path = std::move(path), .kind = Kind::symlink, .mode = 0777, .link = std::move(target)};
  }
  static Entry hardlink(std::string path, std::string target) {
    return {.path = std::move(path), .kind = Kind::hardlink, .link = std::move(target)};
  }
};

enum class Format { tar, gnutar, tar_gz, tar_xz, tar_bz2, tar_zst, tar_lz4, zip, zip_stored };

inline const char* format_name(Format format) {
  switch (format) {
    case Format::tar:
      return "tar";
    case Format::gnutar:
      return "gnutar";
    case Format::tar_gz:
      return "tar.gz";
    case Format::tar_xz:
      return "tar.xz";
    case Format::tar_bz2:
      return "tar.bz2";
    case Format::tar_zst:
      return "tar.zst";
    case Format::tar_lz4:
      return "tar.lz4";
    case Format::zip:
      return "zip";
    case Format::zip_stored:
      return "zip (stored)";
  }
  return "?";
}

namespace detail {

struct WriterDeleter {
  void operator()(struct archive* writer) const { archive_write_free(writer); }
};
struct EntryDeleter {
  void operator()(struct archive_entry* entry) const { archive_entry_free(entry); }
};

inline la_ssize_t append(struct archive*, void* out, const void* data, std::size_t size) {
  static_cast<std::string*>(out)->append(static_cast<const char*>(data), size);
  return static_cast<la_ssize_t>(size);
}

inline void check(struct archive* writer, int status, const char* what) {
  if (status < ARCHIVE_WARN) {
    const char* message = archive_error_string(writer);
    throw std::runtime_error(std::string(what) + ": " + (message ? message : "?"));
  }
}

inline void set_format(struct archive* writer, Format format) {
  const bool zip = format == Format::zip || format == Format::zip_stored;
  if (zip) {
    check(writer, archive_write_set_format_zip(writer), "zip");
    if (format == Format::zip_stored) {
      check(writer, archive_write_set_options(writer, "zip:compression=store"), "store");
    }
    return;
  }
  check(writer,
        format == Format::gnutar ? archive_write_set_format_gnutar(writer)
                                 : archive_write_set_format_pax_restricted(writer),
        "tar");
  switch (format) {
    case Format::tar_gz:
      check(writer, archive_write_add_filter_gzip(writer), "gzip");
      break;
    case Format::tar_xz:
      check(writer, archive_write_add_filter_xz(writer), "xz");
      break;
    case Format::tar_bz2:
      check(writer, archive_write_add_filter_bzip2(writer), "bzip2");
      break;
    case Format::tar_zst:
      check(writer, archive_write_add_filter_zstd(writer), "zstd");
      break;
    case Format::tar_lz4:
      check(writer, archive_write_add_filter_lz4(writer), "lz4");
      break;
    default:
      break;
  }
}

inline void fill_header(struct archive_entry* header, const Entry& entry) {
  archive_entry_set_pathname(header, entry.path.c_str());
  archive_entry_set_perm(header, static_cast<mode_t>(entry.mode));
  archive_entry_set_mtime(header, 1700000000, 0);
  switch (entry.kind) {
    case Kind::file:
      archive_entry_set_filetype(header, AE_IFREG);
      if (!entry.size_unknown) {
        archive_entry_set_size(header, static_cast<la_int64_t>(entry.content.size() + entry.zeros));
      }
      break;
    case Kind::directory:
      archive_entry_set_filetype(header, AE_IFDIR);
      break;
    case Kind::symlink:
      archive_entry_set_filetype(header, AE_IFLNK);
      archive_entry_set_symlink(header, entry.link.c_str());
      break;
    case Kind::hardlink:
      archive_entry_set_filetype(header, AE_IFREG);
      archive_entry_set_hardlink(header, entry.link.c_str());
      archive_entry_set_size(header, 0);
      break;
    case Kind::char_device:
      archive_entry_set_filetype(header, AE_IFCHR);
      archive_entry_set_rdevmajor(header, 1);
      archive_entry_set_rdevminor(header, 3);
      break;
    case Kind::fifo:
      archive_entry_set_filetype(header, AE_IFIFO);
      break;
  }
}

inline void write_data(struct archive* writer, const Entry& entry) {
  if (entry.kind != Kind::file) return;
  if (!entry.content.empty()) {
    archive_write_data(writer, entry.content.data(), entry.content.size());
  }
  const std::string zeros(std::size_t{1} << 16, '\0');
  for (std::uint64_t left = entry.zeros; left > 0;) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(left, zeros.size()));
    archive_write_data(writer, zeros.data(), n);
    left -= n;
  }
}

}  // namespace detail

// The bytes of an archive holding `entries`, in order.
inline std::string make_archive(Format format, const std::vector<Entry>& entries) {
  std::unique_ptr<struct archive, detail::WriterDeleter> writer(archive_write_new());
  detail::set_format(writer.get(), format);
  // No padding of the last block: the bytes end where the archive does.
  archive_write_set_bytes_in_last_block(writer.get(), 1);
  std::string out;
  detail::check(writer.get(),
                archive_write_open(writer.get(), &out, nullptr, detail::append, nullptr), "open");
  for (const auto& entry : entries) {
    std::unique_ptr<struct archive_entry, detail::EntryDeleter> header(archive_entry_new());
    detail::fill_header(header.get(), entry);
    detail::check(writer.get(), archive_write_header(writer.get(), header.get()), "header");
    detail::write_data(writer.get(), entry);
  }
  detail::check(writer.get(), archive_write_close(writer.get()), "close");
  return out;
}

// `bytes` compressed as one stream of `format`'s compression (tar_gz: gzip,
// tar_xz: xz, tar_bz2: bzip2, tar_zst: zstd, tar_lz4: lz4), as libarchive writes it.
inline std::string compress(Format format, const std::string& bytes) {
  std::unique_ptr<struct archive, detail::WriterDeleter> writer(archive_write_new());
  detail::check(writer.get(), archive_write_set_format_raw(writer.get()), "raw");
  switch (format) {
    case Format::tar_gz:
      detail::check(writer.get(), archive_write_add_filter_gzip(writer.get()), "gzip");
      break;
    case Format::tar_xz:
      detail::check(writer.get(), archive_write_add_filter_xz(writer.get()), "xz");
      break;
    case Format::tar_bz2:
      detail::check(writer.get(), archive_write_add_filter_bzip2(writer.get()), "bzip2");
      break;
    case Format::tar_zst:
      detail::check(writer.get(), archive_write_add_filter_zstd(writer.get()), "zstd");
      break;
    case Format::tar_lz4:
      detail::check(writer.get(), archive_write_add_filter_lz4(writer.get()), "lz4");
      break;
    default:
      throw std::runtime_error("compress: not a compression");
  }
  archive_write_set_bytes_in_last_block(writer.get(), 1);
  std::string out;
  detail::check(writer.get(),
                archive_write_open(writer.get(), &out, nullptr, detail::append, nullptr), "open");
  std::unique_ptr<struct archive_entry, detail::EntryDeleter> header(archive_entry_new());
  archive_entry_set_pathname(header.get(), "raw");
  archive_entry_set_filetype(header.get(), AE_IFREG);
  archive_entry_set_size(header.get(), static_cast<la_int64_t>(bytes.size()));
  detail::check(writer.get(), archive_write_header(writer.get(), header.get()), "header");
  archive_write_data(writer.get(), bytes.data(), bytes.size());
  detail::check(writer.get(), archive_write_close(writer.get()), "close");
  return out;
}

// A zip written byte by byte (stored entries), so a test can give it what no
// zip tool writes: raw UTF-8 names with or without general purpose bit 11,
// directory records pointing into one another's data.
class ZipBuilder {
 public:
  struct Record {
    std::string name;
    std::uint32_t offset = 0;  // of the local header
    std::uint32_t crc = 0;
    std::uint32_t size = 0;
    std::uint16_t flags = 0;
    unsigned mode = 0100644;
  };

  // Appends a local header and the data; returns its directory record.
  Record add(const std::string& name, const std::string& data, unsigned mode = 0100644,
             bool utf8_flag = true) {
    Record record{.name = name,
                  .offset = static_cast<std::uint32_t>(bytes_.size()),
                  .crc = crc32(data),
                  .size = static_cast<std::uint32_t>(data.size()),
                  .flags = static_cast<std::uint16_t>(utf8_flag ? 0x0800 : 0),
                  .mode = mode};
    put(4, 0x04034b50U);
    put(2, 20);
    put(2, record.flags);
    put(2, 0);  // stored
    put(4, 0);  // time, date
    put(4, record.crc);
    put(4, record.size);
    put(4, record.size);
    put(2, name.size());
    put(2, 0);
    bytes_ += name;
    bytes_ += data;
    records_.push_back(record);
    return record;
  }
  // Bytes written as they are (a local header inside another's data, say).
  void raw(const std::string& bytes) { bytes_ += bytes; }
  [[nodiscard]] std::size_t size() const { return bytes_.size(); }
  // The records the directory lists; add() lists each entry once.
  std::vector<Record>& records() { return records_; }

  // The whole zip: the data, the central directory, the end record.
  std::string finish() const {
    ZipBuilder out = *this;
    const auto directory_at = out.bytes_.size();
    for (const auto& record : records_) {
      out.put(4, 0x02014b50U);
      out.put(2, 0x0314);  // made by: Unix, 2.0
      out.put(2, 20);
      out.put(2, record.flags);
      out.put(2, 0);
      out.put(4, 0);
      out.put(4, record.crc);
      out.put(4, record.size);
      out.put(4, record.size);
      out.put(2, record.name.size());
      out.put(2, 0);  // extra
      out.put(2, 0);  // comment
      out.put(2, 0);  // disk
      out.put(2, 0);  // internal attributes
      out.put(4, static_cast<std::uint64_t>(record.mode) << 16);
      out.put(4, record.offset);
      out.bytes_ += record.name;
    }
    const auto directory_size = out.bytes_.size() - directory_at;
    out.put(4, 0x06054b50U);
    out.put(4, 0);
    out.put(2, records_.size());
    out.put(2, records_.size());
    out.put(4, directory_size);
    out.put(4, directory_at);
    out.put(2, 0);
    return out.bytes_;
  }

  static std::uint32_t crc32(const std::string& data) {
    std::uint32_t crc = 0xffffffffU;
    for (const unsigned char c : data) {
      crc ^= c;
      for (int bit = 0; bit < 8; ++bit)
        crc = (crc & 1U) != 0 ? (crc >> 1) ^ 0xedb88320U : crc >> 1;
    }
    return ~crc;
  }

 private:
  void put(int width, std::uint64_t value) {
    for (int i = 0; i < width; ++i)
      bytes_ += static_cast<char>((value >> (8 * i)) & 0xff);
  }

  std::string bytes_;
  std::vector<Record> records_;
};

// A Source over bytes in memory, handing them out in small, odd chunks to
// exercise the streaming reader's refills.
class MemorySource : public archive::Source {
 public:
  explicit MemorySource(std::string bytes, std::size_t chunk = 7000, std::string name = "memory")
      : bytes_(std::move(bytes)), chunk_(chunk), name_(std::move(name)) {}

  Result<std::size_t> read(std::span<std::byte> buffer) override {
    const auto n = std::min({chunk_, buffer.size(), bytes_.size() - at_});
    std::memcpy(buffer.data(), bytes_.data() + at_, n);
    at_ += n;
    return n;
  }
  [[nodiscard]] std::string name() const override { return name_; }

 private:
  std::string bytes_;
  std::size_t chunk_;
  std::string name_;
  std::size_t at_ = 0;
};

// The whole file at `path` (empty when unreadable).
inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

inline void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

// Not compressible to nothing, so compressed blocks span several reads.
inline std::string pseudo_random(std::size_t size, unsigned seed = 1) {
  std::string text(size, '\0');
  for (auto& c : text) {
    seed = seed * 1103515245 + 12345;
    c = static_cast<char>(seed >> 16);
  }
  return text;
}

// Everything under `root`, relative and sorted, folders with a trailing '/'
// and links as `name -> target`.
inline std::vector<std::string> tree(const std::filesystem::path& root) {
  namespace fs = std::filesystem;
  std::vector<std::string> found;
  for (const auto& item : fs::recursive_directory_iterator(root)) {
    auto name = item.path().lexically_relative(root).generic_string();
    if (item.is_symlink()) {
      name += " -> " + fs::read_symlink(item.path()).string();
    } else if (item.is_directory()) {
      name += "/";
    }
    found.push_back(name);
  }
  std::sort(found.begin(), found.end());
  return found;
}

// The permission bits of `path`, not following a link.
inline unsigned mode_of(const std::filesystem::path& path) {
  return static_cast<unsigned>(std::filesystem::symlink_status(path).permissions() &
                               std::filesystem::perms::mask);
}

}  // namespace envkit::test
