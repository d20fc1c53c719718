#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace envkit::env {

// Every environment variable envkit reads, declared once; docs/cli.md and docs/config.md list
// them.
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
inline constexpr Variable kSysDriverVersion{
    "ENVKIT_SYS_DRIVER_VERSION",
    "path read instead of /sys/module/nvidia/version (tests and containers)"};
inline constexpr Variable kLibcuda{
    "ENVKIT_LIBCUDA",
    "driver library loaded instead of libcuda.so.1 (tests and containers; a path that does not "
    "exist: none)"};
inline constexpr Variable kNvidiaSmi{
    "ENVKIT_NVIDIA_SMI",
    "program run instead of nvidia-smi from PATH (tests and containers; a path that does not "
    "exist: none)"};
inline constexpr Variable kTestFailWrite{
    "ENVKIT_TEST_FAIL_WRITE",
    "tests only: a file envkit writes whose path contains this fails as on a full disk"};
inline constexpr Variable kLiveTests{"ENVKIT_LIVE_TESTS",
                                     "1 runs the opt-in tests that reach PyPI"};
inline constexpr Variable kNoColor{"NO_COLOR", "any value turns colour off"};
inline constexpr Variable kXdgCacheHome{"XDG_CACHE_HOME", "base of the default cache directory"};
inline constexpr Variable kXdgConfigHome{
    "XDG_CONFIG_HOME", "base of per-user configuration ($XDG_CONFIG_HOME/envkit/config.yaml)"};
inline constexpr Variable kHome{"HOME", "the user's home directory"};
inline constexpr Variable kSslCertFile{
    "SSL_CERT_FILE", "CA bundle used to verify HTTPS servers (replaces the default)"};
inline constexpr Variable kSslCertDir{"SSL_CERT_DIR", "directory of CA certificates for HTTPS"};
// Proxies, as libcurl reads them (http_proxy only in lower case); a failed download
// names the one it went through.
inline constexpr Variable kHttpProxy{"http_proxy", "proxy for http:// downloads"};
inline constexpr Variable kHttpsProxy{"https_proxy", "proxy for https:// downloads"};
inline constexpr Variable kHttpsProxyUpper{"HTTPS_PROXY", "proxy for https:// downloads"};
inline constexpr Variable kAllProxy{"all_proxy", "proxy for downloads the others do not cover"};
inline constexpr Variable kAllProxyUpper{"ALL_PROXY",
                                         "proxy for downloads the others do not cover"};
inline constexpr Variable kNoProxy{"no_proxy", "hosts reached without a proxy, comma-separated"};
inline constexpr Variable kNoProxyUpper{"NO_PROXY",
                                        "hosts reached without a proxy, comma-separated"};
inline constexpr Variable kPipIndexUrl{"PIP_INDEX_URL",
                                       "package index pip (and envkit's wheel importers) query"};
inline constexpr Variable kPipConfigFile{"PIP_CONFIG_FILE", "pip configuration file to read"};
inline constexpr Variable kNoPython{"ENVKIT_NO_PYTHON",
                                    "1: lock without a Python closure (the CUDA stack only; "
                                    "no pip, no network)"};
inline constexpr Variable kNoLiveIndex{
    "ENVKIT_NO_LIVE_INDEX",
    "1: lock from the recipe database envkit was built with, never reading today's releases "
    "from the package index (tests about something else)"};
inline constexpr Variable kIndexTtl{
    "ENVKIT_INDEX_TTL", "seconds the facts read from a package index stay fresh (default 600)"};
inline constexpr Variable kPythonSearchPath{
    "ENVKIT_PYTHON_SEARCH_PATH",
    "folders (`:`-separated) searched for the machine's Python interpreters instead of pyenv's, "
    "conda's, PATH and /usr/bin"};
inline constexpr Variable kAssumeReachable{
    "ENVKIT_ASSUME_REACHABLE",
    "1: `envkit lock` takes every host as reachable: it asks none, prefers nothing this "
    "machine has over a download, and warns about no source (the tests set it unless they "
    "test that)"};
inline constexpr Variable kUv{"ENVKIT_UV",
                              "the uv that resolves Python closures (default: the pinned uv "
                              "envkit downloads into its cache)"};

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

// Settings that config.yaml gives too (docs/config.md); the variable wins over the files.
inline constexpr Variable kMirrors{"ENVKIT_MIRRORS",
                                   "mirrors asked first, space- or comma-separated (empty: none)"};
inline constexpr Variable kJobs{"ENVKIT_JOBS", "downloads at once (default 8)"};
inline constexpr Variable kIndexUrl{
    "ENVKIT_INDEX_URL", "package index of `recipes import pypi-nvidia` (default: pip's)"};
inline constexpr Variable kLinkMode{
    "ENVKIT_LINK_MODE", "how files come from the cache: auto, reflink, hardlink or copy"};
inline constexpr Variable kPackaging{"ENVKIT_PACKAGING",
                                     "NVIDIA packaging install prefers: archive or wheel"};
inline constexpr Variable kCompileBytecode{
    "ENVKIT_COMPILE_BYTECODE", "install compiles the new Python packages to .pyc: true or false"};

// Read by `envkit run`, `shell` and `activate` (docs/activation.md): the values
// they extend, replace, restore or warn about. Not settings of envkit's own, so
// not in kAll.
inline constexpr Variable kPath{"PATH", "commands; activation puts the prefix's bin/ first"};
inline constexpr Variable kLdLibraryPath{"LD_LIBRARY_PATH",
                                         "libraries; activation puts the prefix's lib/ first"};
inline constexpr Variable kLdPreload{"LD_PRELOAD",
                                     "libraries loaded first; a CUDA one there is warned about"};
inline constexpr Variable kCpath{"CPATH", "headers; activation puts the prefix's include/ first"};
inline constexpr Variable kLibraryPath{"LIBRARY_PATH",
                                       "link-time libraries; activation puts lib/ first"};
inline constexpr Variable kPkgConfigPath{"PKG_CONFIG_PATH",
                                         ".pc files; activation puts lib/pkgconfig first"};
inline constexpr Variable kCudaHome{"CUDA_HOME", "CUDA root; activation sets the prefix"};
inline constexpr Variable kCudaPath{"CUDA_PATH", "CUDA root; activation sets the prefix"};
inline constexpr Variable kCudaToolkitRoot{"CUDAToolkit_ROOT",
                                           "CMake's CUDA root; activation sets the prefix"};
inline constexpr Variable kPythonHome{"PYTHONHOME",
                                      "unset by activation when the prefix has its own Python"};
inline constexpr Variable kEnvkitPrefix{
    "ENVKIT_PREFIX", "the prefix activated; its folders are dropped when another is activated"};
inline constexpr Variable kShell{"SHELL",
                                 "the shell `envkit shell` starts and `activate` writes for"};

// Read by `install` for packages built from source (zlib; docs/install.md). Not
// a setting of envkit's own, so not in kAll.
inline constexpr Variable kCc{"CC", "the C compiler source packages are built with (default: cc)"};
// CPython's configure is given LDFLAGS (its $ORIGIN rpath): the user's are added to it.
inline constexpr Variable kLdflags{"LDFLAGS",
                                   "linker flags for source builds (CPython: after its rpath)"};

// Where registry credentials are read from (`oci://` mirrors, `mirror --oci-push`;
// docs/install.md), as docker, podman and skopeo read them. Not settings of
// envkit's own, so not in kAll.
inline constexpr Variable kDockerConfig{"DOCKER_CONFIG",
                                        "folder of docker's config.json (default ~/.docker)"};
inline constexpr Variable kRegistryAuthFile{"REGISTRY_AUTH_FILE",
                                            "podman/skopeo's registry credentials file"};
inline constexpr Variable kXdgRuntimeDir{
    "XDG_RUNTIME_DIR", "holds containers/auth.json, podman's default credentials file"};

// Where the machine's own Pythons are looked for (python/interpreters.hpp). Not
// settings of envkit's own, so not in kAll.
inline constexpr Variable kPyenvRoot{"PYENV_ROOT", "pyenv's folder (default ~/.pyenv)"};
inline constexpr Variable kCondaPrefix{"CONDA_PREFIX", "the active conda environment"};

inline constexpr Variable kAll[] = {kRecipes,          kCacheDir,        kOverrideDriver,
                                    kOverrideCudaArch, kOverrideGlibc,   kProcDriverVersion,
                                    kSysDriverVersion, kLiveTests,       kTestFailWrite,
                                    kNoColor,          kXdgCacheHome,    kRetries,
                                    kRetryDelayMs,     kMaxRetryDelayMs, kStallTimeoutMs,
                                    kConnectTimeoutMs, kMirrors,         kJobs,
                                    kIndexUrl,         kLinkMode,        kPackaging,
                                    kCompileBytecode,  kXdgConfigHome,   kUv,
                                    kNoPython,         kNoLiveIndex,     kIndexTtl,
                                    kLibcuda,          kNvidiaSmi,       kPythonSearchPath,
                                    kAssumeReachable};

// The variable's value, or nullopt when unset. Empty counts as set.
[[nodiscard]] std::optional<std::string> get(const Variable& variable);

}  // namespace envkit::env
