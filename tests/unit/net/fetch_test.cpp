#include "envkit/net/fetch.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/temp_dir.hpp"

using envkit::net::fetch;
using envkit::net::fetch_text;
using envkit::net::FetchOptions;

namespace {

struct Route {
  int status = 200;
  std::string body;
  std::string content_type = "text/plain";
  int failures_first = 0;  // answer 503 this many times before the real answer
};

// A tiny HTTP/1.1 server on 127.0.0.1 in a thread: one request per connection,
// answers from a fixed table, remembers the request heads it saw.
class TestServer {
 public:
  explicit TestServer(std::map<std::string, Route> routes) : routes_(std::move(routes)) {
    // A proxy from the environment must not stand between the test and 127.0.0.1.
    ::setenv("no_proxy", "127.0.0.1", 1);
    ::setenv("NO_PROXY", "127.0.0.1", 1);
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;  // any free port
    auto* generic = reinterpret_cast<sockaddr*>(&address);
    REQUIRE(::bind(listener_, generic, sizeof address) == 0);
    REQUIRE(::listen(listener_, 16) == 0);
    socklen_t length = sizeof address;
    REQUIRE(::getsockname(listener_, generic, &length) == 0);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~TestServer() {
    stopping_ = true;
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    thread_.join();
  }
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  [[nodiscard]] std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  [[nodiscard]] std::vector<std::string> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  void serve() {
    while (!stopping_) {
      const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) return;
      answer(client);
      ::close(client);
    }
  }

  void answer(int client) {
    std::string head;
    char buffer[4096];
    while (head.find("\r\n\r\n") == std::string::npos) {
      const auto got = ::recv(client, buffer, sizeof buffer, 0);
      if (got <= 0) return;
      head.append(buffer, static_cast<std::size_t>(got));
    }
    const auto path_begin = head.find(' ') + 1;
    const auto path = head.substr(path_begin, head.find(' ', path_begin) - path_begin);
    Route route{.status = 404, .body = "not here"};
    {
      std::lock_guard lock(mutex_);
      requests_.push_back(head);
      if (auto it = routes_.find(path); it != routes_.end()) {
        route = it->second;
        if (it->second.failures_first > 0) {
          --it->second.failures_first;
          route = Route{.status = 503, .body = "busy"};
        }
      }
    }
    const std::string reply = "HTTP/1.1 " + std::to_string(route.status) +
                              " Status\r\nContent-Type: " + route.content_type +
                              "\r\nContent-Length: " + std::to_string(route.body.size()) +
                              "\r\nConnection: close\r\n\r\n" + route.body;
    static_cast<void>(::send(client, reply.data(), reply.size(), MSG_NOSIGNAL));
  }

  std::map<std::string, Route> routes_;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  mutable std::mutex mutex_;
  std::vector<std::string> requests_;
};

// Retries in milliseconds, so the tests stay fast.
FetchOptions quick_options() {
  return FetchOptions{.connect_timeout = std::chrono::seconds(5),
                      .timeout = std::chrono::seconds(10),
                      .attempts = 3,
                      .first_retry_delay = std::chrono::milliseconds(1),
                      .max_retry_delay = std::chrono::milliseconds(5)};
}

}  // namespace

TEST_CASE("fetch_text returns the body of a 200 and sends the request headers", "[net][fetch]") {
  TestServer server({{"/simple/pkg/", {.body = "{\"files\": []}", .content_type = "x/json"}}});
  auto options = quick_options();
  options.headers = {"Accept: application/vnd.pypi.simple.v1+json"};

  auto body = fetch_text(server.url("/simple/pkg/"), options);
  REQUIRE(body.ok());
  CHECK(*body == "{\"files\": []}");
  REQUIRE(server.requests().size() == 1);
  CHECK_THAT(server.requests()[0], Catch::Contains("Accept: application/vnd.pypi.simple.v1+json"));
  CHECK_THAT(server.requests()[0], Catch::Contains("User-Agent: envkit/"));
}

TEST_CASE("fetch reports status, content type and the final URL", "[net][fetch]") {
  TestServer server({{"/page", {.body = "<html></html>", .content_type = "text/html"}}});
  auto response = fetch(server.url("/page"), quick_options());
  REQUIRE(response.ok());
  CHECK(response->status == 200);
  CHECK(response->content_type == "text/html");
  CHECK(response->url == server.url("/page"));
  CHECK(response->body == "<html></html>");
}

TEST_CASE("a 404 is an error naming the URL and the status", "[net][fetch]") {
  TestServer server({});
  const auto url = server.url("/simple/missing/");
  auto body = fetch_text(url, quick_options());
  REQUIRE_FALSE(body.ok());
  CHECK(body.error().message() == "cannot fetch `" + url + "`");
  REQUIRE(body.error().causes().size() == 1);
  CHECK(body.error().causes()[0] == "the server answered HTTP 404");
  // fetch() itself hands the 404 back as an answer.
  auto response = fetch(url, quick_options());
  REQUIRE(response.ok());
  CHECK(response->status == 404);
  CHECK(server.requests().size() == 2);  // a 404 is not tried again
}

TEST_CASE("errors never show the credentials in the URL", "[net][fetch]") {
  TestServer server({});
  const auto port_url = server.url("/private/");
  const auto with_credentials = "http://alice:s3cret@" + port_url.substr(7);
  auto body = fetch_text(with_credentials, quick_options());
  REQUIRE_FALSE(body.ok());
  const auto text = body.error().to_string();
  CHECK_THAT(text, !Catch::Contains("s3cret"));
  CHECK_THAT(text, !Catch::Contains("alice"));
  CHECK_THAT(text, Catch::Contains("http://***@127.0.0.1:"));
  // The credentials still went to the server, as Basic auth.
  REQUIRE(server.requests().size() == 1);
  CHECK_THAT(server.requests()[0], Catch::Contains("Authorization: Basic "));
}

TEST_CASE("503 is tried again until it succeeds; 503 forever gives up", "[net][fetch]") {
  TestServer server({{"/flaky", {.body = "finally", .failures_first = 2}},
                     {"/down", {.status = 503, .body = "down"}}});
  auto body = fetch_text(server.url("/flaky"), quick_options());
  REQUIRE(body.ok());
  CHECK(*body == "finally");

  auto down = fetch_text(server.url("/down"), quick_options());
  REQUIRE_FALSE(down.ok());
  CHECK(down.error().causes().at(0) == "the server answered HTTP 503");
  CHECK(server.requests().size() == 3 + 3);
}

TEST_CASE("a refused connection is an error naming the URL", "[net][fetch]") {
  std::string url;
  {
    TestServer server({});
    url = server.url("/gone");
  }  // the port is closed now
  auto options = quick_options();
  options.attempts = 2;
  auto body = fetch_text(url, options);
  REQUIRE_FALSE(body.ok());
  CHECK(body.error().message() == "cannot fetch `" + url + "`");
  CHECK(body.error().causes().size() == 2);
  CHECK(body.error().causes().back() == "gave up after 2 tries");
}

TEST_CASE("file:// URLs are read; a missing file is an error", "[net][fetch]") {
  envkit::test::TempDir dir;
  const auto path = dir.write("simple/index.html", "<a href=\"x.whl\">x.whl</a>");
  auto body = fetch_text("file://" + path.string(), quick_options());
  REQUIRE(body.ok());
  CHECK(*body == "<a href=\"x.whl\">x.whl</a>");

  const auto missing = "file://" + (dir.path() / "nope.html").string();
  auto failed = fetch_text(missing, quick_options());
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().message() == "cannot fetch `" + missing + "`");
}

TEST_CASE("a body over the size limit is refused", "[net][fetch]") {
  TestServer server({{"/big", {.body = std::string(4096, 'x')}}});
  auto options = quick_options();
  options.max_bytes = 100;
  auto body = fetch_text(server.url("/big"), options);
  REQUIRE_FALSE(body.ok());
  CHECK(body.error().causes().at(0) == "the response is larger than the limit");
}
