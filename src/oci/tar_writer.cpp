#include "envkit/oci/tar_writer.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <utility>

#include "envkit/core/text.hpp"

namespace envkit::oci {

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kBlock = 512;
using Header = std::array<char, kBlock>;

// An octal field of `width` bytes (NUL-terminated), as ustar writes numbers.
void put_octal(Header& header, std::size_t offset, std::size_t width, std::uint64_t value) {
  auto text = fmt::format("{:0{}o}", value, width - 1);
  std::memcpy(header.data() + offset, text.data(), std::min(text.size(), width - 1));
}

void put_text(Header& header, std::size_t offset, std::size_t width, std::string_view text) {
  std::memcpy(header.data() + offset, text.data(), std::min(text.size(), width));
}

// One ustar header: name, mode, uid, gid, size, mtime, checksum, type, link, magic.
Header ustar_header(std::string_view name, unsigned mode, std::uint64_t size, std::int64_t mtime,
                    char type, std::string_view link) {
  Header header{};
  put_text(header, 0, 100, name);
  put_octal(header, 100, 8, mode);
  put_octal(header, 108, 8, 0);
  put_octal(header, 116, 8, 0);
  put_octal(header, 124, 12, size);
  put_octal(header, 136, 12, static_cast<std::uint64_t>(std::max<std::int64_t>(mtime, 0)));
  header[156] = type;
  put_text(header, 157, 100, link);
  put_text(header, 257, 6, "ustar");  // with its NUL
  put_text(header, 263, 2, "00");
  put_octal(header, 329, 8, 0);  // devmajor
  put_octal(header, 337, 8, 0);  // devminor
  std::memset(header.data() + 148, ' ', 8);
  unsigned sum = 0;
  for (const char c : header)
    sum += static_cast<unsigned char>(c);
  auto checksum = fmt::format("{:06o}", sum);
  std::memcpy(header.data() + 148, checksum.data(), 6);
  header[154] = '\0';
  header[155] = ' ';
  return header;
}

// A PAX record "LEN key=value\n", LEN counting itself.
std::string pax_record(std::string_view key, std::string_view value) {
  const auto body = fmt::format(" {}={}\n", key, value);
  auto length = body.size() + 1;
  while (std::to_string(length).size() + body.size() != length)
    ++length;
  return std::to_string(length) + body;
}

Result<void> put_padding(const TarSink& sink, std::uint64_t size) {
  static const std::array<char, kBlock> zeros{};
  const auto rest = size % kBlock;
  if (rest == 0) return {};
  return sink(std::string_view(zeros.data(), kBlock - rest));
}

Result<void> put_header(const TarSink& sink, const Header& header) {
  return sink(std::string_view(header.data(), header.size()));
}

// A header for `name`, preceded by a PAX header where ustar cannot hold the
// name, the link or the size.
Result<void> put_entry_header(const TarSink& sink, const std::string& name, unsigned mode,
                              std::uint64_t size, std::int64_t mtime, char type,
                              const std::string& link) {
  std::string pax;
  if (name.size() > 100) pax += pax_record("path", name);
  if (link.size() > 100) pax += pax_record("linkpath", link);
  if (size >= (std::uint64_t{1} << 33)) pax += pax_record("size", std::to_string(size));
  if (!pax.empty()) {
    if (auto put =
            put_header(sink, ustar_header("././@PaxHeader", 0644, pax.size(), mtime, 'x', ""));
        !put)
      return put;
    if (auto put = sink(pax); !put) return put;
    if (auto put = put_padding(sink, pax.size()); !put) return put;
  }
  const auto short_name = std::string_view(name).substr(0, 100);
  const auto short_link = std::string_view(link).substr(0, 100);
  const auto ustar_size = size >= (std::uint64_t{1} << 33) ? 0 : size;
  return put_header(sink, ustar_header(short_name, mode, ustar_size, mtime, type, short_link));
}

Result<void> put_file_bytes(const TarSink& sink, const TarEntry& entry, std::uint64_t size) {
  if (entry.source.empty()) {
    if (auto put = sink(entry.content); !put) return put;
    return put_padding(sink, size);
  }
  std::ifstream in(entry.source, std::ios::binary);
  if (!in) return Error::failed(fmt::format("cannot read {}", text::quoted(entry.source.string())));
  std::vector<char> buffer(std::size_t{1} << 20);
  std::uint64_t written = 0;
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0) break;
    written += got;
    if (auto put = sink(std::string_view(buffer.data(), got)); !put) return put;
  }
  if (written != size) {
    return Error::failed(fmt::format("{} changed while it was exported ({} bytes, then {})",
                                     text::quoted(entry.source.string()), size, written));
  }
  return put_padding(sink, size);
}

bool has_whiteout(std::string_view path) {
  for (const auto& part : text::split(path, '/')) {
    if (std::string_view(part).starts_with(".wh.")) return true;
  }
  return false;
}

bool same_entry(const TarEntry& a, const TarEntry& b) {
  if (a.type != b.type) return false;
  switch (a.type) {
    case TarEntry::Type::directory:
      return true;
    case TarEntry::Type::symlink:
      return a.link_target == b.link_target;
    case TarEntry::Type::file:
      return a.executable == b.executable && a.source == b.source && a.content == b.content;
  }
  return false;
}

std::string owners(const TarEntry& a, const TarEntry& b) {
  if (a.owner == b.owner) return a.owner;
  return fmt::format("{} and {}", a.owner, b.owner);
}

}  // namespace

std::int64_t layer_epoch() {
  const char* value = std::getenv("SOURCE_DATE_EPOCH");
  if (value == nullptr) return 0;
  std::int64_t epoch = 0;
  const std::string_view text(value);
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), epoch);
  if (error != std::errc() || end != text.data() + text.size() || epoch < 0) return 0;
  return epoch;
}

Result<void> write_tar(std::vector<TarEntry> entries, std::int64_t mtime, const TarSink& sink) {
  std::stable_sort(entries.begin(), entries.end(),
                   [](const TarEntry& a, const TarEntry& b) { return a.path < b.path; });
  std::vector<TarEntry> unique;
  for (auto& entry : entries) {
    if (has_whiteout(entry.path)) {
      return Error::input(
          fmt::format("{} ({}) cannot be put in an image layer: OCI reads a name "
                      "starting with `.wh.` as a whiteout",
                      entry.path, entry.owner));
    }
    if (!unique.empty() && unique.back().path == entry.path) {
      if (same_entry(unique.back(), entry)) continue;
      return Error::input(fmt::format("{} is given twice with different content ({})", entry.path,
                                      owners(unique.back(), entry)));
    }
    unique.push_back(std::move(entry));
  }
  // The first path of each inode is the file; the others link to it.
  std::map<std::pair<dev_t, ino_t>, std::string> first_of_inode;
  for (const auto& entry : unique) {
    const bool folder = entry.type == TarEntry::Type::directory;
    const auto name = folder ? entry.path + "/" : entry.path;
    if (entry.type == TarEntry::Type::symlink) {
      if (auto put = put_entry_header(sink, name, 0777, 0, mtime, '2', entry.link_target); !put)
        return put;
      continue;
    }
    if (folder) {
      if (auto put = put_entry_header(sink, name, 0755, 0, mtime, '5', ""); !put) return put;
      continue;
    }
    const unsigned mode = entry.executable ? 0755 : 0644;
    std::uint64_t size = entry.content.size();
    if (!entry.source.empty()) {
      struct stat info {};
      if (::stat(entry.source.c_str(), &info) != 0) {
        return Error::failed(
            fmt::format("cannot read {} ({})", text::quoted(entry.source.string()), entry.owner));
      }
      const auto [at, inserted] =
          first_of_inode.emplace(std::make_pair(info.st_dev, info.st_ino), entry.path);
      if (!inserted) {
        if (auto put = put_entry_header(sink, name, mode, 0, mtime, '1', at->second); !put)
          return put;
        continue;
      }
      size = static_cast<std::uint64_t>(info.st_size);
    }
    if (auto put = put_entry_header(sink, name, mode, size, mtime, '0', ""); !put) return put;
    if (auto put = put_file_bytes(sink, entry, size); !put) return put;
  }
  static const std::array<char, 2 * kBlock> end{};
  return sink(std::string_view(end.data(), end.size()));
}

}  // namespace envkit::oci
