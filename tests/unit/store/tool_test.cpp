// provide_tool with a small fake tool (a wheel holding a shell script): from a
// file:// download mirror, from a PEP 503 index on nginx, and every way it can fail.
// The real pinned uv is tested in uv_provision_test.cpp.
#include "envkit/store/tool.hpp"

#include <catch2/catch.hpp>
#include <fstream>
#include <future>
#include <thread>

#include "envkit/core/sha256.hpp"
#include "envkit/sys/process.hpp"
#include "support/http_server.hpp"
#include "support/python_index.hpp"
#include "support/quick_transport.hpp"
#include "support/temp_dir.hpp"

namespace envkit::store {
namespace {

namespace fs = std::filesystem;
using envkit::test::StaticHttpServer;
using envkit::test::TempDir;

constexpr std::string_view kWheelName = "fake-1.0-py3-none-any.whl";
// Nothing listens on port 1: the "original" URL of the fake tool is never reachable.
constexpr std::string_view kOriginalDir = "http://127.0.0.1:1/packages/ab/cd/";

std::string fake_wheel(std::string_view script = "#!/bin/sh\necho 'fake 1.0 (test build)'\n",
                       std::string_view member = "fake-1.0.data/scripts/fake") {
  return envkit::test::make_zip({{"fake/__init__.py", ""},
                                 {std::string(member), std::string(script)},
                                 {"fake-1.0.dist-info/METADATA", "Name: fake\nVersion: 1.0\n"}});
}

ToolRelease fake_release(const std::string& wheel) {
  return {.name = "fake",
          .version = "1.0",
          .override_variable = "ENVKIT_FAKE",
          .files = {{.host = specs::host_platform(),
                     .url = std::string(kOriginalDir) + std::string(kWheelName),
                     .sha256 = core::sha256_hex(wheel),
                     .size = wheel.size(),
                     .member = "fake-1.0.data/scripts/fake"}}};
}

net::FetchOptions quick_fetch() {
  return {.connect_timeout = std::chrono::seconds(2),
          .timeout = std::chrono::seconds(10),
          .attempts = 1};
}

// `wheel` where a download mirror at `root` keeps the fake tool's original URL.
void put_in_mirror(const fs::path& root, const std::string& wheel) {
  const auto file = root / "127.0.0.1:1/packages/ab/cd" / kWheelName;
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << wheel;
}

std::string file_url(const fs::path& path) {
  return "file://" + path.string();
}

// Every path under `folder` (empty when it does not exist).
std::vector<std::string> contents(const fs::path& folder) {
  std::vector<std::string> found;
  std::error_code ignored;
  for (fs::recursive_directory_iterator it(folder, ignored), end; it != end; it.increment(ignored))
    found.push_back(fs::relative(it->path(), folder).string());
  return found;
}

std::string full_text(const Error& error) {
  return error.to_string();
}

TEST_CASE("pinned uv: two Linux wheels from files.pythonhosted.org with their sha256",
          "[store][tool]") {
  const auto& uv = pinned_uv();
  CHECK(uv.name == "uv");
  CHECK(uv.version == "0.13.9");
  CHECK(uv.override_variable == "ENVKIT_UV");
  REQUIRE(uv.files.size() == 2);
  CHECK(uv.files[0].host == specs::Platform::linux_x86_64);
  CHECK(uv.files[1].host == specs::Platform::linux_aarch64);
  CHECK(uv.files[0].sha256 == "d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19");
  for (const auto& file : uv.files) {
    CHECK(file.url.starts_with("https://files.pythonhosted.org/packages/"));
    CHECK(file.url.find("/uv-0.13.9-py3-none-manylinux_2_17_") != std::string::npos);
    CHECK(file.url.ends_with(".whl"));
    CHECK(file.sha256.size() == 64);
    CHECK(file.size > 10'000'000);
    CHECK(file.member == "uv-0.13.9.data/scripts/uv");
  }
}

TEST_CASE("a tool comes from a download mirror once, runs, and is kept in the cache",
          "[store][tool]") {
  TempDir work;
  const auto wheel = fake_wheel();
  const auto release = fake_release(wheel);
  put_in_mirror(work.path() / "mirror", wheel);
  const Cache cache(work.path() / "cache");
  net::Transport transport(test::quick_transport());
  std::vector<std::string> notes;
  const ToolOptions options{.transport = &transport,
                            .mirrors = {file_url(work.path() / "mirror")},
                            .note = [&](const std::string& line) { notes.push_back(line); }};

  auto path = provide_tool(cache, release, options);
  REQUIRE(path);
  CHECK(*path == work.path() / "cache/tools/fake-1.0/fake");
  CHECK(*path == tool_path(cache, release));
  auto ran = sys::run_process({path->string(), "--version"});
  REQUIRE(ran);
  CHECK(ran->out == "fake 1.0 (test build)\n");
  // Only the executable is kept; the wheel and the staging folder are gone.
  CHECK(contents(work.path() / "cache/tools") ==
        std::vector<std::string>{"fake-1.0", "fake-1.0/fake"});
  CHECK(contents(cache.store_root() / "tmp").empty());
  REQUIRE_FALSE(notes.empty());
  CHECK(notes.front().starts_with("downloading fake 1.0"));

  // Later calls use the cache: nothing to download (the mirror is gone), and offline too.
  fs::remove_all(work.path() / "mirror");
  notes.clear();
  auto again = provide_tool(cache, release, options);
  REQUIRE(again);
  CHECK(*again == *path);
  CHECK(notes.empty());
  auto offline = provide_tool(cache, release, {});
  REQUIRE(offline);
  CHECK(*offline == *path);
}

TEST_CASE("a tampered wheel is refused, naming where it came from, and nothing is kept",
          "[store][tool]") {
  TempDir work;
  const auto wheel = fake_wheel();
  const auto release = fake_release(wheel);
  auto tampered = wheel;
  tampered[tampered.size() / 2] = static_cast<char>(tampered[tampered.size() / 2] ^ 0x01);
  put_in_mirror(work.path() / "mirror", tampered);
  const Cache cache(work.path() / "cache");
  net::Transport transport(test::quick_transport());

  auto path = provide_tool(
      cache, release, {.transport = &transport, .mirrors = {file_url(work.path() / "mirror")}});
  REQUIRE_FALSE(path);
  const auto text = full_text(path.error());
  CHECK(path.error().message() == "checksum mismatch for fake-1.0-py3-none-any.whl");
  CHECK(text.find("expected sha256 " + release.files[0].sha256) != std::string::npos);
  CHECK(text.find("got      sha256 " + core::sha256_hex(tampered)) != std::string::npos);
  CHECK(text.find("downloaded from " + file_url(work.path() / "mirror") +
                  "/127.0.0.1:1/packages/ab/cd/" + std::string(kWheelName)) != std::string::npos);
  CHECK(text.find("hint: set ENVKIT_FAKE to a fake executable") != std::string::npos);
  CHECK(contents(work.path() / "cache/tools").empty());
  CHECK(contents(cache.store_root() / "tmp").empty());
}

TEST_CASE("a tool unreachable everywhere: every URL tried is named, with hints", "[store][tool]") {
  TempDir work;
  const auto release = fake_release(fake_wheel());
  fs::create_directories(work.path() / "empty-mirror");
  const Cache cache(work.path() / "cache");
  net::Transport transport(test::quick_transport());

  auto path =
      provide_tool(cache, release,
                   {.transport = &transport, .mirrors = {file_url(work.path() / "empty-mirror")}});
  REQUIRE_FALSE(path);
  const auto text = full_text(path.error());
  CHECK(path.error().message() == "cannot download fake 1.0 (fake-1.0-py3-none-any.whl)");
  CHECK(text.find(file_url(work.path() / "empty-mirror") + "/127.0.0.1:1/packages/ab/cd/" +
                  std::string(kWheelName)) != std::string::npos);
  CHECK(text.find(release.files[0].url) != std::string::npos);
  CHECK(text.find("hint: set ENVKIT_FAKE to a fake executable") != std::string::npos);
  CHECK(text.find("hint: or give envkit a way to PyPI's files") != std::string::npos);
  CHECK(contents(work.path() / "cache/tools").empty());
}

TEST_CASE("a tool that does not say its version, or is missing from its wheel, is refused",
          "[store][tool]") {
  TempDir work;
  const Cache cache(work.path() / "cache");
  net::Transport transport(test::quick_transport());
  const auto mirror = work.path() / "mirror";
  const ToolOptions options{.transport = &transport, .mirrors = {file_url(mirror)}};

  SECTION("another version") {
    const auto wheel = fake_wheel("#!/bin/sh\necho 'fake 2.0'\n");
    put_in_mirror(mirror, wheel);
    auto path = provide_tool(cache, fake_release(wheel), options);
    REQUIRE_FALSE(path);
    CHECK(path.error().message() == "fake from fake-1.0-py3-none-any.whl is not fake 1.0");
    CHECK(full_text(path.error()).find("it printed `fake 2.0`") != std::string::npos);
  }
  SECTION("a failing executable") {
    const auto wheel = fake_wheel("#!/bin/sh\necho broken >&2\nexit 3\n");
    put_in_mirror(mirror, wheel);
    auto path = provide_tool(cache, fake_release(wheel), options);
    REQUIRE_FALSE(path);
    const auto text = full_text(path.error());
    CHECK(text.find("`fake --version` exited with 3") != std::string::npos);
    CHECK(text.find("stderr: broken") != std::string::npos);
  }
  SECTION("no such member") {
    const auto wheel = fake_wheel("#!/bin/sh\n", "fake-1.0.data/scripts/other");
    put_in_mirror(mirror, wheel);
    auto path = provide_tool(cache, fake_release(wheel), options);
    REQUIRE_FALSE(path);
    CHECK(path.error().message() ==
          "fake-1.0-py3-none-any.whl holds no `fake-1.0.data/scripts/fake`");
  }
  CHECK(contents(work.path() / "cache/tools").empty());
  CHECK(contents(cache.store_root() / "tmp").empty());
}

TEST_CASE("no file for this machine, or offline with an empty cache: errors with the hint",
          "[store][tool]") {
  TempDir work;
  const Cache cache(work.path() / "cache");
  auto release = fake_release(fake_wheel());

  auto offline = provide_tool(cache, release, {});
  REQUIRE_FALSE(offline);
  CHECK(offline.error().message() == "fake 1.0 is not in the cache, and envkit is offline");
  CHECK(offline.error().hints().at(0).starts_with("set ENVKIT_FAKE to a fake executable"));

  release.files[0].host = specs::Platform::windows_x86_64;
  net::Transport transport(test::quick_transport());
  auto elsewhere = provide_tool(cache, release, {.transport = &transport});
  REQUIRE_FALSE(elsewhere);
  CHECK(elsewhere.error().message() == "envkit has no fake 1.0 for this machine");
  CHECK(elsewhere.error().causes().at(0) == "it provides fake for windows-x86_64 only");
  CHECK(elsewhere.error().hints().at(0).starts_with("set ENVKIT_FAKE to a fake executable"));
}

// A PEP 503 index on nginx: ROOT/simple/fake/index.html linking `href`.
void write_index_page(const TempDir& www, const std::string& href) {
  www.write("simple/fake/index.html",
            "<!DOCTYPE html>\n<html><body>\n<a href=\"../../other/fake-0.9-py3-none-any.whl\">"
            "fake-0.9-py3-none-any.whl</a>\n<a href=\"" +
                href + "\">" + std::string(kWheelName) + "</a>\n</body></html>\n");
}

TEST_CASE("when the URL and mirrors fail, the pinned file is found on a PEP 503 index",
          "[store][tool][nginx]") {
  if (test::nginx_missing()) return;
  TempDir www;
  TempDir work;
  const auto wheel = fake_wheel();
  const auto release = fake_release(wheel);
  www.write("packages/x/" + std::string(kWheelName), wheel);
  const StaticHttpServer server(www.path());
  const Cache cache(work.path() / "cache");
  net::Transport transport(test::quick_transport());
  const ToolOptions options{.transport = &transport,
                            .indexes = {server.url("/missing/simple"), server.url("/simple")},
                            .index_fetch = quick_fetch()};

  SECTION("a relative link with its #sha256 fragment") {
    write_index_page(
        www, "../../packages/x/" + std::string(kWheelName) + "#sha256=" + release.files[0].sha256);
    auto path = provide_tool(cache, release, options);
    REQUIRE(path);
    CHECK(sys::run_process({path->string(), "--version"})->out == "fake 1.0 (test build)\n");
    CHECK(server.access_log().find("200 /packages/x/" + std::string(kWheelName)) !=
          std::string::npos);
  }
  SECTION("an absolute link") {
    write_index_page(www, server.url("/packages/x/" + std::string(kWheelName)));
    REQUIRE(provide_tool(cache, release, options));
  }
  SECTION("an index listing another sha256 for the name: refused before downloading") {
    write_index_page(
        www, "../../packages/x/" + std::string(kWheelName) + "#sha256=" + std::string(64, 'a'));
    auto path = provide_tool(cache, release, options);
    REQUIRE_FALSE(path);
    const auto text = full_text(path.error());
    CHECK(path.error().message() == "checksum mismatch for fake-1.0-py3-none-any.whl");
    CHECK(text.find("listed   sha256 " + std::string(64, 'a')) != std::string::npos);
    CHECK(text.find("on the index page " + server.url("/simple/fake/")) != std::string::npos);
    CHECK(server.access_log().find("/packages/x/") == std::string::npos);
  }
  SECTION("a tampered file on the index: the URL is named") {
    auto tampered = wheel;
    tampered[100] = static_cast<char>(tampered[100] ^ 0x01);
    www.write("packages/x/" + std::string(kWheelName), tampered);
    write_index_page(www, "../../packages/x/" + std::string(kWheelName));
    auto path = provide_tool(cache, release, options);
    REQUIRE_FALSE(path);
    CHECK(path.error().message() == "checksum mismatch for fake-1.0-py3-none-any.whl");
    CHECK(full_text(path.error())
              .find("downloaded from " + server.url("/packages/x/" + std::string(kWheelName))) !=
          std::string::npos);
  }
  SECTION("no index lists it: each page is named") {
    www.write("simple/fake/index.html", "<html><body></body></html>\n");
    auto path = provide_tool(cache, release, options);
    REQUIRE_FALSE(path);
    const auto text = full_text(path.error());
    CHECK(text.find(release.files[0].url) != std::string::npos);
    CHECK(text.find("`" + server.url("/missing/simple/fake/") + "`: HTTP 404") !=
          std::string::npos);
    CHECK(text.find("`" + server.url("/simple/fake/") + "`: does not list " +
                    std::string(kWheelName)) != std::string::npos);
  }
  CHECK(contents(cache.store_root() / "tmp").empty());
}

TEST_CASE("envkits asking for the same tool at once download it once", "[store][tool][nginx]") {
  if (test::nginx_missing()) return;
  TempDir www;
  TempDir work;
  const auto wheel = fake_wheel();
  const auto release = fake_release(wheel);
  put_in_mirror(www.path(), wheel);
  const StaticHttpServer server(www.path());
  const Cache cache(work.path() / "cache");

  std::vector<std::future<Result<fs::path>>> asked;
  for (int i = 0; i < 4; ++i) {
    asked.push_back(std::async(std::launch::async, [&] {
      net::Transport transport(test::quick_transport());
      return provide_tool(cache, release, {.transport = &transport, .mirrors = {server.url("")}});
    }));
  }
  for (auto& answer : asked) {
    auto path = answer.get();
    REQUIRE(path);
    CHECK(*path == tool_path(cache, release));
  }
  const auto log = server.access_log();
  std::size_t downloads = 0;
  for (auto at = log.find(kWheelName); at != std::string::npos; at = log.find(kWheelName, at + 1))
    ++downloads;
  CHECK(downloads == 1);
}

}  // namespace
}  // namespace envkit::store
