#include "envkit/oci/registry_auth.hpp"

#include <fmt/format.h>

#include <cctype>
#include <nlohmann/json.hpp>

#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"

namespace envkit::oci {

namespace fs = std::filesystem;

namespace {

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (auto& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string query_escaped(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += c;
    } else {
      out += fmt::format("%{:02X}", u);
    }
  }
  return out;
}

std::string basic_header(const RegistryCredentials& credentials) {
  return "Authorization: Basic " + base64_encode(credentials.username + ":" + credentials.password);
}

std::string files_read(const std::vector<fs::path>& files) {
  std::vector<std::string> names;
  for (const auto& file : files)
    names.push_back(file.string());
  return names.empty() ? "none (no HOME)" : text::join(names, ", ");
}

}  // namespace

std::optional<Challenge> parse_challenge(std::string_view header) {
  header = text::trim(header);
  const auto space = header.find(' ');
  Challenge challenge{.scheme = lowercase(header.substr(0, space))};
  if (challenge.scheme.empty()) return std::nullopt;
  if (space == std::string_view::npos) return challenge;
  std::string_view rest = header.substr(space + 1);
  while (!rest.empty()) {
    rest = text::trim(rest);
    const auto equals = rest.find('=');
    if (equals == std::string_view::npos) break;
    const auto name = lowercase(text::trim(rest.substr(0, equals)));
    rest.remove_prefix(equals + 1);
    std::string value;
    if (rest.starts_with('"')) {
      std::size_t i = 1;
      for (; i < rest.size() && rest[i] != '"'; ++i) {
        if (rest[i] == '\\' && i + 1 < rest.size()) ++i;
        value += rest[i];
      }
      rest.remove_prefix(std::min(rest.size(), i + 1));
    } else {
      const auto end = rest.find(',');
      value = std::string(text::trim(rest.substr(0, end)));
      rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
    }
    challenge.params[name] = std::move(value);
    rest = text::trim(rest);
    if (rest.starts_with(',')) rest.remove_prefix(1);
  }
  return challenge;
}

std::string registry_error(std::string_view body) {
  const auto json = nlohmann::json::parse(body, nullptr, false);
  if (json.is_discarded() || !json.is_object()) return {};
  const auto errors = json.find("errors");
  if (errors == json.end() || !errors->is_array() || errors->empty()) return {};
  const auto& first = errors->front();
  if (!first.is_object()) return {};
  const auto code = first.value("code", std::string());
  const auto message = first.value("message", std::string());
  if (code.empty()) return message;
  return message.empty() ? code : code + ": " + message;
}

RegistryAuth::RegistryAuth(std::vector<net::RegistryRepo> registries, std::string actions,
                           std::vector<fs::path> files, net::FetchOptions fetch_options)
    : actions_(std::move(actions)),
      files_(std::move(files)),
      fetch_options_(std::move(fetch_options)) {
  for (auto& repo : registries)
    registries_.push_back({.repo = std::move(repo)});
}

RegistryAuth::Registry* RegistryAuth::registry_of(const std::string& url) {
  for (auto& registry : registries_) {
    if (url.starts_with(registry.repo.api_url(""))) return &registry;
  }
  return nullptr;
}

std::vector<std::string> RegistryAuth::headers_for(const std::string& url) {
  std::lock_guard lock(mutex_);
  const auto* registry = registry_of(url);
  if (!registry || registry->header.empty()) return {};
  return {registry->header};
}

const std::optional<RegistryCredentials>& RegistryAuth::credentials_locked(Registry& registry) {
  if (!registry.credentials) {
    auto found = find_credentials(registry.repo.host, files_);
    if (found) {
      registry.credentials = *std::move(found);
    } else {
      registry.failure = found.error().message();
      registry.credentials = std::optional<RegistryCredentials>();
    }
  }
  return *registry.credentials;
}

bool RegistryAuth::challenged(const std::string& url, const std::string& www_authenticate,
                              const std::vector<std::string>& sent) {
  std::lock_guard lock(mutex_);
  auto* registry = registry_of(url);
  if (!registry) return false;
  // Another request got new credentials since this one left: use those.
  const bool sent_current = registry->header.empty() ? sent.empty()
                                                     : std::find(sent.begin(), sent.end(),
                                                                 registry->header) != sent.end();
  if (!sent_current) return true;
  const auto challenge = parse_challenge(www_authenticate);
  if (!challenge) {
    registry->failure = "its 401 names no way to authenticate (no WWW-Authenticate)";
    return false;
  }
  return answer_locked(*registry, *challenge);
}

bool RegistryAuth::answer_locked(Registry& registry, const Challenge& challenge) {
  const auto& credentials = credentials_locked(registry);
  if (challenge.scheme == "basic") {
    if (!credentials) {
      if (registry.failure.empty()) {
        registry.failure =
            fmt::format("no credentials for {} in {}", registry.repo.host, files_read(files_));
      }
      return false;
    }
    const auto header = basic_header(*credentials);
    if (header == registry.header) {
      registry.failure =
          fmt::format("it refused the credentials from {}", credentials->file.string());
      return false;
    }
    registry.header = header;
    return true;
  }
  if (challenge.scheme != "bearer") {
    registry.failure = fmt::format("it asks for `{}` authentication, which envkit does not speak",
                                   challenge.scheme);
    return false;
  }
  const auto realm = challenge.params.find("realm");
  if (realm == challenge.params.end() || realm->second.empty()) {
    registry.failure = "its Bearer challenge names no realm";
    return false;
  }
  std::string token_url = realm->second;
  token_url += token_url.find('?') == std::string::npos ? '?' : '&';
  if (const auto service = challenge.params.find("service"); service != challenge.params.end())
    token_url += "service=" + query_escaped(service->second) + "&";
  token_url +=
      "scope=" + query_escaped(fmt::format("repository:{}:{}", registry.repo.repository, actions_));
  auto options = fetch_options_;
  options.headers.push_back("Accept: application/json");
  if (credentials) options.headers.push_back(basic_header(*credentials));
  auto response = net::fetch(token_url, options);
  if (!response) {
    registry.failure = "its token service failed: " + response.error().message();
    return false;
  }
  if (response->status != 200) {
    const auto said = registry_error(response->body);
    registry.failure =
        fmt::format("its token service `{}` answered HTTP {}{}{}", url::redacted(realm->second),
                    response->status, said.empty() ? "" : ": ", said);
    if (credentials)
      registry.failure += fmt::format(" for the credentials from {}", credentials->file.string());
    return false;
  }
  const auto json = nlohmann::json::parse(response->body, nullptr, false);
  std::string token;
  if (json.is_object()) {
    token = json.value("token", std::string());
    if (token.empty()) token = json.value("access_token", std::string());
  }
  if (token.empty()) {
    registry.failure =
        fmt::format("its token service `{}` answered no token", url::redacted(realm->second));
    return false;
  }
  const auto header = "Authorization: Bearer " + token;
  if (header == registry.header) {
    registry.failure = "it refused the token its own token service gave";
    return false;
  }
  registry.header = header;
  return true;
}

std::string RegistryAuth::explain(const std::string& url, long status, std::string_view body) {
  std::lock_guard lock(mutex_);
  const auto* registry = registry_of(url);
  if (!registry) return {};
  std::vector<std::string> parts;
  if (auto said = registry_error(body); !said.empty()) parts.push_back(said);
  if (status == 401 || status == 403) {
    if (!registry->failure.empty()) parts.push_back(registry->failure);
    parts.push_back(fmt::format("run `docker login {}` (envkit reads {})", registry->repo.host,
                                files_read(files_)));
  }
  return text::join(parts, "; ");
}

Result<net::Response> RegistryAuth::send(const std::string& url, net::FetchOptions options) {
  const auto base_headers = options.headers;
  for (int round = 0;; ++round) {
    auto sent = headers_for(url);
    options.headers = base_headers;
    options.headers.insert(options.headers.end(), sent.begin(), sent.end());
    auto response = net::fetch(url, options);
    if (!response || response->status != 401 || round > 0) return response;
    if (!challenged(url, response->header("WWW-Authenticate").value_or(""), sent)) return response;
  }
}

}  // namespace envkit::oci
