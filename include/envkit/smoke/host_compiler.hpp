#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

// nvcc accepts only the host compilers its CUDA release was tested with
// (CUDA 11.x: GCC up to 11). When it refuses the default one, envkit retries
// with an older `g++-N` from PATH. The decisions are here, as pure functions;
// running nvcc is build.hpp's.
namespace envkit::smoke {

// The newest GCC major nvcc accepts, from its refusal:
//   `#error -- unsupported GNU version! gcc versions later than 11 are not supported!`
// nullopt when `nvcc_output` holds no such message (other failures, or the clang one).
[[nodiscard]] std::optional<int> parse_gcc_limit(std::string_view nvcc_output);

// The compiler names to look for on PATH when GCC `max_major` is the newest
// nvcc accepts: `g++-<max_major>` down to `g++-5` (nvcc's own minimum), newest first.
[[nodiscard]] std::vector<std::string> host_compiler_candidates(int max_major);

// The first of `candidates` (host_compiler_candidates' order) that is among
// `available` (the names found on PATH); nullopt when none is.
[[nodiscard]] std::optional<std::string> choose_host_compiler(
    std::span<const std::string> candidates, std::span<const std::string> available);

// What to tell a user whose nvcc refused the default GCC and for whom no older
// one was found: install `g++-<max_major>`, or (unsafe) -allow-unsupported-compiler.
[[nodiscard]] std::vector<std::string> no_host_compiler_hints(int max_major);

}  // namespace envkit::smoke
