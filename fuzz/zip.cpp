// Fuzz target: a zip's central directory, as envkit reads it.
// - A wheel's METADATA from pieces of the wheel (recipes' pypi importers):
//   zip_directory_location, zip_directory_members, zip_member_span and
//   zip_member_content, here on the input as the whole file.
// - The survey that plans a wheel's unpacking on several threads
//   (plan_zip_threads), which opens a path: the input is written to a memfd.

#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "envkit/archive/zip_member.hpp"
#include "fuzz_support.hpp"
#include "zip_parallel.hpp"

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

void plan_threads(std::string_view file) {
  static const int fd = ::memfd_create("fuzz.whl", MFD_CLOEXEC);
  if (fd < 0) fuzz::finding("memfd_create failed");
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, file.data(), file.size(), 0) != static_cast<ssize_t>(file.size())) {
    fuzz::finding("cannot write the memfd");
  }
  archive::ExtractOptions options;
  options.threads = 4;
  (void)archive::detail::plan_zip_threads("/proc/self/fd/" + std::to_string(fd), options);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view file = fuzz::text_of(data, size);
  read_members(file);
  plan_threads(file);
  return 0;
}
