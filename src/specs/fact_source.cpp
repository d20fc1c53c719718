#include "envkit/specs/fact_source.hpp"

#include <array>
#include <utility>

namespace envkit::specs {

namespace {

constexpr std::array<std::pair<FactSource, std::string_view>, 4> kNames = {{
    {FactSource::manifest, "manifest"},
    {FactSource::override_variable, "override"},
    {FactSource::host, "host"},
    {FactSource::none, "none"},
}};

}  // namespace

std::string_view to_string(FactSource source) {
  for (const auto& [value, name] : kNames) {
    if (value == source) return name;
  }
  return "none";
}

std::optional<FactSource> parse_fact_source(std::string_view text) {
  for (const auto& [value, name] : kNames) {
    if (name == text) return value;
  }
  return std::nullopt;
}

}  // namespace envkit::specs
