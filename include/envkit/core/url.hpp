#pragma once

#include <cstddef>
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

}  // namespace envkit::url
