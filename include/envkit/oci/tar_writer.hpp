#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"

// Deterministic tar streams for OCI layers (docs/export.md): the same entries
// give the same bytes on every machine. Entries are sorted by path; every
// header says mtime = the given epoch, uid/gid 0, no user or group names, mode
// 0755 (folders, executables) or 0644, and nothing else (no xattrs, no ACLs).
// A name or link target too long for ustar gets a PAX extended header.
namespace envkit::oci {

struct TarEntry {
  enum class Type : std::uint8_t { file, directory, symlink };
  std::string path;  // inside the tar, '/'-separated, no leading '/'
  Type type = Type::file;
  bool executable = false;
  // Files: the bytes come from `source`, or from `content` when `source` is empty.
  std::filesystem::path source;
  std::string content;
  std::string link_target;  // symlinks
  // The file's sha256 as its receipt states it (`source` files): what the
  // layer cache's key is made of, never read by the writer.
  std::string sha256;
  // Which package put the entry here, for the errors that refuse it.
  std::string owner;
};

// Receives the tar's bytes in order.
using TarSink = std::function<Result<void>(std::string_view bytes)>;

// Writes `entries` as one tar to `sink`. Two files of one inode (by `source`)
// become a file and a hard link to it (the first by path is the file). Refused,
// naming the path and its owner(s): a name with a `.wh.` component (OCI's
// whiteouts), and one path twice with different content or types (a path given
// twice identically is written once).
[[nodiscard]] Result<void> write_tar(std::vector<TarEntry> entries, std::int64_t mtime,
                                     const TarSink& sink);

// The epoch layers carry: SOURCE_DATE_EPOCH when set to a number, else 0.
[[nodiscard]] std::int64_t layer_epoch();

}  // namespace envkit::oci
