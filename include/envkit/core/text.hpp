#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace envkit::text {

[[nodiscard]] std::string_view trim(std::string_view s);
[[nodiscard]] std::string to_lower(std::string_view s);
[[nodiscard]] bool iequals(std::string_view a, std::string_view b);
[[nodiscard]] std::vector<std::string_view> split(std::string_view s, char separator);
[[nodiscard]] std::string join(std::span<const std::string> parts, std::string_view separator);
[[nodiscard]] bool starts_with_icase(std::string_view s, std::string_view prefix);

// Optimal-string-alignment edit distance (Levenshtein plus adjacent swaps).
[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);

// The closest candidate to `word` when it is close enough to be a likely typo
// (case-insensitive; at most a third of the word's letters wrong).
[[nodiscard]] std::optional<std::string> did_you_mean(std::string_view word,
                                                      std::span<const std::string_view> candidates);

// `name` in backticks, the way envkit quotes names in messages.
[[nodiscard]] std::string quoted(std::string_view name);

// Rows as aligned text columns: each column as wide as its widest cell, two
// spaces between, the last cell unpadded; one line per row, each ending in '\n'.
[[nodiscard]] std::string columns(const std::vector<std::vector<std::string>>& rows);

}  // namespace envkit::text
