#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"

namespace envkit::sys {

struct ProcessOptions {
  std::optional<std::filesystem::path> cwd;
  // Variables to set (or, with a nullopt value, unset) on top of our environment.
  std::map<std::string, std::optional<std::string>> env;
  std::string stdin_data;
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
  // Called with each line of standard output as it arrives (without its newline), for
  // progress; the output is captured all the same.
  std::function<void(std::string_view line)> on_stdout_line;
};

struct ProcessOutput {
  int exit_code = -1;  // 128+signal when killed by a signal
  bool timed_out = false;
  std::string out;
  std::string err;
};

// Runs argv[0] (looked up on PATH when it has no slash) to completion and
// captures its output. Failing to start is an error; a non-zero exit is not.
[[nodiscard]] Result<ProcessOutput> run_process(const std::vector<std::string>& argv,
                                                const ProcessOptions& options = {});

// The full path of `program` on PATH, if there is one.
[[nodiscard]] std::optional<std::filesystem::path> find_on_path(std::string_view program);

}  // namespace envkit::sys
