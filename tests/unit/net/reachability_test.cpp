#include "envkit/net/reachability.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "envkit/sys/fs.hpp"
#include "support/fault_server.hpp"
#include "support/http_server.hpp"
#include "support/temp_dir.hpp"

using envkit::net::check_reachability;
using envkit::net::reachability_host;
using envkit::net::ReachabilityOptions;
using envkit::test::FaultServer;
using envkit::test::TempDir;

namespace {

// A URL on 127.0.0.1 where nothing listens: refused at once, as a firewall's reject is.
std::string closed_url() {
  return "http://127.0.0.1:" + std::to_string(envkit::test::free_port()) + "/file.tar.xz";
}

}  // namespace

TEST_CASE("reachability_host names a URL's host and port, and nothing for file:// URLs",
          "[net][reachability]") {
  CHECK(reachability_host("https://GitHub.com/astral-sh/x.tar.gz") == "github.com");
  CHECK(reachability_host("http://user:pw@127.0.0.1:8080/a") == "127.0.0.1:8080");
  CHECK(reachability_host("file:///srv/mirror/a.whl").empty());
  CHECK(reachability_host("not a url").empty());
}

TEST_CASE("check_reachability tells a server that answers from a port where none listens",
          "[net][reachability]") {
  FaultServer server;
  server.serve("/file.whl", "wheel bytes");
  const auto dead = closed_url();
  // A 404 is an answer: the host is reachable, whatever that file's fate.
  const auto answers = check_reachability(
      {server.url("/file.whl"), server.url("/missing"), dead, "file:///tmp/x"}, {});
  REQUIRE(answers.size() == 2);
  const auto live = answers.at(reachability_host(server.url("/")));
  CHECK(live.reachable);
  CHECK(live.reason.empty());
  const auto refused = answers.at(reachability_host(dead));
  CHECK_FALSE(refused.reachable);
  CHECK_THAT(refused.reason, Catch::Contains("127.0.0.1"));
  // One request per host: the first URL of each.
  CHECK(server.heads().size() == 1);
}

TEST_CASE("check_reachability keeps its answers per network for their time to live",
          "[net][reachability]") {
  TempDir dir;
  FaultServer server;
  server.serve("/a", "x");
  const ReachabilityOptions options{.cache_file = dir.path() / "reachability.json",
                                    .ttl = std::chrono::seconds(600)};
  const auto dead = closed_url();
  auto first = check_reachability({server.url("/a"), dead}, options);
  CHECK_FALSE(first.at(reachability_host(server.url("/"))).cached);
  REQUIRE(std::filesystem::exists(*options.cache_file));

  auto second = check_reachability({server.url("/a"), dead}, options);
  CHECK(second.at(reachability_host(server.url("/"))).cached);
  CHECK(second.at(reachability_host(dead)).cached);
  CHECK_FALSE(second.at(reachability_host(dead)).reachable);
  CHECK(server.heads().size() == 1);  // the second answer came from the file

  auto refreshed =
      check_reachability({server.url("/a")}, {.cache_file = options.cache_file, .refresh = true});
  CHECK_FALSE(refreshed.at(reachability_host(server.url("/"))).cached);
  CHECK(server.heads().size() == 2);

  // A cache file that is not JSON costs a question, nothing more.
  REQUIRE(envkit::sys::write_file_atomic(*options.cache_file, "{not json").ok());
  auto after_garbage = check_reachability({server.url("/a")}, options);
  CHECK(after_garbage.at(reachability_host(server.url("/"))).reachable);
}

TEST_CASE("an unreachable host's reason is libcurl's, and answers are kept per CA bundle",
          "[net][reachability]") {
  TempDir dir;
  const auto dead = closed_url();
  const ReachabilityOptions options{.cache_file = dir.path() / "reachability.json"};
  const auto first = check_reachability({dead}, options).at(reachability_host(dead));
  CHECK_FALSE(first.reachable);
  // What failed, not fetch's "cannot fetch `URL`" headline.
  CHECK_THAT(first.reason, Catch::StartsWith("Failed to connect to 127.0.0.1 port"));
  CHECK(check_reachability({dead}, options).at(reachability_host(dead)).cached);

  // Another CA bundle is another question: a TLS refusal under one is no answer for another.
  auto with_ca = options;
  with_ca.ca_file = dir.write("ca.pem", "not a certificate\n");
  CHECK_FALSE(check_reachability({dead}, with_ca).at(reachability_host(dead)).cached);
  CHECK(check_reachability({dead}, with_ca).at(reachability_host(dead)).cached);
}
