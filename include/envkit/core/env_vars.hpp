#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace envkit::env {

// Every environment variable envkit reads, declared once. `envkit --help-env`
// and docs/config.md list them from here.
struct Variable {
  std::string_view name;
  std::string_view meaning;
};

inline constexpr Variable kRecipes{"ENVKIT_RECIPES", "recipe database directory (after --recipes)"};
inline constexpr Variable kCacheDir{"ENVKIT_CACHE_DIR", "cache directory (after --cache-dir)"};
inline constexpr Variable kOverrideDriver{
    "ENVKIT_OVERRIDE_DRIVER",
    "NVIDIA driver version to assume, e.g. 550.54.15; `none` = no driver"};
inline constexpr Variable kOverrideCudaArch{"ENVKIT_OVERRIDE_CUDA_ARCH",
                                            "GPU compute capabilities to assume, e.g. 8.0,9.0"};
inline constexpr Variable kOverrideGlibc{"ENVKIT_OVERRIDE_GLIBC", "glibc version to assume"};
inline constexpr Variable kProcDriverVersion{
    "ENVKIT_PROC_DRIVER_VERSION",
    "path read instead of /proc/driver/nvidia/version (tests and containers)"};
inline constexpr Variable kLiveTests{"ENVKIT_LIVE_TESTS",
                                     "1 runs the opt-in tests that reach PyPI"};
inline constexpr Variable kNoColor{"NO_COLOR", "any value turns colour off"};
inline constexpr Variable kXdgCacheHome{"XDG_CACHE_HOME", "base of the default cache directory"};
inline constexpr Variable kXdgConfigHome{"XDG_CONFIG_HOME", "base of per-user configuration"};
inline constexpr Variable kHome{"HOME", "the user's home directory"};
inline constexpr Variable kSslCertFile{
    "SSL_CERT_FILE", "CA bundle used to verify HTTPS servers (replaces the default)"};
inline constexpr Variable kSslCertDir{"SSL_CERT_DIR", "directory of CA certificates for HTTPS"};
inline constexpr Variable kPipIndexUrl{"PIP_INDEX_URL",
                                       "package index pip (and envkit's wheel importers) query"};
inline constexpr Variable kPipConfigFile{"PIP_CONFIG_FILE", "pip configuration file to read"};

// Download tuning (`envkit install`); tests set them to milliseconds.
inline constexpr Variable kRetries{"ENVKIT_RETRIES", "tries per URL before the next (default 5)"};
inline constexpr Variable kRetryDelayMs{
    "ENVKIT_RETRY_DELAY_MS", "wait before the first retry, doubled after each (default 500)"};
inline constexpr Variable kMaxRetryDelayMs{"ENVKIT_MAX_RETRY_DELAY_MS",
                                           "longest wait between retries (default 30000)"};
inline constexpr Variable kStallTimeoutMs{"ENVKIT_STALL_TIMEOUT_MS",
                                          "a transfer silent this long is retried (default 30000)"};
inline constexpr Variable kConnectTimeoutMs{"ENVKIT_CONNECT_TIMEOUT_MS",
                                            "connection timeout (default 15000)"};

inline constexpr Variable kAll[] = {
    kRecipes,           kCacheDir,        kOverrideDriver, kOverrideCudaArch, kOverrideGlibc,
    kProcDriverVersion, kLiveTests,       kNoColor,        kXdgCacheHome,     kRetries,
    kRetryDelayMs,      kMaxRetryDelayMs, kStallTimeoutMs, kConnectTimeoutMs};

// The variable's value, or nullopt when unset. Empty counts as set.
[[nodiscard]] std::optional<std::string> get(const Variable& variable);

}  // namespace envkit::env
