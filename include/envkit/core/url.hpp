#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

// Credentials in URLs never reach logs, errors, lock files or the recipe database.
namespace envkit::url {

// Where the authority (`user:pw@host:port`) starts and ends; npos / size when absent.
[[nodiscard]] std::size_t authority_begin(std::string_view url);
[[nodiscard]] std::size_t authority_end(std::string_view url, std::size_t begin);

// `url` with its user info shown as `***@`: for messages.
[[nodiscard]] std::string redacted(std::string_view url);
// `url` without its user info: for what is written to disk.
[[nodiscard]] std::string without_credentials(std::string_view url);

// `%2B` -> `+`; nullopt for a malformed escape.
[[nodiscard]] std::optional<std::string> percent_decoded(std::string_view text);
// The last path segment, decoded: `.../torch-2.4.0%2Bcu121-cp311-...whl` ->
// `torch-2.4.0+cu121-...`.
[[nodiscard]] std::string file_name(std::string_view url);

}  // namespace envkit::url
