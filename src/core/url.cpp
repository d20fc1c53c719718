#include "envkit/core/url.hpp"

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

}  // namespace envkit::url
