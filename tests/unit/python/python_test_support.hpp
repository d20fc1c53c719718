#pragma once

// Helpers of the python module's tests: stand-in tools and scoped
// environment variables. Header-only: the test glob builds only *_test.cpp files.
#include <stdlib.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "envkit/sys/fs.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"

namespace envkit::test {

// `text` as one single-quoted shell word.
inline std::string shell_quoted(std::string_view text) {
  std::string out = "'";
  for (char c : text)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// An executable shell script at `relative` in `dir` that prints `out` (and `err` on
// stderr) and exits with `code`, whatever its arguments. Shell builtins only: tests
// change PATH.
inline std::filesystem::path write_tool(const TempDir& dir, const std::filesystem::path& relative,
                                        std::string_view out, std::string_view err = {},
                                        int code = 0) {
  std::string script = "#!/bin/sh\n";
  if (!out.empty()) script += "printf '%s\\n' " + shell_quoted(out) + "\n";
  if (!err.empty()) script += "printf '%s\\n' " + shell_quoted(err) + " >&2\n";
  script += "exit " + std::to_string(code) + "\n";
  const auto path = dir.write(relative, script);
  std::filesystem::permissions(path, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::replace);
  return path;
}

using envkit::test::ScopedEnv;

// A fixture of tests/data/python.
inline std::string python_fixture(std::string_view name) {
  return sys::read_file(std::filesystem::path(ENVKIT_TEST_DATA_DIR) / "python" / name).value();
}

}  // namespace envkit::test
