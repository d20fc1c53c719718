// Fuzz target: a zip's central directory, as envkit reads it.
// - A wheel's METADATA from pieces of the wheel (recipes' pypi importers):
//   zip_directory_location, zip_directory_members, zip_member_span and
//   zip_member_content, here on the input as the whole file.
// - envkit's zip reader unpacking a wheel (extract_file: check_zip_layout,
//   then zip_unpack with its RECORD checks), on two threads with a small byte
//   limit, from a memfd into a folder under /dev/shm emptied after each input.
// - The same zip unpacked as it downloads (extract_zip_stream), read from
//   memory in pieces of 7 bytes and more, where a surprise is a fine answer.

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>

#include "envkit/archive/extract.hpp"
#include "envkit/archive/zip_member.hpp"
#include "fuzz_support.hpp"

namespace {

using namespace envkit;

// Bytes [offset, offset + length) of the file, or nullopt past its end (a
// range request the server refuses).
std::optional<std::string_view> range(std::string_view file, std::uint64_t offset,
                                      std::uint64_t length) {
  if (offset > file.size() || length > file.size() - offset) return std::nullopt;
  return file.substr(offset, length);
}

// As recipes' metadata_from_wheel, with the whole file as its tail.
void read_members(std::string_view file) {
  constexpr std::string_view name = "fuzz-1.0-py3-none-any.whl";
  auto where = archive::zip_directory_location(file, name);
  if (!where) return fuzz::check_refusal(where.error());
  std::optional<std::string_view> directory;
  if (where->offset >= where->tail_offset) {
    const auto from = where->offset - where->tail_offset;
    if (from > file.size()) fuzz::finding("the directory starts past the tail read");
    directory = file.substr(from, where->size);
  } else {
    directory = range(file, where->offset, where->size);
  }
  if (!directory) return;
  auto members = archive::zip_directory_members(*directory, name);
  if (!members) return fuzz::check_refusal(members.error());
  for (const auto& member : *members) {
    auto header = range(file, member.offset, 30);
    if (!header) continue;
    auto span = archive::zip_member_span(*header, member, name);
    if (!span) {
      fuzz::check_refusal(span.error());
      continue;
    }
    auto local = range(file, member.offset, *span);
    if (!local) continue;
    auto content = archive::zip_member_content(*local, member, name);
    if (!content) fuzz::check_refusal(content.error());
  }
}

// Two threads, and limits small enough that a bomb is refused at once.
archive::ExtractOptions fuzz_options() {
  archive::ExtractOptions options;
  options.threads = 2;
  options.hash_files = true;
  options.trust_record = true;  // as `install` unpacks wheels: large files take RECORD's hash
  options.max_bytes = 4 << 20;
  options.max_entries = 4096;
  return options;
}

void unpack(std::string_view file) {
  static const int fd = ::memfd_create("fuzz.whl", MFD_CLOEXEC);
  if (fd < 0) fuzz::finding("memfd_create failed");
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, file.data(), file.size(), 0) != static_cast<ssize_t>(file.size())) {
    fuzz::finding("cannot write the memfd");
  }
  static const auto destination =
      std::filesystem::path("/dev/shm") / ("envkit-fuzz-zip-" + std::to_string(::getpid()));
  auto unpacked =
      archive::extract_file("/proc/self/fd/" + std::to_string(fd), destination, fuzz_options());
  if (!unpacked) fuzz::check_refusal(unpacked.error());
  std::error_code ignored;
  std::filesystem::remove_all(destination, ignored);
}

// The input as a download gives it: pieces of uneven sizes.
class Pieces final : public archive::Source {
 public:
  explicit Pieces(std::string_view file) : file_(file) {}
  Result<std::size_t> read(std::span<std::byte> buffer) override {
    const auto count = std::min({buffer.size(), file_.size(), next_});
    std::memcpy(buffer.data(), file_.data(), count);
    file_.remove_prefix(count);
    next_ = next_ * 3 % 4093 + 7;
    return count;
  }
  [[nodiscard]] std::string name() const override { return "fuzz-1.0-py3-none-any.whl"; }

 private:
  std::string_view file_;
  std::size_t next_ = 7;
};

void unpack_streamed(std::string_view file) {
  static const auto destination =
      std::filesystem::path("/dev/shm") / ("envkit-fuzz-zip-stream-" + std::to_string(::getpid()));
  Pieces source(file);
  auto unpacked = archive::extract_zip_stream(source, destination, fuzz_options());
  if (!unpacked) fuzz::check_refusal(unpacked.error());
  std::error_code ignored;
  std::filesystem::remove_all(destination, ignored);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view file = fuzz::text_of(data, size);
  read_members(file);
  unpack(file);
  unpack_streamed(file);
  return 0;
}
