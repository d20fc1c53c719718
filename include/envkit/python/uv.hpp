#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "envkit/core/result.hpp"
#include "envkit/python/closure.hpp"
#include "envkit/specs/version.hpp"

// Resolving a closure for the lock's target (its Python version and
// platform, never this machine's) with `uv pip compile --python-platform
// --python-version` (docs/python.md).
namespace envkit::python {

// The headline of resolve_with_uv's refusals: the requirements have no
// solution for the target, or an index could not be read (the causes name
// its URL). A lock tells the two apart: only the first says anything about
// what the indexes serve.
inline constexpr std::string_view kUnresolvable = "uv could not resolve the Python requirements";
inline constexpr std::string_view kIndexUnreachable = "uv could not read a package index";

// A uv executable.
struct Uv {
  std::filesystem::path path;
  std::string version;  // from `uv --version`: "0.13.9"
};

// The platforms envkit resolves for with uv.
enum class UvPlatform : std::uint8_t {
  linux_x86_64,    // x86_64-manylinux_2_<glibc>
  linux_aarch64,   // aarch64-manylinux_2_<glibc>
  windows_x86_64,  // x86_64-pc-windows-msvc
};

// The machine a closure is resolved for: its Python decides markers
// (python_version, python_full_version) and wheel tags (cp36m, cp310, abi3),
// its platform and glibc decide which wheels fit (manylinux_2_<glibc>).
struct ResolveTarget {
  specs::Version python;  // 3.6.9, 3.12
  UvPlatform platform = UvPlatform::linux_x86_64;
  // The oldest glibc minor the machines have (2.<glibc_minor>); Linux only.
  unsigned glibc_minor = kDefaultGlibcMinor;

  static constexpr unsigned kDefaultGlibcMinor = 28;  // manylinux_2_28
  // "CPython 3.6.9, x86_64-manylinux_2_28": for messages.
  [[nodiscard]] std::string description() const;
};

// uv's name for the target's platform, as `--python-platform` takes it:
// "x86_64-manylinux_2_28" (uv knows manylinux_2_17 and newer: an older glibc
// is asked as 2_17).
[[nodiscard]] std::string python_platform(const ResolveTarget& target);

// The uv to use: $ENVKIT_UV (a path) if set, else `uv` on PATH; runs `uv --version`.
// Errors (failed): none found (hint: `pip install uv`), or it does not run.
[[nodiscard]] Result<Uv> find_uv();

// Runs `uv pip compile --quiet --no-header --python-platform P --python-version V
// --format pylock.toml -o DIR/pylock.toml [--index-url URL [--extra-index-url URL]...
// --index-strategy unsafe-best-match] [--find-links PAGE]... DIR/requirements.in [FILE]...`
// (the requirements are written to DIR/requirements.in, a scratch folder) and reads
// the lock (parse_pylock): markers are evaluated for the target, never for this
// machine. An index URL ending in `.html` is a find-links page (PyTorch's
// torch_stable.html). With several indexes each package is taken from the best
// match among all of them, as pip does, so that `torch==2.4.1+cu124` is found on
// an extra index although the first one also has torch. A wheel is `requested` when
// a requirement, or a line of a requirement file, names it. Empty index URLs: uv's
// own configuration (UV_INDEX_URL, uv.toml), not pip's. Errors (failed) quote uv's
// `error:`/`cause:` lines, URLs redacted, and name the target; a uv older than
// pylock.toml output (0.6.15) gets a hint to upgrade; a resolution that does not
// finish within `request.timeout` names the requirement files.
[[nodiscard]] Result<Closure> resolve_with_uv(const Uv& uv, const ResolveRequest& request,
                                              const ResolveTarget& target);

// Reads a PEP 751 lock file (pylock.toml, lock-version 1.x) as uv writes it: each
// `[[packages]]`'s name, version, and its wheel's url, hashes.sha256 and size. A
// recent uv lists only the wheel that fits (0.13.9 does), an older one every wheel of
// the release (0.6.15 does): then the one that fits `platform` and CPython
// `python_version` best is taken (own ABI over abi3 over pure Python; the newest
// manylinux up to 2_28, then `linux_<arch>`, then `any`; never musllinux). A
// package with no wheel that fits but an `sdist` (url, hashes.sha256, size) is
// taken as that sdist (ResolvedWheel::kind; html5lib 0.9999999 has no wheel):
// wheels always win. Errors (input) name `source` and the package: not TOML,
// another lock-version, a package with neither a fitting wheel nor an sdist (a
// VCS or directory source), a file without url or sha256, an sdist URL that is no
// source archive (.tar.gz, .zip, .tar.bz2, .tgz, .tar.xz, .tar).
// `requires_dist` stays empty and `requested` false: pylock.toml does not say.
[[nodiscard]] Result<Closure> parse_pylock(std::string_view toml, std::string_view source,
                                           const ResolveTarget& target);

}  // namespace envkit::python
