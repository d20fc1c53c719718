// The real pinned uv wheel (tests/.tools, from scripts/fetch-test-tools) served by
// nginx, as a download mirror of files.pythonhosted.org and as a PEP 503 index:
// provide_tool downloads it once, checks it, and the uv it unpacks runs. Nothing
// here reaches the internet: the original URL is either never asked (a mirror
// answers first, and https goes to a dead proxy) or replaced by a dead one.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <source_location>

#include "envkit/net/transport.hpp"
#include "envkit/store/tool.hpp"
#include "envkit/sys/fs.hpp"
#include "envkit/sys/process.hpp"
#include "support/http_server.hpp"
#include "support/quick_transport.hpp"
#include "support/scoped_env.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

namespace envkit::store {
namespace {

namespace fs = std::filesystem;
using envkit::test::StaticHttpServer;
using envkit::test::TempDir;

const fs::path kTools = ENVKIT_SOURCE_DIR "/tests/.tools";

const ToolFile& host_file() {
  return pinned_uv().files.at(0);  // linux-x86_64: the wheel tests/.tools holds
}

std::string wheel_name() {
  const auto& url = host_file().url;
  return url.substr(url.rfind('/') + 1);
}

// The pinned wheel's bytes, or nullopt (the skip recorded) when the test cannot run here.
std::optional<std::string> pinned_wheel(
    std::source_location where = std::source_location::current()) {
  if (specs::host_platform() != specs::Platform::linux_x86_64) {
    test::skip_test(test::SkipKind::expected,
                    "the uv wheel in tests/.tools is linux-x86_64's, not this machine's", where);
    return std::nullopt;
  }
  if (test::nginx_missing(where)) return std::nullopt;
  auto bytes = sys::read_file(kTools / wheel_name());
  if (!bytes) {
    test::skip_test(
        test::SkipKind::setup_should_provide,
        "tests/.tools has no " + wheel_name() + " (scripts/setup runs scripts/fetch-test-tools)",
        where);
    return std::nullopt;
  }
  return *std::move(bytes);
}

using envkit::test::ScopedEnv;

// pinned_uv() with its original URL replaced by one nothing answers (same file, same sha256).
ToolRelease uv_without_pypi() {
  auto release = pinned_uv();
  release.files.resize(1);
  release.files[0].url = "http://127.0.0.1:1/packages/" + wheel_name();
  return release;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t found = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++found;
  return found;
}

std::string version_of(const fs::path& uv) {
  auto ran = sys::run_process({uv.string(), "--version"});
  REQUIRE(ran);
  return ran->out;
}

void write_binary(const fs::path& file, const std::string& bytes) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << bytes;
}

TEST_CASE("uv 0.13.9 from a mirror of files.pythonhosted.org: unpacked once, runs",
          "[store][tool][uv][nginx]") {
  const auto wheel = pinned_wheel();
  if (!wheel) return;
  // Should a test go wrong and ask PyPI itself, it asks a proxy that is not there.
  const ScopedEnv proxy("https_proxy", "http://127.0.0.1:1");
  const ScopedEnv proxy_upper("HTTPS_PROXY", "http://127.0.0.1:1");
  TempDir www;
  TempDir work;
  const auto mirror_file = net::mirror_file(host_file().url);
  REQUIRE(mirror_file);
  CHECK(mirror_file->string().starts_with("files.pythonhosted.org/packages/3d/aa/"));
  write_binary(www.path() / *mirror_file, *wheel);
  const StaticHttpServer server(www.path());
  const Cache cache(work.path() / "cache");
  net::Transport transport(test::quick_transport());
  const ToolOptions options{.transport = &transport, .mirrors = {server.url("/")}};

  auto uv = provide_tool(cache, pinned_uv(), options);
  REQUIRE(uv);
  CHECK(*uv == work.path() / "cache/tools/uv-0.13.9/uv");
  CHECK(version_of(*uv).starts_with("uv 0.13.9"));
  CHECK(count(server.access_log(), "200 /files.pythonhosted.org/") == 1);

  auto again = provide_tool(cache, pinned_uv(), options);
  REQUIRE(again);
  CHECK(*again == *uv);
  CHECK(count(server.access_log(), wheel_name()) == 1);  // nothing downloaded the second time
}

TEST_CASE("a uv wheel with one byte changed is refused, naming its URL, and nothing is kept",
          "[store][tool][uv][nginx]") {
  auto wheel = pinned_wheel();
  if (!wheel) return;
  const ScopedEnv proxy("https_proxy", "http://127.0.0.1:1");
  const ScopedEnv proxy_upper("HTTPS_PROXY", "http://127.0.0.1:1");
  TempDir www;
  TempDir work;
  (*wheel)[wheel->size() / 2] = static_cast<char>((*wheel)[wheel->size() / 2] ^ 0x20);
  write_binary(www.path() / *net::mirror_file(host_file().url), *wheel);
  const StaticHttpServer server(www.path());
  const Cache cache(work.path() / "cache");
  net::Transport transport(test::quick_transport());

  auto uv =
      provide_tool(cache, pinned_uv(), {.transport = &transport, .mirrors = {server.url("/")}});
  REQUIRE_FALSE(uv);
  const auto text = uv.error().to_string();
  CHECK(uv.error().message() == "checksum mismatch for " + wheel_name());
  CHECK(text.find("downloaded from " + server.url("/files.pythonhosted.org/packages/")) !=
        std::string::npos);
  CHECK(text.find("hint: set ENVKIT_UV to a uv executable") != std::string::npos);
  std::error_code ignored;
  CHECK_FALSE(fs::exists(work.path() / "cache/tools", ignored));
  CHECK(fs::is_empty(cache.store_root() / "tmp", ignored));
}

TEST_CASE("uv from a PEP 503 index when its URL cannot be reached", "[store][tool][uv][nginx]") {
  const auto wheel = pinned_wheel();
  if (!wheel) return;
  TempDir www;
  TempDir work;
  write_binary(www.path() / "files" / wheel_name(), *wheel);
  www.write("simple/uv/index.html", "<html><body>\n<a href=\"../../files/" + wheel_name() +
                                        "#sha256=" + host_file().sha256 + "\">" + wheel_name() +
                                        "</a><br/>\n</body></html>\n");
  const StaticHttpServer server(www.path());
  const Cache cache(work.path() / "cache");
  net::Transport transport(test::quick_transport());
  const auto release = uv_without_pypi();

  auto uv =
      provide_tool(cache, release,
                   {.transport = &transport,
                    .indexes = {server.url("/simple/")},
                    .index_fetch = {.connect_timeout = std::chrono::seconds(2), .attempts = 1}});
  REQUIRE(uv);
  CHECK(version_of(*uv).starts_with("uv 0.13.9"));
  CHECK(count(server.access_log(), "200 /files/" + wheel_name()) == 1);
}

TEST_CASE("uv absent from the mirror and the index: an error naming every URL tried",
          "[store][tool][uv][nginx]") {
  const auto wheel = pinned_wheel();
  if (!wheel) return;
  TempDir www;
  TempDir work;
  www.write("simple/uv/index.html", "<html><body>no files</body></html>\n");
  const StaticHttpServer server(www.path());
  const Cache cache(work.path() / "cache");
  net::Transport transport(test::quick_transport());
  const auto release = uv_without_pypi();

  auto uv =
      provide_tool(cache, release,
                   {.transport = &transport,
                    .mirrors = {server.url("/mirror")},
                    .indexes = {server.url("/simple")},
                    .index_fetch = {.connect_timeout = std::chrono::seconds(2), .attempts = 1}});
  REQUIRE_FALSE(uv);
  const auto text = uv.error().to_string();
  INFO(text);
  CHECK(uv.error().message() == "cannot download uv 0.13.9 (" + wheel_name() + ")");
  CHECK(text.find(server.url("/mirror/127.0.0.1:1/packages/" + wheel_name())) != std::string::npos);
  CHECK(text.find("`" + release.files[0].url + "`") != std::string::npos);
  CHECK(text.find(server.url("/simple/uv/") + "`: does not list " + wheel_name()) !=
        std::string::npos);
  CHECK(text.find("hint: set ENVKIT_UV to a uv executable") != std::string::npos);
  std::error_code ignored;
  CHECK_FALSE(fs::exists(work.path() / "cache/tools", ignored));
}

}  // namespace
}  // namespace envkit::store
