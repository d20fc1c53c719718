#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/net/fetch.hpp"
#include "envkit/net/transport.hpp"
#include "envkit/specs/platform.hpp"
#include "envkit/store/cache.hpp"

// Tools envkit runs and provides itself, so that what it does never depends on
// what happens to be on PATH: uv, which `envkit lock` resolves Python closures
// with. A tool is a pinned release, one wheel per host platform with its URL,
// sha256 and size written here (taken from PyPI, never guessed). The wheel is
// downloaded once, verified, its executable unpacked and run once (`NAME
// --version` must print `NAME VERSION`), and kept in the cache:
//   <cache>/tools/<name>-<version>/<name>
// The folder appears by a rename when it is whole, made under a lock
// (<cache>/store/v1/locks/tool-<sha256>.lock) in the cache's staging area, so
// several envkit processes can ask at once. $ENVKIT_UV overrides all of this:
// the caller checks it first (python::find_uv) and then downloads nothing.
namespace envkit::store {

// One host platform's file of a release: a wheel holding the executable.
struct ToolFile {
  specs::Platform host = specs::Platform::linux_x86_64;
  std::string url;     // on files.pythonhosted.org; its last segment is the file name indexes list
  std::string sha256;  // 64 lowercase hex digits
  std::uint64_t size = 0;
  std::string member;  // the executable's path in the wheel: "uv-0.13.9.data/scripts/uv"
};

struct ToolRelease {
  std::string name;     // "uv": the executable's name, and the first word of `NAME --version`
  std::string version;  // "0.13.9": the second word of `NAME --version`
  // "ENVKIT_UV": the variable that names an executable to use instead (for hints).
  std::string override_variable;
  std::vector<ToolFile> files;
};

// uv 0.13.9 from PyPI: linux-x86_64 (manylinux_2_17: glibc 2.17 or newer) and
// linux-aarch64 (the wheel tagged both manylinux_2_17 and musllinux_1_1, which
// runs on any aarch64 Linux).
[[nodiscard]] const ToolRelease& pinned_uv();

struct ToolOptions {
  // Downloads; nullptr: offline, only a tool already in the cache will do.
  net::Transport* transport = nullptr;
  // Download mirrors, asked first: https://HOST/PATH at MIRROR/HOST/PATH (as for `install`).
  std::vector<std::string> mirrors;
  // PEP 503/691 package indexes (`https://devpi.lan/root/pypi/+simple/`), asked in order
  // when the URL and its mirrors cannot be reached: the pinned file's name is looked up
  // on `<index>/<name>/` and downloaded from the link there, the pinned sha256 checked.
  std::vector<std::string> indexes;
  // How index pages are fetched (CA bundle, timeouts, tries); an Accept header is added.
  net::FetchOptions index_fetch;
  // Told what happens, a line at a time ("downloading uv 0.13.9 ..."), when set.
  std::function<void(const std::string&)> note;
};

// Where the release's executable lives in `cache` once provided (whether or not it is there).
[[nodiscard]] std::filesystem::path tool_path(const Cache& cache, const ToolRelease& release);

// The release's executable for this host: from the cache when there, else
// downloaded, verified, unpacked and run once first. Errors (failed) say which
// URLs and indexes were tried and why each failed; a sha256 mismatch stops at
// once and names where the bytes came from; no file for this host, or offline
// with nothing in the cache, say so. Each error hints at $ENVKIT_UV.
[[nodiscard]] Result<std::filesystem::path> provide_tool(const Cache& cache,
                                                         const ToolRelease& release,
                                                         const ToolOptions& options);

}  // namespace envkit::store
