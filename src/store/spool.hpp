#pragma once

// Internal to store: a download written to a file and hashed on the way, and
// the error both `install` and `mirror` give when the hash is not the locked one.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "envkit/core/result.hpp"
#include "envkit/net/transport.hpp"

namespace envkit::store {

// A temporary file, removed when this goes out of scope unless kept: a
// download that failed halfway never stays behind.
class TempFile {
 public:
  explicit TempFile(std::filesystem::path path) : path_(std::move(path)) {}
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  // It was renamed into place: nothing to remove.
  void keep() { path_.clear(); }

 private:
  std::filesystem::path path_;
};

struct Spooled {
  std::string sha256;  // of every byte written
  std::uint64_t bytes = 0;
};

// Writes the whole of `stream` to `file` (created or truncated). A read error
// is the download's (every URL failed) and sets `unreachable`; a write error
// names the file.
[[nodiscard]] Result<Spooled> spool(net::ByteStream& stream, const std::filesystem::path& file,
                                    bool& unreachable);

// "checksum mismatch for LABEL", with both hashes and where the bytes came
// from; the caller adds what was (not) done with them.
[[nodiscard]] Error checksum_mismatch(std::string_view label, std::string_view expected,
                                      std::string_view actual, std::string_view url);

}  // namespace envkit::store
