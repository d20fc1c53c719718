#include "envkit/oci/layout_archive.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <fstream>

#include "envkit/core/text.hpp"
#include "envkit/oci/tar_writer.hpp"

namespace envkit::oci {

namespace fs = std::filesystem;

Result<void> write_layout_archive(const fs::path& layout, const fs::path& archive) {
  std::vector<TarEntry> entries = {
      {.path = "blobs", .type = TarEntry::Type::directory},
      {.path = "blobs/sha256", .type = TarEntry::Type::directory},
      {.path = "oci-layout", .source = layout / "oci-layout"},
      {.path = "index.json", .source = layout / "index.json"},
  };
  std::error_code error;
  for (fs::directory_iterator it(layout / "blobs" / "sha256", error), end; !error && it != end;
       it.increment(error)) {
    const auto name = it->path().filename().string();
    if (name.starts_with(".tmp-") || !it->is_regular_file()) continue;
    entries.push_back({.path = "blobs/sha256/" + name, .source = it->path()});
  }
  if (error) {
    return Error::failed(fmt::format("cannot read {}", text::quoted(layout.string())))
        .because(error.message());
  }
  const auto temporary = fs::path(archive.string() + ".tmp-" + std::to_string(::getpid()));
  std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
  if (!out) return Error::failed(fmt::format("cannot write {}", text::quoted(archive.string())));
  auto written = write_tar(std::move(entries), 0, [&](std::string_view bytes) -> Result<void> {
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) return Error::failed(fmt::format("cannot write {}", text::quoted(archive.string())));
    return {};
  });
  out.close();
  if (!written || !out) {
    fs::remove(temporary, error);
    if (!written) return written;
    return Error::failed(fmt::format("cannot write {}", text::quoted(archive.string())));
  }
  fs::rename(temporary, archive, error);
  if (error) {
    return Error::failed(fmt::format("cannot write {}", text::quoted(archive.string())))
        .because(error.message());
  }
  return {};
}

}  // namespace envkit::oci
