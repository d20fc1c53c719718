#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "envkit/core/result.hpp"
#include "envkit/python/closure.hpp"
#include "envkit/python/pip.hpp"
#include "envkit/specs/version.hpp"

// Resolving for a platform other than this machine's with `uv pip compile
// --python-platform`, which pip cannot do (docs/python.md).
namespace envkit::python {

// A uv executable.
struct Uv {
  std::filesystem::path path;
  std::string version;  // from `uv --version`: "0.13.9"
};

// The platforms envkit resolves for with uv.
enum class UvPlatform : std::uint8_t {
  linux_x86_64,    // x86_64-manylinux_2_28
  linux_aarch64,   // aarch64-manylinux_2_28
  windows_x86_64,  // x86_64-pc-windows-msvc
};

// uv's name for it, as `--python-platform` takes it: "x86_64-manylinux_2_28".
[[nodiscard]] std::string_view to_string(UvPlatform platform);

// The uv to use: $ENVKIT_UV (a path) if set, else `uv` on PATH; runs `uv --version`.
// Errors (failed): none found (hint: `pip install uv`), or it does not run.
[[nodiscard]] Result<Uv> find_uv();

// Runs `uv pip compile --quiet --no-header --only-binary :all: --python-platform P
// --python-version V --format pylock.toml -o DIR/pylock.toml [--index-url URL
// [--extra-index-url URL]...] DIR/requirements.in [FILE]...` (the requirements are
// written to DIR/requirements.in, a scratch folder) and reads the lock (parse_pylock).
// `python_version` goes as given (3.11 or 3.11.7). A wheel is `requested` when a
// requirement, or a line of a requirement file, names it. Index URLs: as for pip, but
// uv takes a package from the first index that has it, where pip merges the indexes;
// empty: uv's own configuration (UV_INDEX_URL, uv.toml), not pip's. Errors (failed)
// quote uv's `error:`/`cause:` lines, URLs redacted; a uv older than pylock.toml output
// (0.6.15) gets a hint to upgrade.
[[nodiscard]] Result<Closure> resolve_with_uv(const Uv& uv, const ResolveRequest& request,
                                              UvPlatform platform,
                                              const specs::Version& python_version);

// Reads a PEP 751 lock file (pylock.toml, lock-version 1.x) as uv writes it: each
// `[[packages]]`'s name, version, and its wheel's url, hashes.sha256 and size. A
// recent uv lists only the wheel that fits (0.13.9 does), an older one every wheel of
// the release (0.6.15 does): then the one that fits `platform` and CPython
// `python_version` best is taken (own ABI over abi3 over pure Python; the newest
// manylinux up to 2_28, then `linux_<arch>`, then `any`; never musllinux). Errors
// (input) name `source` and the package: not TOML, another lock-version, a package
// with no wheel (an sdist, a VCS or directory source) or none that fits, a wheel
// without url or sha256. `requires_dist` stays empty and `requested` false:
// pylock.toml does not say.
[[nodiscard]] Result<Closure> parse_pylock(std::string_view toml, std::string_view source,
                                           UvPlatform platform,
                                           const specs::Version& python_version);

}  // namespace envkit::python
