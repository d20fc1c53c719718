// The public entry points of the safe extractor (extractor.hpp does the work).
#include "envkit/archive/extract.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "decoder.hpp"
#include "extractor.hpp"
#include "file_source.hpp"
#include "zip_layout.hpp"
#include "zip_unpack.hpp"

namespace envkit::archive {

namespace {

namespace fs = std::filesystem;
using detail::ByteBudget;
using detail::DecodingSource;
using detail::Extractor;
using detail::FileSource;
using detail::kBufferSize;
using detail::ReaderFor;
using detail::TreeWriter;
using detail::Utf8Names;

// What libarchive's read callback pulls from.
struct SourceReader {
  Source& source;
  std::vector<std::byte> buffer = std::vector<std::byte>(kBufferSize);
  std::optional<Error> error;
};

la_ssize_t read_source(struct archive* reader, void* data, const void** block) {
  auto& context = *static_cast<SourceReader*>(data);
  // No exception may cross libarchive's C frames.
  try {
    auto n = context.source.read(context.buffer);
    if (n && *n <= context.buffer.size()) {
      *block = context.buffer.data();
      return static_cast<la_ssize_t>(*n);
    }
    context.error = n ? Error::internal("the archive source returned more bytes than asked")
                      : std::move(n).error();
  } catch (const std::exception& e) {
    context.error = Error::internal(fmt::format("reading the archive failed: {}", e.what()));
  }
  archive_set_error(reader, EIO, "%s", context.error->message().c_str());
  return -1;
}

}  // namespace

Result<ExtractResult> extract(Source& source, const fs::path& destination,
                              const ExtractOptions& options) {
  const Utf8Names utf8;
  const auto name = source.name();
  auto writer = TreeWriter::open(destination);
  if (!writer) return detail::cannot_start(name, writer.error());
  DecodingSource decoded(source);
  auto reader = detail::new_reader(ReaderFor::stream);
  if (!reader) return std::move(reader).error();
  SourceReader context{.source = decoded};
  ByteBudget budget(options.max_bytes);
  Extractor extractor(reader->get(), name, options, std::move(*writer), budget);
  extractor.nest_into(destination);
  extractor.watch_source_error(&context.error);
  if (archive_read_open(reader->get(), &context, nullptr, read_source, nullptr) != ARCHIVE_OK) {
    return extractor.opening_failed();
  }
  auto result = extractor.run();
  if (!result) return result;
  // libarchive stops at the tar's end blocks: the compressed stream's
  // trailers come after them, and are what says the data is whole.
  auto finished = decoded.finish([&](std::uint64_t bytes) -> Result<void> {
    if (budget.take(bytes)) return {};
    return extractor.over_byte_limit();
  });
  if (!finished) return std::move(finished).error();
  return result;
}

Result<ExtractResult> extract_file(const fs::path& archive, const fs::path& destination,
                                   const ExtractOptions& options) {
  const auto name = archive.string();
  std::error_code error;
  const auto status = fs::status(archive, error);
  if (!fs::exists(status)) {
    return Error::input(fmt::format("the archive `{}` does not exist", name));
  }
  if (!fs::is_regular_file(status)) {
    return Error::input(fmt::format("`{}` is not a file", name));
  }
  sys::UniqueFd fd(::open(archive.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat file {};
  if (!fd.valid() || ::fstat(fd.get(), &file) != 0) {
    return Error::failed(fmt::format("cannot open `{}`", name)).because(std::strerror(errno));
  }
  std::string start(8, '\0');
  const auto n = ::pread(fd.get(), start.data(), start.size(), 0);
  start.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  // Compressed: streamed through the decoder like a download.
  if (detail::sniff_compression(start) != detail::Compression::none) {
    ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
    FileSource source(std::move(fd), name);
    return extract(source, destination, options);
  }
  // A zip (a wheel) starts with a local header, or is just its end record.
  const bool zip = start.starts_with("PK\x03\x04") || start.starts_with("PK\x05\x06");
  if (zip) {
    // The destination exists whatever the zip turns out to be, as it does
    // for every other archive.
    if (auto writer = TreeWriter::open(destination); !writer) {
      return detail::cannot_start(name, writer.error());
    }
    auto layout = detail::check_zip_layout(fd.get(), static_cast<std::uint64_t>(file.st_size), name,
                                           options.max_entries);
    if (!layout) return std::move(layout).error();
    if (layout->members.empty()) return ExtractResult{};
    // envkit's own zip reader (zip_unpack.hpp). A runfile nested in a zip is
    // for libarchive's Extractor, which knows how to unpack it in place.
    if (!options.nested_runfile) {
      ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
      return detail::unpack_zip(fd.get(), *layout, name, destination, options);
    }
  }
  const Utf8Names utf8;
  auto writer = TreeWriter::open(destination);
  if (!writer) return detail::cannot_start(name, writer.error());
  auto reader = detail::new_reader(zip ? ReaderFor::zip_file : ReaderFor::tar_file);
  if (!reader) return std::move(reader).error();
  ByteBudget budget(options.max_bytes);
  Extractor extractor(reader->get(), name, options, std::move(*writer), budget);
  extractor.nest_into(destination);
  if (archive_read_open_filename(reader->get(), archive.c_str(), kBufferSize) != ARCHIVE_OK) {
    return extractor.opening_failed();
  }
  return extractor.run();
}

}  // namespace envkit::archive
