#include "envkit/archive/zip_member.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <fmt/format.h>

#include <memory>

#include "envkit/core/text.hpp"
#include "libarchive.hpp"
#include "zip_format.hpp"

namespace envkit::archive {

namespace {

using namespace detail::zip;

Error damaged(std::string_view name, std::string what) {
  return Error::failed(fmt::format("cannot read the zip {}", text::quoted(name)))
      .because(std::move(what));
}

std::string reader_error(struct archive* reader) {
  const char* why = archive_error_string(reader);
  return why != nullptr ? why : "libarchive gave no reason";
}

}  // namespace

Result<ZipDirectory> zip_directory_location(std::string_view tail, std::string_view name) {
  // The end record is the last thing in the file, followed only by its comment.
  if (const auto at = find_end_record(tail); at != std::string_view::npos) {
    const auto size = le(tail, at + 12, 4);
    const auto offset = le(tail, at + 16, 4);
    if (size == kZip64 || offset == kZip64) return damaged(name, "it is a zip64 archive");
    // The directory ends where the end record starts.
    const std::uint64_t end_record = offset + size;
    if (end_record < at) return damaged(name, "its end record points before the data read");
    return ZipDirectory{.offset = offset, .size = size, .tail_offset = end_record - at};
  }
  return damaged(name, "no end-of-central-directory record in its last bytes");
}

Result<std::vector<ZipMember>> zip_directory_members(std::string_view directory,
                                                     std::string_view name) {
  std::vector<ZipMember> members;
  std::size_t at = 0;
  while (at < directory.size()) {
    if (at + kDirectoryHeaderSize > directory.size() || le(directory, at, 4) != kDirectorySignature)
      return damaged(name, fmt::format("no directory header at byte {} of its directory", at));
    const std::size_t name_length = le(directory, at + 28, 2);
    const std::size_t extra_length = le(directory, at + 30, 2);
    const std::size_t comment_length = le(directory, at + 32, 2);
    const std::size_t end = at + kDirectoryHeaderSize + name_length + extra_length + comment_length;
    if (end > directory.size()) return damaged(name, "its central directory is cut short");
    ZipMember member{.path = std::string(directory.substr(at + kDirectoryHeaderSize, name_length)),
                     .offset = le(directory, at + 42, 4),
                     .compressed_size = le(directory, at + 20, 4),
                     .size = le(directory, at + 24, 4),
                     .method = static_cast<std::uint16_t>(le(directory, at + 10, 2)),
                     .flags = static_cast<std::uint16_t>(le(directory, at + 8, 2)),
                     .crc32 = static_cast<std::uint32_t>(le(directory, at + 16, 4)),
                     .made_by = static_cast<std::uint16_t>(le(directory, at + 4, 2)),
                     .external_attributes = static_cast<std::uint32_t>(le(directory, at + 38, 4))};
    read_zip64_extra(directory.substr(at + kDirectoryHeaderSize + name_length, extra_length),
                     member.size, member.compressed_size, member.offset);
    members.push_back(std::move(member));
    at = end;
  }
  return members;
}

Result<std::uint64_t> zip_member_span(std::string_view local_header, const ZipMember& member,
                                      std::string_view name) {
  if (local_header.size() < kLocalHeaderSize || le(local_header, 0, 4) != kLocalSignature) {
    return damaged(name, fmt::format("no local header for {}", member.path));
  }
  // Bit 3: the sizes follow the data in a descriptor (signature, crc, sizes: 16 bytes,
  // 24 with zip64 sizes; bytes past it are not read).
  const bool descriptor = (le(local_header, 6, 2) & 0x08U) != 0;
  return kLocalHeaderSize + le(local_header, 26, 2) + le(local_header, 28, 2) +
         member.compressed_size + (descriptor ? 24 : 0);
}

Result<std::string> zip_member_content(std::string_view local, const ZipMember& member,
                                       std::string_view name) {
  auto span = zip_member_span(local, member, name);
  if (!span) return std::move(span).error();
  if (local.size() < *span) return damaged(name, fmt::format("{} is cut short", member.path));
  // libarchive's streaming zip reader reads one local header and its data, then looks
  // ahead for what follows: an empty end record ends this one-member zip.
  if (auto missing = detail::libarchive_load_error()) return Error::failed(std::move(*missing));
  std::string alone(local.substr(0, *span));
  alone += std::string("PK\x05\x06", 4) + std::string(kEndSize - 4, '\0');
  std::unique_ptr<struct archive, decltype(&archive_read_free)> reader(archive_read_new(),
                                                                       archive_read_free);
  archive_read_support_format_zip_streamable(reader.get());
  if (archive_read_open_memory(reader.get(), alone.data(), alone.size()) != ARCHIVE_OK) {
    return damaged(name, reader_error(reader.get()));
  }
  struct archive_entry* entry = nullptr;
  if (archive_read_next_header(reader.get(), &entry) != ARCHIVE_OK) {
    return damaged(name, reader_error(reader.get()));
  }
  std::string content;
  char buffer[16384];
  for (;;) {
    const auto read = archive_read_data(reader.get(), buffer, sizeof buffer);
    if (read < 0) return damaged(name, reader_error(reader.get()));
    if (read == 0) break;
    content.append(buffer, static_cast<std::size_t>(read));
    if (content.size() > member.size) break;
  }
  if (content.size() != member.size) {
    return damaged(name, fmt::format("{} holds {} bytes, its directory says {}", member.path,
                                     content.size(), member.size));
  }
  return content;
}

}  // namespace envkit::archive
