#include "envkit/net/fetch.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "support/fault_server.hpp"
#include "support/temp_dir.hpp"

using envkit::net::fetch;
using envkit::net::fetch_text;
using envkit::net::FetchOptions;
using envkit::test::Behaviour;
using envkit::test::FaultServer;

namespace {

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
  FaultServer server;
  server.serve("/simple/pkg/", "{\"files\": []}", {.content_type = "x/json"});
  auto options = quick_options();
  options.headers = {"Accept: application/vnd.pypi.simple.v1+json"};

  auto body = fetch_text(server.url("/simple/pkg/"), options);
  REQUIRE(body.ok());
  CHECK(*body == "{\"files\": []}");
  REQUIRE(server.heads().size() == 1);
  CHECK_THAT(server.heads()[0], Catch::Contains("Accept: application/vnd.pypi.simple.v1+json"));
  CHECK_THAT(server.heads()[0], Catch::Contains("User-Agent: envkit/"));
}

TEST_CASE("fetch reports status, content type and the final URL", "[net][fetch]") {
  FaultServer server;
  server.serve("/page", "<html></html>", {.content_type = "text/html"});
  auto response = fetch(server.url("/page"), quick_options());
  REQUIRE(response.ok());
  CHECK(response->status == 200);
  CHECK(response->content_type == "text/html");
  CHECK(response->url == server.url("/page"));
  CHECK(response->body == "<html></html>");
}

TEST_CASE("a 404 is an error naming the URL and the status", "[net][fetch]") {
  FaultServer server;
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
  CHECK(server.heads().size() == 2);  // a 404 is not tried again
}

TEST_CASE("errors never show the credentials in the URL", "[net][fetch]") {
  FaultServer server;
  const auto port_url = server.url("/private/");
  const auto with_credentials = "http://alice:s3cret@" + port_url.substr(7);
  auto body = fetch_text(with_credentials, quick_options());
  REQUIRE_FALSE(body.ok());
  const auto text = body.error().to_string();
  CHECK_THAT(text, !Catch::Contains("s3cret"));
  CHECK_THAT(text, !Catch::Contains("alice"));
  CHECK_THAT(text, Catch::Contains("http://***@127.0.0.1:"));
  // The credentials still went to the server, as Basic auth.
  REQUIRE(server.heads().size() == 1);
  CHECK_THAT(server.heads()[0], Catch::Contains("Authorization: Basic "));
}

TEST_CASE("503 is tried again until it succeeds, 503 forever gives up", "[net][fetch]") {
  FaultServer server;
  server.serve("/flaky", "finally", {.fail_first = 2, .fail_status = 503});
  server.serve("/down", "down", {.fail_first = 1000, .fail_status = 503});
  auto body = fetch_text(server.url("/flaky"), quick_options());
  REQUIRE(body.ok());
  CHECK(*body == "finally");

  auto down = fetch_text(server.url("/down"), quick_options());
  REQUIRE_FALSE(down.ok());
  CHECK(down.error().causes().at(0) == "the server answered HTTP 503");
  CHECK(server.heads().size() == 3 + 3);
}

TEST_CASE("a refused connection is an error naming the URL", "[net][fetch]") {
  std::string url;
  {
    FaultServer server;
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

TEST_CASE("file:// URLs are read, a missing file is an error", "[net][fetch]") {
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
  FaultServer server;
  server.serve("/big", std::string(4096, 'x'));
  auto options = quick_options();
  options.max_bytes = 100;
  auto body = fetch_text(server.url("/big"), options);
  REQUIRE_FALSE(body.ok());
  CHECK(body.error().causes().at(0) == "the response is larger than the limit");
}
