#include "support/envkit_runner.hpp"

#include <unistd.h>

#include <stdexcept>

#include "envkit/core/env_vars.hpp"
#include "support/skip.hpp"

namespace envkit::test {

sys::ProcessOutput run_envkit(const EnvkitRun& run) {
  std::vector<std::string> argv{ENVKIT_BINARY};
  argv.insert(argv.end(), run.args.begin(), run.args.end());
  sys::ProcessOptions options;
  options.cwd = run.cwd;
  options.stdin_data = run.stdin_data;
  options.timeout = run.timeout;
  // Host facts must not leak into tests: each test states the machine it wants.
  // Unless it does, the probe's driver files, libcuda and nvidia-smi are paths that do
  // not exist, so a GPU machine runs the tests as a machine without a driver does.
  // Nor the user's configuration (docs/config.md): no config file, no settings variables.
  options.env = {{"NO_COLOR", "1"},
                 {"ENVKIT_OVERRIDE_DRIVER", std::nullopt},
                 {"ENVKIT_OVERRIDE_CUDA_ARCH", std::nullopt},
                 {"ENVKIT_OVERRIDE_GLIBC", std::nullopt},
                 {"ENVKIT_SYS_DRIVER_VERSION", std::string(kHiddenDriver) + "/sys-version"},
                 {"ENVKIT_PROC_DRIVER_VERSION", std::string(kHiddenDriver) + "/proc-version"},
                 {"ENVKIT_LIBCUDA", std::string(kHiddenDriver) + "/libcuda.so.1"},
                 {"ENVKIT_NVIDIA_SMI", std::string(kHiddenDriver) + "/nvidia-smi"},
                 {"XDG_CONFIG_HOME", "/nonexistent/envkit-tests-have-no-user-config"},
                 {"ENVKIT_MIRRORS", std::nullopt},
                 {"ENVKIT_JOBS", std::nullopt},
                 {"ENVKIT_INDEX_URL", std::nullopt},
                 {"ENVKIT_LINK_MODE", std::nullopt},
                 {"ENVKIT_PACKAGING", std::nullopt},
                 // Tests never reach PyPI: no Python closure unless a test asks for one
                 // (and brings its own index).
                 {"ENVKIT_NO_PYTHON", "1"},
                 // Nor today's releases from PyPI: the recipe database envkit was built with
                 // answers, unless a test serves an index and asks for them.
                 {"ENVKIT_NO_LIVE_INDEX", "1"},
                 // Nor the machine's network and interpreters: `envkit lock` takes every
                 // host as reachable unless a test states the network it wants (the
                 // obtainability tests, with hosts on closed ports).
                 {"ENVKIT_ASSUME_REACHABLE", "1"},
                 {"ENVKIT_INDEX_TTL", std::nullopt}};
  // envkit would otherwise download its pinned uv from PyPI: tests use the copy
  // scripts/fetch-test-tools made.
  if (const auto uv = test_uv()) options.env["ENVKIT_UV"] = uv->string();
  for (const auto& [name, value] : run.env)
    options.env[name] = value;
  auto result = sys::run_process(argv, options);
  if (!result) throw std::runtime_error(result.error().to_string());
  return std::move(result).value();
}

std::filesystem::path source_dir() {
  return ENVKIT_SOURCE_DIR;
}
std::filesystem::path test_data_dir() {
  return ENVKIT_TEST_DATA_DIR;
}

std::optional<std::filesystem::path> test_uv() {
  const auto given = env::get(env::kUv);
  const std::filesystem::path uv =
      given && !given->empty() ? std::filesystem::path(*given) : source_dir() / "tests/.tools/uv";
  if (::access(uv.c_str(), X_OK) != 0 || !std::filesystem::is_regular_file(uv)) return std::nullopt;
  return uv;
}

bool uv_missing(std::source_location where) {
  if (test_uv()) return false;
  skip_test(SkipKind::setup_should_provide,
            "no uv in tests/.tools (scripts/setup runs scripts/fetch-test-tools; or set ENVKIT_UV)",
            where);
  return true;
}

EnvkitRun live_run(const std::filesystem::path& project, const std::filesystem::path& cache,
                   std::vector<std::string> args, std::chrono::milliseconds timeout) {
  args.insert(args.begin(), {"-C", project.string(), "--cache-dir", cache.string()});
  return {.args = std::move(args),
          .cwd = std::nullopt,
          .env = {{"ENVKIT_NO_PYTHON", std::nullopt},
                  {"ENVKIT_NO_LIVE_INDEX", std::nullopt},
                  {"ENVKIT_ASSUME_REACHABLE", std::nullopt}},
          .stdin_data = {},
          .timeout = timeout};
}

}  // namespace envkit::test
