#pragma once

// Helpers of the uv runner: quoting what a program printed, keeping
// credentials out of messages, a scratch folder.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"

namespace envkit::python::detail {

// `text` with the user info of every URL in it shown as `***@`.
[[nodiscard]] std::string redact_urls(std::string_view text);

// The non-empty lines of `output`, redacted, joined with ` | ` and cut to a readable
// length, in backticks; "nothing" when there are none. Past `max_lines`: the first
// line, `...`, and the last `max_lines - 1`.
[[nodiscard]] std::string quoted_tail(std::string_view output, std::size_t max_lines = 3);

// A command line as a user could type it, URLs redacted, in backticks.
[[nodiscard]] std::string quoted_command(const std::vector<std::string>& argv);

// The file name at the end of a URL's path, percent-decoded (`torch-2.4.0%2Bcu121-...whl`
// reads `torch-2.4.0+cu121-...whl`); query and fragment are left out.
[[nodiscard]] std::string url_filename(std::string_view url);

// A fresh folder under $TMPDIR (or /tmp), removed with its content on destruction.
class ScratchDir {
 public:
  [[nodiscard]] static Result<ScratchDir> make(std::string_view prefix);
  ScratchDir(ScratchDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  ScratchDir& operator=(ScratchDir&&) = delete;
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir();

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  explicit ScratchDir(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;
};

}  // namespace envkit::python::detail
