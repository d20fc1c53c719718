#include "envkit/net/registry_url.hpp"

#include <fmt/format.h>

#include <array>

#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/net/transport.hpp"

namespace envkit::net {

namespace {

struct SchemeRule {
  std::string_view prefix;
  std::string_view forced;  // "" = https, but http on loopback
};
constexpr std::array kSchemes{SchemeRule{"oci+https://", "https"},
                              SchemeRule{"oci+http://", "http"}, SchemeRule{"oci://", ""}};

bool is_lower_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// A path component of the distribution spec: [a-z0-9]+ joined by `.`, `_`, `__` or `-`s.
bool valid_component(std::string_view part) {
  if (part.empty() || !is_lower_alnum(part.front()) || !is_lower_alnum(part.back())) return false;
  for (std::size_t i = 0; i < part.size(); ++i) {
    const char c = part[i];
    if (is_lower_alnum(c) || c == '-') continue;
    if (c != '.' && c != '_') return false;
    const bool double_underscore = c == '_' && i + 1 < part.size() && part[i + 1] == '_';
    if (double_underscore) ++i;
    if (!is_lower_alnum(part[i + 1])) return false;
  }
  return true;
}

Error bad(std::string_view text, std::string_view why) {
  return Error::input(fmt::format("{} is not a registry repository: {}",
                                  text::quoted(url::redacted(text)), why))
      .hint("write oci://HOST[:PORT]/REPO, e.g. oci://registry.lan:5000/team/envkit");
}

}  // namespace

std::string RegistryRepo::blob_url(std::string_view sha256) const {
  return api_url(fmt::format("blobs/sha256:{}", sha256));
}

std::string RegistryRepo::api_url(std::string_view rest) const {
  return fmt::format("{}/v2/{}/{}", base, repository, rest);
}

bool is_registry_mirror(std::string_view mirror) {
  for (const auto& rule : kSchemes) {
    if (text::starts_with_icase(mirror, rule.prefix)) return true;
  }
  return false;
}

Result<RegistryRepo> parse_registry(std::string_view text, bool bare_allowed) {
  std::string_view rest = text;
  std::string_view forced;
  bool found = false;
  for (const auto& rule : kSchemes) {
    if (text::starts_with_icase(rest, rule.prefix)) {
      rest.remove_prefix(rule.prefix.size());
      forced = rule.forced;
      found = true;
      break;
    }
  }
  if (!found && (!bare_allowed || rest.find("://") != std::string_view::npos))
    return bad(text, "it does not start with oci://");
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0) return bad(text, "it names no repository");
  const auto host = rest.substr(0, slash);
  if (host.find('@') != std::string_view::npos) {
    return bad(text,
               "credentials do not go in the name; envkit reads them from ~/.docker/config.json");
  }
  auto repository = rest.substr(slash + 1);
  while (repository.ends_with('/'))
    repository.remove_suffix(1);
  if (repository.empty()) return bad(text, "it names no repository");
  for (const auto part : text::split(repository, '/')) {
    if (!valid_component(part)) {
      return bad(text, fmt::format("`{}` is not a repository name component (lowercase letters, "
                                   "digits, and `.`, `_`, `-` between them)",
                                   part));
    }
  }
  std::string scheme(forced);
  if (scheme.empty()) {
    scheme = is_plain_http_remote("http://" + std::string(host)) ? "https" : "http";
  }
  return RegistryRepo{.base = scheme + "://" + std::string(host),
                      .host = std::string(host),
                      .repository = std::string(repository),
                      .spelled = std::string(text)};
}

}  // namespace envkit::net
