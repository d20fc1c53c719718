#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/net/fetch.hpp"
#include "envkit/net/registry_url.hpp"
#include "envkit/net/transport.hpp"
#include "envkit/oci/registry_auth.hpp"

// `envkit mirror --oci-push HOST/REPO`: every artifact of a lock (all its
// platforms, as `mirror --out` takes them) as a blob of the repository whose
// digest is the artifact's sha256, which is where `install --mirror
// oci://HOST/REPO` asks for it. A blob already there is not sent again; one
// that is not is downloaded (mirrors first, verified against the lock) into
// `work` and uploaded from that file (POST, then one PUT streamed from disk).
// Last, one OCI image manifest lists every blob, tagged envkit-lock-<16 hex of
// the lock's sha256>, so that the registry's garbage collection keeps them.
// A push that fails leaves no manifest.
namespace envkit::oci {

inline constexpr std::string_view kLockArtifactType = "application/vnd.envkit.lock.v1+json";
inline constexpr std::string_view kLockAnnotation = "dev.envkit.lock.sha256";

struct PushOptions {
  net::RegistryRepo registry;
  std::shared_ptr<RegistryAuth> auth;   // with "pull,push" for `registry`
  net::Transport* transport = nullptr;  // downloads the blobs the registry lacks
  std::vector<std::string> mirrors;     // asked first, as install asks them
  std::filesystem::path work;           // downloads in flight (made, emptied)
  net::FetchOptions fetch;              // the CA, timeouts
  int jobs = 4;
  std::function<void(const std::string&)> note;
};

struct PushReport {
  std::size_t uploaded = 0;
  std::uint64_t uploaded_bytes = 0;
  std::size_t present = 0;  // there already
  std::uint64_t present_bytes = 0;
  std::string tag;              // envkit-lock-<16 hex>
  std::string manifest_digest;  // sha256:...
};

// The tag of the manifest for a lock whose file has sha256 `lock_sha256`.
[[nodiscard]] std::string lock_tag(std::string_view lock_sha256);

[[nodiscard]] Result<PushReport> push(const lock::Lockfile& lockfile, std::string_view lock_sha256,
                                      const PushOptions& options);

}  // namespace envkit::oci
