#pragma once

#include <string>
#include <string_view>

#include "envkit/core/result.hpp"

// An OCI registry repository named as a mirror: `oci://HOST[:PORT]/REPO`.
// Registries speak https, as docker and skopeo assume, except on this machine
// (localhost, 127.0.0.0/8, ::1), where docker treats a registry as an
// "insecure registry" by default: there `oci://` is plain http. `oci+https://`
// and `oci+http://` say the scheme outright (a TLS registry behind a loopback
// port-forward; a plain http one on the LAN, warned about as any plain http host).
namespace envkit::net {

struct RegistryRepo {
  std::string base;        // "https://HOST[:PORT]": where /v2/ is
  std::string host;        // "HOST[:PORT]", as ~/.docker/config.json keys it
  std::string repository;  // "team/envkit": lowercase path components
  std::string spelled;     // as given, for messages

  // BASE/v2/REPO/blobs/sha256:HEX: where the blob whose digest is `sha256` lives.
  [[nodiscard]] std::string blob_url(std::string_view sha256) const;
  // BASE/v2/REPO/ + rest ("blobs/uploads/", "manifests/TAG").
  [[nodiscard]] std::string api_url(std::string_view rest) const;
};

// Whether a mirror is a registry (oci://, oci+http://, oci+https://).
[[nodiscard]] bool is_registry_mirror(std::string_view mirror);

// `oci://HOST[:PORT]/REPO` (or oci+http/oci+https); with `bare_allowed`, also
// `HOST[:PORT]/REPO`, as docker and `envkit mirror --oci-push` write it. The
// repository must be what the distribution spec allows: lowercase
// [a-z0-9] components joined by `.`, `_`, `__`, `-` and `/`.
[[nodiscard]] Result<RegistryRepo> parse_registry(std::string_view text, bool bare_allowed = false);

}  // namespace envkit::net
