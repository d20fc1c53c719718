#pragma once

#include <filesystem>
#include <string_view>

namespace envkit::test {

// A fresh directory under $TMPDIR, removed with everything in it on scope exit.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  // Writes `content` to `relative` (creating parent folders); returns the full path.
  std::filesystem::path write(const std::filesystem::path& relative,
                              std::string_view content) const;

 private:
  std::filesystem::path path_;
};

}  // namespace envkit::test
