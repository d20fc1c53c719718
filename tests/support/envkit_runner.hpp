#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/sys/process.hpp"

namespace envkit::test {

// Runs the built envkit binary as a user would, with a clean, predictable
// environment: no colour, no GPU overrides unless the test sets them.
struct EnvkitRun {
  std::vector<std::string> args;
  std::optional<std::filesystem::path> cwd;
  std::map<std::string, std::optional<std::string>> env;
  std::string stdin_data;
  // Long enough for any ordinary command; compiling with nvcc asks for more.
  std::chrono::milliseconds timeout = std::chrono::seconds(60);
};

// Where run_envkit points the host probe's driver files, libcuda and nvidia-smi
// unless a test gives its own: a folder that does not exist.
inline constexpr std::string_view kHiddenDriver = "/nonexistent/envkit-tests-hide-the-driver";

sys::ProcessOutput run_envkit(const EnvkitRun& run);

// How the live tests (ENVKIT_LIVE_TESTS=1) run envkit: in `project` with the cache
// `cache`, and as a user's envkit runs, with the Python closure, today's index and
// the network check on.
EnvkitRun live_run(const std::filesystem::path& project, const std::filesystem::path& cache,
                   std::vector<std::string> args,
                   std::chrono::milliseconds timeout = std::chrono::minutes(10));

std::filesystem::path source_dir();
std::filesystem::path test_data_dir();

// The uv tests resolve with: $ENVKIT_UV, else tests/.tools/uv (scripts/fetch-test-tools
// puts it there); nullopt when neither is an executable file.
std::optional<std::filesystem::path> test_uv();
// Whether test_uv() has none; records the skip (scripts/setup runs fetch-test-tools).
bool uv_missing(std::source_location where = std::source_location::current());

}  // namespace envkit::test
