#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

// `envkit doctor`'s findings (docs/doctor.md): each check of the host and the
// prefix answers with findings, every one with what was found and what to do.
namespace envkit::doctor {

enum class Severity : std::uint8_t { ok, warn, error };

[[nodiscard]] std::string_view to_string(Severity severity);

struct Finding {
  std::string id;  // which check: driver, gpu-arch, libraries, shadowing, toolkit, prefix
  Severity severity = Severity::ok;
  std::string message;
  std::string fix;  // empty for ok findings
};

using Findings = std::vector<Finding>;

[[nodiscard]] inline Finding ok(std::string id, std::string message) {
  return {std::move(id), Severity::ok, std::move(message), {}};
}
[[nodiscard]] inline Finding warn(std::string id, std::string message, std::string fix) {
  return {std::move(id), Severity::warn, std::move(message), std::move(fix)};
}
[[nodiscard]] inline Finding error(std::string id, std::string message, std::string fix) {
  return {std::move(id), Severity::error, std::move(message), std::move(fix)};
}

}  // namespace envkit::doctor
