#include "envkit/specs/platform.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>

#include "envkit/core/text.hpp"

namespace envkit::specs {

std::string_view to_string(Platform platform) {
  switch (platform) {
    case Platform::linux_x86_64:
      return "linux-x86_64";
    case Platform::linux_aarch64:
      return "linux-aarch64";
    case Platform::windows_x86_64:
      return "windows-x86_64";
  }
  return "linux-x86_64";
}

Result<Platform> parse_platform(std::string_view text) {
  const std::string_view name = text::trim(text);
  for (auto platform : kAllPlatforms) {
    if (name == to_string(platform)) return platform;
  }
  auto error = Error::input(fmt::format("unknown platform {}", text::quoted(name)));
  // NVIDIA's redistrib manifests spell these differently.
  if (name == "linux-sbsa") {
    return error.hint("NVIDIA's `linux-sbsa` is envkit's `linux-aarch64`");
  }
  if (name == "windows-amd64" || name == "win-x64" || name == "win64") {
    return error.hint("did you mean `windows-x86_64`?");
  }
  constexpr std::string_view kNames[] = {"linux-x86_64", "linux-aarch64", "windows-x86_64"};
  if (auto guess = text::did_you_mean(name, kNames)) {
    return error.hint(fmt::format("did you mean `{}`?", *guess));
  }
  return error.hint("envkit knows `linux-x86_64`, `linux-aarch64` and `windows-x86_64`");
}

Platform host_platform() {
#if defined(_WIN32)
  return Platform::windows_x86_64;
#elif defined(__aarch64__)
  return Platform::linux_aarch64;
#else
  return Platform::linux_x86_64;
#endif
}

Result<ComputeCapability> ComputeCapability::parse(std::string_view text) {
  std::string_view s = text::trim(text);
  const auto invalid = [&] {
    return Error::input(fmt::format("{} is not a GPU compute capability", text::quoted(s)))
        .hint("write major.minor, e.g. `8.6` (or `sm_86`)");
  };
  unsigned major = 0, minor = 0;
  if (s.starts_with("sm_") || s.starts_with("compute_")) {
    // sm_86 -> 8.6, sm_100 -> 10.0, sm_90a -> 9.0 (the arch-specific suffix is not a capability)
    s.remove_prefix(s.find('_') + 1);
    if (!s.empty() && (s.back() == 'a' || s.back() == 'f')) s.remove_suffix(1);
    if (s.size() < 2) return invalid();
    const auto major_text = s.substr(0, s.size() - 1);
    auto [p1, e1] =
        std::from_chars(major_text.data(), major_text.data() + major_text.size(), major);
    auto [p2, e2] = std::from_chars(s.data() + s.size() - 1, s.data() + s.size(), minor);
    if (e1 != std::errc() || e2 != std::errc() || p1 != major_text.data() + major_text.size() ||
        p2 != s.data() + s.size()) {
      return invalid();
    }
    return ComputeCapability{major, minor};
  }
  const auto dot = s.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 >= s.size()) return invalid();
  auto [p1, e1] = std::from_chars(s.data(), s.data() + dot, major);
  auto [p2, e2] = std::from_chars(s.data() + dot + 1, s.data() + s.size(), minor);
  if (e1 != std::errc() || e2 != std::errc() || p1 != s.data() + dot || p2 != s.data() + s.size()) {
    return invalid();
  }
  return ComputeCapability{major, minor};
}

std::string ComputeCapability::to_string() const {
  return fmt::format("{}.{}", major, minor);
}

bool runs_on(std::span<const ComputeCapability> archs, ComputeCapability capability) {
  return std::any_of(archs.begin(), archs.end(), [&](const ComputeCapability& code) {
    return code.major == capability.major && code.minor <= capability.minor;
  });
}

std::optional<std::vector<ComputeCapability>> common_archs(
    std::span<const std::vector<ComputeCapability>> lists) {
  std::optional<std::map<unsigned, unsigned>> common;  // major -> lowest minor
  for (const auto& list : lists) {
    if (list.empty()) continue;
    std::map<unsigned, unsigned> lowest;
    for (const auto& code : list) {
      const auto [it, added] = lowest.emplace(code.major, code.minor);
      if (!added) it->second = std::min(it->second, code.minor);
    }
    if (!common) {
      common = std::move(lowest);
      continue;
    }
    std::map<unsigned, unsigned> both;
    for (const auto& [major, minor] : *common) {
      if (const auto it = lowest.find(major); it != lowest.end())
        both.emplace(major, std::max(minor, it->second));
    }
    common = std::move(both);
  }
  if (!common) return std::nullopt;
  std::vector<ComputeCapability> out;
  for (const auto& [major, minor] : *common)
    out.push_back({major, minor});
  return out;
}

}  // namespace envkit::specs
