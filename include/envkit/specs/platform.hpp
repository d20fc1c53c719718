#pragma once

#include <compare>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"

namespace envkit::specs {

// A machine platform a lock can serve. NVIDIA calls linux-aarch64 `linux-sbsa`.
enum class Platform : std::uint8_t { linux_x86_64, linux_aarch64, windows_x86_64 };

inline constexpr Platform kAllPlatforms[] = {Platform::linux_x86_64, Platform::linux_aarch64,
                                             Platform::windows_x86_64};

[[nodiscard]] std::string_view to_string(Platform platform);
// Parses `linux-x86_64`, `linux-aarch64`, `windows-x86_64`; errors suggest the
// closest spelling and know NVIDIA's names (`linux-sbsa`).
[[nodiscard]] Result<Platform> parse_platform(std::string_view text);
// The platform this envkit binary runs on.
[[nodiscard]] Platform host_platform();

// A GPU compute capability such as 8.6 (sm_86).
struct ComputeCapability {
  unsigned major = 0;
  unsigned minor = 0;

  // "8.6"; also accepts "sm_86"; a bare "86" is refused (8.6 or 86.0?).
  [[nodiscard]] static Result<ComputeCapability> parse(std::string_view text);
  [[nodiscard]] std::string to_string() const;  // "8.6"
  friend auto operator<=>(const ComputeCapability&, const ComputeCapability&) = default;
};

// Whether a GPU of `capability` runs code a build ships for `archs`: same
// major, minor at least the code's (sm_60 code runs on sm_61).
[[nodiscard]] bool runs_on(std::span<const ComputeCapability> archs, ComputeCapability capability);

// The GPUs that every one of `lists` runs, in the same form: for each major
// all lists have, the highest of their lowest minors. Empty lists (nothing
// known) are skipped; nullopt when all are.
[[nodiscard]] std::optional<std::vector<ComputeCapability>> common_archs(
    std::span<const std::vector<ComputeCapability>> lists);

}  // namespace envkit::specs
