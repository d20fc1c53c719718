// The public entry points of the safe extractor (extractor.hpp does the work).
#include "envkit/archive/extract.hpp"

#include <fmt/format.h>

#include "extractor.hpp"
#include "zip_parallel.hpp"

namespace envkit::archive {

namespace {

namespace fs = std::filesystem;
using detail::ByteBudget;
using detail::Extractor;
using detail::kBufferSize;
using detail::TreeWriter;

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
  const auto name = source.name();
  auto writer = TreeWriter::open(destination);
  if (!writer) return detail::cannot_start(name, writer.error());
  auto reader = detail::new_reader(false);
  SourceReader context{.source = source};
  ByteBudget budget(options.max_bytes);
  Extractor extractor(reader.get(), name, options, std::move(*writer), budget);
  extractor.nest_into(destination);
  extractor.watch_source_error(&context.error);
  if (archive_read_open(reader.get(), &context, nullptr, read_source, nullptr) != ARCHIVE_OK) {
    return extractor.opening_failed();
  }
  return extractor.run();
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
  if (options.threads > 1) {
    if (auto plan = detail::plan_zip_threads(archive, options)) {
      return detail::extract_zip_parallel(archive, destination, options, *plan);
    }
  }
  auto writer = TreeWriter::open(destination);
  if (!writer) return detail::cannot_start(name, writer.error());
  auto reader = detail::new_reader(true);
  ByteBudget budget(options.max_bytes);
  Extractor extractor(reader.get(), name, options, std::move(*writer), budget);
  extractor.nest_into(destination);
  if (archive_read_open_filename(reader.get(), archive.c_str(), kBufferSize) != ARCHIVE_OK) {
    return extractor.opening_failed();
  }
  return extractor.run();
}

}  // namespace envkit::archive
