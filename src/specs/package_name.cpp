#include "envkit/specs/package_name.hpp"

#include <algorithm>

#include "envkit/core/text.hpp"

namespace envkit::specs {

std::string canonical_package_name(std::string_view name) {
  std::string out;
  bool in_separator_run = false;
  for (char c : text::trim(name)) {
    if (c == '-' || c == '_' || c == '.') {
      if (!in_separator_run) out += '-';
      in_separator_run = true;
      continue;
    }
    in_separator_run = false;
    out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  return out;
}

std::optional<std::string> known_package(std::string_view name) {
  std::string canonical = canonical_package_name(name);
  if (canonical == "pytorch") canonical = "torch";
  const auto* end = std::end(kKnownPackages);
  if (std::find(std::begin(kKnownPackages), end, canonical) == end) return std::nullopt;
  return canonical;
}

bool is_framework(std::string_view canonical_name) {
  return std::find(std::begin(kFrameworks), std::end(kFrameworks), canonical_name) !=
         std::end(kFrameworks);
}

}  // namespace envkit::specs
