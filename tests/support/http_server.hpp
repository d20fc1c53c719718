#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <optional>
#include <source_location>
#include <string>

#include "support/temp_dir.hpp"

namespace envkit::test {

// A real nginx (Debian's) serving `root` on a free 127.0.0.1 port for the
// life of the object. Directories answer with their index.json, index.pyjson or
// index.html (`.json` as application/json, `.pyjson` as PEP 691's
// application/vnd.pypi.simple.v1+json, `.html` as text/html), as a package index does.
// Throws std::runtime_error when nginx is missing or does not start.
// With `Tls`, it serves HTTPS with HTTP/2 (and HTTP/1.1) instead.
struct Tls {
  std::filesystem::path certificate;  // PEM, for 127.0.0.1
  std::filesystem::path key;
};

// A free TCP port on 127.0.0.1 (a server started next binds it), and
// whether something accepts connections on one.
int free_port();
bool accepts_connections(int port);
// Waits up to `tries` × 20 ms for the server just forked as `pid` to accept
// connections on `port`. False when it exited first (the port was taken:
// try another) or never answered; it is then killed and reaped.
bool await_server(pid_t pid, int port, int tries);

// A self-signed certificate for 127.0.0.1 made in `dir` with the openssl
// command; nullopt where there is no openssl.
std::optional<Tls> make_test_certificate(const std::filesystem::path& dir);

// Paths answered with a 302 to a URL: "/a.tar.xz" -> "http://elsewhere/a.tar.xz".
using Redirects = std::map<std::string, std::string>;

class StaticHttpServer {
 public:
  explicit StaticHttpServer(std::filesystem::path root, std::optional<Tls> tls = std::nullopt,
                            const Redirects& redirects = {});
  ~StaticHttpServer();
  StaticHttpServer(const StaticHttpServer&) = delete;
  StaticHttpServer& operator=(const StaticHttpServer&) = delete;

  [[nodiscard]] int port() const { return port_; }
  // "http://127.0.0.1:PORT" (or https) + path (path starts with '/').
  [[nodiscard]] std::string url(std::string_view path = "/") const;
  // One line per request: "<protocol> <status> <uri>", e.g. "HTTP/2.0 200 /a.tar.xz".
  [[nodiscard]] std::string access_log() const;

  // Whether nginx is installed here (tests skip with nginx_missing() when it is not).
  [[nodiscard]] static bool available();

 private:
  TempDir work_;
  bool tls_ = false;
  int port_ = 0;
  pid_t pid_ = -1;
};

// Whether nginx is missing here; records the skip (scripts/setup installs nginx), so the
// test that serves files with it returns.
bool nginx_missing(std::source_location where = std::source_location::current());

// Whether openssl could not make a test certificate (nullopt from
// make_test_certificate); records the skip (scripts/setup installs openssl).
bool certificate_missing(const std::optional<Tls>& tls,
                         std::source_location where = std::source_location::current());

}  // namespace envkit::test
