#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"

// Registry credentials where docker, podman and skopeo keep them: the `auths`
// of a JSON file, keyed by registry host, each `auth` base64 of "user:password".
// Credential helpers (`credsStore`, `credHelpers`) are not run: a host that
// only has one is reported, with what to do instead.
namespace envkit::oci {

struct RegistryCredentials {
  std::string username;
  std::string password;
  std::filesystem::path file;  // where they were found, for messages
};

// The files looked in, in order: $REGISTRY_AUTH_FILE, else
// $XDG_RUNTIME_DIR/containers/auth.json; then $DOCKER_CONFIG/config.json, else
// ~/.docker/config.json. Those that do not exist are listed too.
[[nodiscard]] std::vector<std::filesystem::path> credential_files();

// The credentials for `host` ("HOST[:PORT]") in the first of `files` that has
// them. A file that is not JSON is an error naming it; a host with only a
// credential helper is one too (envkit does not run helpers).
[[nodiscard]] Result<std::optional<RegistryCredentials>> find_credentials(
    std::string_view host, const std::vector<std::filesystem::path>& files);

// RFC 4648 base64, for Basic credentials.
[[nodiscard]] std::string base64_encode(std::string_view bytes);
[[nodiscard]] std::optional<std::string> base64_decode(std::string_view text);

}  // namespace envkit::oci
