#pragma once

// Tables of an enum's values and the names files spell them with, read both ways.
#include <array>
#include <optional>
#include <string_view>
#include <utility>

namespace envkit::specs::detail {

template <class Enum, std::size_t N>
using EnumNames = std::array<std::pair<Enum, std::string_view>, N>;

// "" for a value the table lacks.
template <class Enum, std::size_t N>
std::string_view name_of(const EnumNames<Enum, N>& table, Enum e) {
  for (const auto& [value, name] : table) {
    if (value == e) return name;
  }
  return "";
}

template <class Enum, std::size_t N>
std::optional<Enum> value_of(const EnumNames<Enum, N>& table, std::string_view text) {
  for (const auto& [value, name] : table) {
    if (name == text) return value;
  }
  return std::nullopt;
}

}  // namespace envkit::specs::detail
