#include "support/http_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "envkit/sys/process.hpp"
#include "support/skip.hpp"

namespace envkit::test {

namespace fs = std::filesystem;

bool await_server(pid_t pid, int port, int tries) {
  for (int i = 0; i < tries; ++i) {
    if (accepts_connections(port)) return true;
    if (::waitpid(pid, nullptr, WNOHANG) == pid) return false;  // exited: port taken
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return false;
}

namespace {

std::optional<fs::path> nginx_binary() {
  if (auto on_path = sys::find_on_path("nginx")) return on_path;
  if (fs::exists("/usr/sbin/nginx")) return fs::path("/usr/sbin/nginx");
  return std::nullopt;
}

}  // namespace

// A port the kernel just handed out; the server binds it right after.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot find a free port");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

bool accepts_connections(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

namespace {

// One process (master_process off) as the calling user, everything under `dir`.
std::string config(const fs::path& dir, const fs::path& root, int port,
                   const std::optional<Tls>& tls, const Redirects& redirects) {
  std::string locations;
  for (const auto& [path, target] : redirects)
    locations += "    location = " + path + " { return 302 " + target + "; }\n";
  const std::string listen =
      std::to_string(port) +
      (tls ? " ssl http2;\n    ssl_certificate " + tls->certificate.string() +
                 ";\n    ssl_certificate_key " + tls->key.string() + ";\n"
           : ";\n");
  const std::string d = dir.string();
  return "daemon off;\nmaster_process off;\nworker_processes 1;\n"
         "pid " +
         d + "/nginx.pid;\nerror_log " + d +
         "/error.log;\n"
         "events { worker_connections 64; }\n"
         "http {\n  log_format brief '$server_protocol $status $request_uri';\n"
         "  access_log " +
         d +
         "/access.log brief;\n"
         "  client_body_temp_path " +
         d + "/client;\n  proxy_temp_path " + d +
         "/proxy;\n"
         "  fastcgi_temp_path " +
         d + "/fastcgi;\n  uwsgi_temp_path " + d +
         "/uwsgi;\n"
         "  scgi_temp_path " +
         d +
         "/scgi;\n"
         "  types { application/json json; application/vnd.pypi.simple.v1+json pyjson; text/html "
         "html; }\n"
         "  default_type application/octet-stream;\n"
         "  server {\n    listen 127.0.0.1:" +
         listen + "    root " + root.string() +
         ";\n    index index.json index.pyjson index.html;\n" + locations + "  }\n}\n";
}

}  // namespace

bool StaticHttpServer::available() {
  return nginx_binary().has_value();
}

bool nginx_missing(std::source_location where) {
  if (StaticHttpServer::available()) return false;
  skip_test(SkipKind::setup_should_provide, "nginx is not installed (scripts/setup installs it)",
            where);
  return true;
}

bool certificate_missing(const std::optional<Tls>& tls, std::source_location where) {
  if (tls) return false;
  skip_test(SkipKind::setup_should_provide,
            "openssl is missing or failed to make a test certificate (scripts/setup installs it)",
            where);
  return true;
}

std::optional<Tls> make_test_certificate(const fs::path& dir) {
  if (!sys::find_on_path("openssl")) return std::nullopt;
  Tls tls{.certificate = dir / "cert.pem", .key = dir / "key.pem"};
  auto made =
      sys::run_process({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                        tls.key.string(), "-out", tls.certificate.string(), "-days", "1", "-subj",
                        "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"});
  if (!made || made->exit_code != 0) return std::nullopt;
  return tls;
}

StaticHttpServer::StaticHttpServer(fs::path root, std::optional<Tls> tls,
                                   const Redirects& redirects)
    : tls_(tls.has_value()) {
  const auto nginx = nginx_binary();
  if (!nginx) throw std::runtime_error("nginx is not installed (scripts/setup installs it)");
  for (int attempt = 0; attempt < 3 && pid_ < 0; ++attempt) {
    port_ = free_port();
    const fs::path conf =
        work_.write("nginx.conf", config(work_.path(), root, port_, tls, redirects));
    const std::string binary = nginx->string(), prefix = work_.path().string(),
                      conf_path = conf.string();
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::execl(binary.c_str(), binary.c_str(), "-p", prefix.c_str(), "-c", conf_path.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    if (await_server(pid, port_, 100)) pid_ = pid;
  }
  if (pid_ < 0) {
    std::ifstream log(work_.path() / "error.log");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    throw std::runtime_error("nginx did not start: " + text);
  }
}

StaticHttpServer::~StaticHttpServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
}

std::string StaticHttpServer::url(std::string_view path) const {
  return (tls_ ? "https" : "http") + std::string("://127.0.0.1:") + std::to_string(port_) +
         std::string(path);
}

std::string StaticHttpServer::access_log() const {
  std::ifstream log(work_.path() / "access.log");
  return {std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>()};
}

}  // namespace envkit::test
