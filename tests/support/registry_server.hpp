#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "support/temp_dir.hpp"

namespace envkit::test {

// A real OCI registry (Debian's docker-registry: distribution 2.8) on a free
// 127.0.0.1 port for the life of the object, storing blobs in a temporary
// folder. With `user`/`password`, it asks for them (htpasswd, bcrypt, made
// with apache2-utils' htpasswd), as a site's registry behind `docker login` does.
// Throws std::runtime_error when it does not start.
struct RegistryLogin {
  std::string user;
  std::string password;
};

class RegistryServer {
 public:
  explicit RegistryServer(std::optional<RegistryLogin> login = std::nullopt);
  ~RegistryServer();
  RegistryServer(const RegistryServer&) = delete;
  RegistryServer& operator=(const RegistryServer&) = delete;

  [[nodiscard]] int port() const { return port_; }
  // "127.0.0.1:PORT"
  [[nodiscard]] std::string host() const;
  // What the registry wrote: its access log lines ("HEAD /v2/... 200") among the rest.
  [[nodiscard]] std::string log() const;
  // The requests of the log with `method` whose path contains `part`.
  [[nodiscard]] int requests(const std::string& method, const std::string& part) const;

  // Whether docker-registry (and htpasswd, for logins) is installed here; the
  // tests skip with a reason when not.
  [[nodiscard]] static bool available(bool with_login = false);

 private:
  TempDir work_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace envkit::test
