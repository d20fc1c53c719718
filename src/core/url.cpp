#include "envkit/core/url.hpp"

#include <optional>

namespace envkit::url {

namespace {
std::string replace_userinfo(std::string_view url, std::string_view replacement) {
  const auto begin = authority_begin(url);
  if (begin == std::string_view::npos) return std::string(url);
  const auto end = authority_end(url, begin);
  const auto at = url.substr(begin, end - begin).rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  return std::string(url.substr(0, begin)) + std::string(replacement) +
         std::string(url.substr(begin + at + 1));
}
}  // namespace

std::size_t authority_begin(std::string_view url) {
  const auto scheme_end = url.find("://");
  return scheme_end == std::string_view::npos ? std::string_view::npos : scheme_end + 3;
}

std::size_t authority_end(std::string_view url, std::size_t begin) {
  const auto end = url.find_first_of("/?#", begin);
  return end == std::string_view::npos ? url.size() : end;
}

std::string redacted(std::string_view url) {
  return replace_userinfo(url, "***@");
}
std::string without_credentials(std::string_view url) {
  return replace_userinfo(url, "");
}

namespace {

std::optional<int> hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return std::nullopt;
}

}  // namespace

std::optional<std::string> percent_decoded(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const auto high = hex_digit(text[i + 1]);
    const auto low = hex_digit(text[i + 2]);
    if (!high || !low) return std::nullopt;
    out += static_cast<char>(*high * 16 + *low);
    i += 2;
  }
  return out;
}

std::string file_name(std::string_view url) {
  const auto path = url.substr(0, url.find_first_of("?#"));
  const auto last = path.substr(path.rfind('/') + 1);
  return percent_decoded(last).value_or(std::string(last));
}

}  // namespace envkit::url
