#pragma once

#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/net/fetch.hpp"
#include "envkit/net/registry_url.hpp"
#include "envkit/net/transport.hpp"
#include "envkit/oci/registry_credentials.hpp"

// The registry side of a request: the token flow of the distribution spec
// (docker's), for a Transport's blob downloads and for the pusher's requests.
// A 401 names what it wants in WWW-Authenticate:
//   Bearer realm="https://auth/token",service="registry",scope="repository:r:pull"
// -> GET realm?service=...&scope=repository:REPO:ACTIONS (with Basic
// credentials when known) -> {"token" | "access_token": T} -> "Authorization:
// Bearer T" on the requests; `Basic realm=...` takes the credentials as they are.
// Tokens and credentials never appear in a message.
namespace envkit::oci {

// A WWW-Authenticate challenge: "Bearer" (any case) and its parameters.
struct Challenge {
  std::string scheme;
  std::map<std::string, std::string> params;  // names in lowercase
};
[[nodiscard]] std::optional<Challenge> parse_challenge(std::string_view header);

// "CODE: message" of a registry's error body ({"errors": [{"code", "message"}]});
// empty when the body is not one.
[[nodiscard]] std::string registry_error(std::string_view body);

class RegistryAuth final : public net::RequestAuthorizer {
 public:
  // `actions`: "pull" for installs, "pull,push" for a push. Credentials are
  // looked up (find_credentials) in `files` when a registry first asks.
  RegistryAuth(std::vector<net::RegistryRepo> registries, std::string actions,
               std::vector<std::filesystem::path> files, net::FetchOptions fetch_options = {});

  std::vector<std::string> headers_for(const std::string& url) override;
  bool challenged(const std::string& url, const std::string& www_authenticate,
                  const std::vector<std::string>& sent) override;
  std::string explain(const std::string& url, long status, std::string_view body) override;

  // One request of the pusher's to a registry: sent with the current
  // credentials, and once more after a 401 they could answer.
  [[nodiscard]] Result<net::Response> send(const std::string& url, net::FetchOptions options);

 private:
  struct Registry {
    net::RegistryRepo repo;
    std::string header;                                             // "Authorization: ..." or empty
    std::optional<std::optional<RegistryCredentials>> credentials;  // looked up once
    std::string failure;  // why the last token or credentials lookup failed
  };
  Registry* registry_of(const std::string& url);
  const std::optional<RegistryCredentials>& credentials_locked(Registry& registry);
  bool answer_locked(Registry& registry, const Challenge& challenge);

  std::mutex mutex_;
  std::vector<Registry> registries_;
  const std::string actions_;
  const std::vector<std::filesystem::path> files_;
  const net::FetchOptions fetch_options_;
};

}  // namespace envkit::oci
