#include "support/registry_server.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "envkit/sys/process.hpp"
#include "support/http_server.hpp"

namespace envkit::test {

namespace fs = std::filesystem;

namespace {

std::string registry_config(const fs::path& dir, int port, bool login) {
  std::string text =
      "version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: false\n"
      "storage:\n  filesystem:\n    rootdirectory: " +
      (dir / "data").string() +
      "\n  delete:\n    enabled: true\n"
      "http:\n  addr: 127.0.0.1:" +
      std::to_string(port) + "\n";
  if (login) {
    text += "auth:\n  htpasswd:\n    realm: envkit-test\n    path: " + (dir / "htpasswd").string() +
            "\n";
  }
  return text;
}

}  // namespace

bool RegistryServer::available(bool with_login) {
  return sys::find_on_path("docker-registry").has_value() &&
         (!with_login || sys::find_on_path("htpasswd").has_value());
}

RegistryServer::RegistryServer(std::optional<RegistryLogin> login) {
  const auto binary = sys::find_on_path("docker-registry");
  if (!binary) throw std::runtime_error("docker-registry is not installed (scripts/setup)");
  if (login) {
    auto made = sys::run_process({"htpasswd", "-Bbn", login->user, login->password});
    if (!made || made->exit_code != 0) throw std::runtime_error("htpasswd -Bbn failed");
    work_.write("htpasswd", made->out);
  }
  const std::string program = binary->string();
  const std::string log_path = (work_.path() / "registry.log").string();
  for (int attempt = 0; attempt < 3 && pid_ < 0; ++attempt) {
    port_ = free_port();
    const auto config =
        work_.write("config.yml", registry_config(work_.path(), port_, login.has_value()));
    const std::string config_path = config.string();
    const pid_t pid = ::fork();
    if (pid == 0) {
      const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(log, 1);
      ::dup2(log, 2);
      ::execl(program.c_str(), program.c_str(), "serve", config_path.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    if (await_server(pid, port_, 250)) pid_ = pid;
  }
  if (pid_ < 0) throw std::runtime_error("docker-registry did not start: " + log());
}

RegistryServer::~RegistryServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
}

std::string RegistryServer::host() const {
  return "127.0.0.1:" + std::to_string(port_);
}

std::string RegistryServer::log() const {
  std::ifstream in(work_.path() / "registry.log");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int RegistryServer::requests(const std::string& method, const std::string& part) const {
  std::istringstream lines(log());
  int count = 0;
  for (std::string line; std::getline(lines, line);) {
    // The access log: ... "METHOD /v2/... HTTP/1.1" STATUS ...
    const auto at = line.find("\"" + method + " /v2/");
    if (at != std::string::npos && line.find(part, at) != std::string::npos) ++count;
  }
  return count;
}

}  // namespace envkit::test
