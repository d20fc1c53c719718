#include "envkit/smoke/host_compiler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace envkit::smoke {

namespace {

// nvcc's own lower bound (CUDA 11 accepts GCC 5 and later); no point looking further back.
constexpr int kOldestGcc = 5;

}  // namespace

std::optional<int> parse_gcc_limit(std::string_view nvcc_output) {
  // crt/host_config.h: "unsupported GNU version! gcc versions later than 11 are not supported!"
  constexpr std::string_view kMarker = "unsupported GNU version! gcc versions later than ";
  const auto at = nvcc_output.find(kMarker);
  if (at == std::string_view::npos) return std::nullopt;
  const auto digits = nvcc_output.substr(at + kMarker.size());
  int major = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), major);
  if (error != std::errc() || end == digits.data() || major <= 0) return std::nullopt;
  return major;
}

std::vector<std::string> host_compiler_candidates(int max_major) {
  std::vector<std::string> names;
  for (int major = max_major; major >= kOldestGcc; --major)
    names.push_back(fmt::format("g++-{}", major));
  return names;
}

std::optional<std::string> choose_host_compiler(std::span<const std::string> candidates,
                                                std::span<const std::string> available) {
  for (const auto& candidate : candidates) {
    if (std::find(available.begin(), available.end(), candidate) != available.end())
      return candidate;
  }
  return std::nullopt;
}

std::vector<std::string> no_host_compiler_hints(int max_major) {
  return {fmt::format("install GCC {0} or older beside the default one (Debian/Ubuntu: "
                      "`apt-get install g++-{0}`); envkit then finds `g++-{0}` on PATH",
                      max_major),
          "nvcc's `-allow-unsupported-compiler` skips this check, but an untested host compiler "
          "can miscompile or fail to build CUDA code: envkit does not use it"};
}

}  // namespace envkit::smoke
