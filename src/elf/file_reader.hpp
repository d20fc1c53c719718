#pragma once

// The ELF readers' access to a file: pread on a file opened once, or the
// file's bytes in memory (the fuzz targets), with reads checked against the
// size it had when opened.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "envkit/core/result.hpp"
#include "envkit/sys/unique_fd.hpp"

namespace envkit::elf::detail {

class FileReader {
 public:
  // `path` opened for reading; a regular file only. `missing` is the error
  // code when there is no such file (an input error where the user named it).
  static Result<FileReader> open(const std::filesystem::path& path,
                                 ErrorCode missing = ErrorCode::failed);
  // `bytes` (which must outlive the reader), named `name` in errors.
  static FileReader of_bytes(std::string_view bytes, const std::filesystem::path& name);

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] std::uint64_t size() const { return size_; }

  // Up to `length` bytes at `offset`: fewer only at the end of the file.
  [[nodiscard]] Result<std::string> read_some(std::uint64_t offset, std::uint64_t length) const;
  // Exactly `length` bytes at `offset`, which the caller has checked lie in the
  // file: fewer means the file shrank since it was opened, an error.
  [[nodiscard]] Result<std::string> read(std::uint64_t offset, std::uint64_t length) const;

 private:
  FileReader(std::filesystem::path path, sys::UniqueFd fd, std::string_view bytes,
             std::uint64_t size)
      : path_(std::move(path)), fd_(std::move(fd)), bytes_(bytes), size_(size) {}

  [[nodiscard]] Error shrank(std::uint64_t offset) const;

  std::filesystem::path path_;
  sys::UniqueFd fd_;        // invalid: the bytes are in memory
  std::string_view bytes_;  // the whole file, when fd_ is invalid
  std::uint64_t size_;
};

}  // namespace envkit::elf::detail
