#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

#include "support/temp_dir.hpp"

namespace envkit::test {

// A real nginx (Debian's) serving `root` on a free 127.0.0.1 port for the
// life of the object. Directories answer with their index.json or index.html
// (`.json` as application/json, `.html` as text/html), as a package index does.
// Throws std::runtime_error when nginx is missing or does not start.
class StaticHttpServer {
 public:
  explicit StaticHttpServer(std::filesystem::path root);
  ~StaticHttpServer();
  StaticHttpServer(const StaticHttpServer&) = delete;
  StaticHttpServer& operator=(const StaticHttpServer&) = delete;

  [[nodiscard]] int port() const { return port_; }
  // "http://127.0.0.1:PORT" + path (path starts with '/').
  [[nodiscard]] std::string url(std::string_view path = "/") const;

  // Whether nginx is installed here (tests skip with a reason when it is not).
  [[nodiscard]] static bool available();

 private:
  TempDir work_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace envkit::test
