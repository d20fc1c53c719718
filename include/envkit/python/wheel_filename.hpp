#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "envkit/core/result.hpp"

namespace envkit::python {

// The parts of a wheel's file name (PEP 427, the binary distribution format):
// `{distribution}-{version}(-{build tag})?-{python tag}-{abi tag}-{platform tag}.whl`.
// Tags are kept as written, compressed sets included
// (`manylinux2014_x86_64.manylinux_2_17_x86_64`).
struct WheelFilename {
  std::string distribution;  // PEP 503 normalized: `nvidia_cudnn_cu12` -> `nvidia-cudnn-cu12`
  std::string version;       // as written: `2.4.0+cu121`
  std::string build_tag;     // "" when there is none; else starts with a digit: `1`, `2abc`
  std::string python_tag;    // `cp311`, `py3`, `py2.py3`
  std::string abi_tag;       // `cp311`, `abi3`, `none`
  std::string platform_tag;  // `linux_x86_64`, `any`, `win_amd64`
};

// Parses a file name (not a URL: `%2B` must already read `+`). Errors (input) name
// the file and say which part is wrong: not `.whl`, too few or too many `-` parts,
// an empty part, a distribution or tag with characters a wheel name cannot hold,
// a version that is not PEP 440, a build tag that does not start with a digit.
[[nodiscard]] Result<WheelFilename> parse_wheel_filename(std::string_view filename);

// The glibc minor version (2.<minor>) one manylinux platform tag needs on
// `arch` (`x86_64`, `aarch64`): manylinux1 5, manylinux2010 12, manylinux2014
// 17, manylinux_2_<minor>. nullopt for other tags (`linux_x86_64`, `any`,
// musllinux, another arch).
[[nodiscard]] std::optional<unsigned> manylinux_glibc_minor(std::string_view tag,
                                                            std::string_view arch);

// The lowest glibc minor any of a wheel's platform tags (a compressed set,
// `manylinux1_x86_64.manylinux_2_5_x86_64`) needs; nullopt when none is manylinux.
[[nodiscard]] std::optional<unsigned> wheel_glibc_minor(const WheelFilename& wheel,
                                                        std::string_view arch);

}  // namespace envkit::python
