#include "envkit/net/transport.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstddef>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "envkit/core/sha256.hpp"
#include "envkit/net/fetch.hpp"
#include "support/fault_server.hpp"
#include "support/http_server.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"

using namespace std::chrono_literals;
using envkit::core::sha256_hex;
using envkit::net::ByteStream;
using envkit::net::DownloadRequest;
using envkit::net::Transport;
using envkit::net::TransportOptions;
using envkit::test::Behaviour;
using envkit::test::FaultServer;

namespace {

constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = 1024 * KiB;

// Retries and stalls in milliseconds, so the whole binary runs in seconds.
TransportOptions quick() {
  return {.jobs = 4,
          .connect_timeout = 2s,
          .stall_timeout = 200ms,
          .attempts = 3,
          .first_retry_delay = 1ms,
          .max_retry_delay = 5ms,
          .buffer_bytes = 1 * MiB};
}

// Bytes that differ everywhere, so a body spliced at the wrong offset shows.
std::string payload(std::size_t size, unsigned seed = 7) {
  std::string bytes(size, '\0');
  std::minstd_rand random(seed);
  for (auto& byte : bytes)
    byte = static_cast<char>(random() & 0xff);
  return bytes;
}

struct Drained {
  std::string bytes;
  std::optional<envkit::Error> error;
};

// Reads the stream to its end, `pause` after each read (a slow reader).
Drained drain(ByteStream& stream, std::size_t chunk = 64 * KiB,
              std::chrono::milliseconds pause = 0ms) {
  Drained out;
  std::vector<std::byte> buffer(chunk);
  while (true) {
    auto got = stream.read(buffer);
    if (!got) {
      out.error = got.error();
      return out;
    }
    if (*got == 0) return out;
    out.bytes.append(reinterpret_cast<const char*>(buffer.data()), *got);
    if (pause > 0ms) std::this_thread::sleep_for(pause);
  }
}

// K of a "bytes=K-" header; 0 when there was none.
std::size_t range_from(const std::string& header) {
  if (header.empty()) return 0;
  REQUIRE_THAT(header, Catch::StartsWith("bytes=") && Catch::EndsWith("-"));
  return std::stoull(header.substr(6));
}

Drained download(Transport& transport, DownloadRequest request) {
  auto stream = transport.open(std::move(request));
  return drain(*stream);
}

}  // namespace

TEST_CASE("a stream reads the exact bytes the server serves", "[net][transport]") {
  FaultServer server;
  const auto body = payload(3 * MiB);
  server.serve("/a.tar.xz", body);
  Transport transport(quick());

  auto stream = transport.open({.urls = {server.url("/a.tar.xz")}, .label = "a 1.0"});
  const auto got = drain(*stream);
  REQUIRE_FALSE(got.error);
  CHECK(got.bytes.size() == body.size());
  CHECK(sha256_hex(got.bytes) == sha256_hex(body));
  CHECK(stream->url() == server.url("/a.tar.xz"));
  CHECK(server.ranges("/a.tar.xz") == std::vector<std::string>{""});
  CHECK(transport.progress().empty());
}

TEST_CASE("a transfer cut mid-body resumes with a Range request", "[net][transport]") {
  FaultServer server;
  const auto body = payload(2 * MiB);
  server.serve("/cut", body, {.cut_first = 2});
  Transport transport(quick());

  const auto got = download(transport, {.urls = {server.url("/cut")}});
  REQUIRE_FALSE(got.error);
  CHECK(sha256_hex(got.bytes) == sha256_hex(body));
  const auto ranges = server.ranges("/cut");
  REQUIRE(ranges.size() == 3);
  CHECK(ranges[0].empty());
  const auto first = range_from(ranges[1]), second = range_from(ranges[2]);
  CHECK(first > 0);
  CHECK(second > first);  // the second try continued where the first resume stopped
}

TEST_CASE("a server that ignores Range still yields the exact bytes", "[net][transport]") {
  FaultServer server;
  const auto body = payload(1 * MiB);
  server.serve("/whole", body, {.ranges = false, .cut_first = 1});
  Transport transport(quick());

  const auto got = download(transport, {.urls = {server.url("/whole")}});
  REQUIRE_FALSE(got.error);
  CHECK(got.bytes.size() == body.size());
  CHECK(sha256_hex(got.bytes) == sha256_hex(body));
  const auto ranges = server.ranges("/whole");
  REQUIRE(ranges.size() == 2);
  CHECK(range_from(ranges[1]) > 0);  // asked for the rest, got everything, skipped the start
}

TEST_CASE("5xx and 429 are tried again up to `attempts`", "[net][transport]") {
  FaultServer server;
  const auto body = payload(100 * KiB);
  server.serve("/flaky", body, {.fail_first = 2, .fail_status = 500});
  server.serve("/busy", body, {.fail_first = 1, .fail_status = 429, .retry_after = "0"});
  server.serve("/down", body, {.fail_first = 1000, .fail_status = 503});
  Transport transport(quick());

  const auto flaky = download(transport, {.urls = {server.url("/flaky")}});
  REQUIRE_FALSE(flaky.error);
  CHECK(sha256_hex(flaky.bytes) == sha256_hex(body));
  CHECK(server.requests("/flaky") == 3);

  const auto busy = download(transport, {.urls = {server.url("/busy")}});
  REQUIRE_FALSE(busy.error);
  CHECK(server.requests("/busy") == 2);

  const auto down = download(transport, {.urls = {server.url("/down")}, .label = "down 1.0"});
  REQUIRE(down.error);
  CHECK(down.error->message() == "cannot download down 1.0");
  REQUIRE(down.error->causes().size() == 1);
  CHECK(down.error->causes()[0] ==
        "`" + server.url("/down") + "`: the server answered HTTP 503 (3 tries)");
  CHECK(server.requests("/down") == 3);
}

TEST_CASE("Retry-After is honoured, up to max_retry_delay", "[net][transport]") {
  FaultServer server;
  const auto body = payload(10 * KiB);
  server.serve("/slow-down", body, {.fail_first = 1, .fail_status = 429, .retry_after = "1"});
  server.serve("/capped", body, {.fail_first = 1, .fail_status = 429, .retry_after = "1"});

  auto options = quick();
  options.max_retry_delay = 2s;
  {
    Transport transport(options);
    const auto start = std::chrono::steady_clock::now();
    const auto got = download(transport, {.urls = {server.url("/slow-down")}});
    REQUIRE_FALSE(got.error);
    CHECK(std::chrono::steady_clock::now() - start >= 1s);
    CHECK(server.requests("/slow-down") == 2);
  }
  options.max_retry_delay = 50ms;
  Transport transport(options);
  const auto start = std::chrono::steady_clock::now();
  const auto got = download(transport, {.urls = {server.url("/capped")}});
  REQUIRE_FALSE(got.error);
  CHECK(std::chrono::steady_clock::now() - start < 900ms);
  CHECK(server.requests("/capped") == 2);
}

TEST_CASE("a stalled transfer is given up after stall_timeout and resumed", "[net][transport]") {
  FaultServer server;
  const auto body = payload(1 * MiB);
  server.serve("/stall", body, {.stall_first = 1});
  Transport transport(quick());

  const auto start = std::chrono::steady_clock::now();
  const auto got = download(transport, {.urls = {server.url("/stall")}});
  const auto took = std::chrono::steady_clock::now() - start;
  REQUIRE_FALSE(got.error);
  CHECK(sha256_hex(got.bytes) == sha256_hex(body));
  CHECK(took >= 200ms);
  CHECK(took < 2s);
  const auto ranges = server.ranges("/stall");
  REQUIRE(ranges.size() == 2);
  CHECK(range_from(ranges[1]) > 0);
}

TEST_CASE("a slow reader pauses the transfer, and pausing is not stalling", "[net][transport]") {
  FaultServer server;
  const auto body = payload(20 * MiB);
  server.serve("/big", body);
  auto options = quick();
  options.buffer_bytes = 64 * KiB;
  Transport transport(options);

  auto stream = transport.open(
      {.urls = {server.url("/big")}, .expected_size = body.size(), .label = "big 2.0"});
  std::vector<std::byte> first(16 * KiB);
  const auto first_read = stream->read(first);
  if (!first_read) FAIL(first_read.error().to_string());
  // Three times the stall timeout with the buffer full: paused, not stalled.
  std::this_thread::sleep_for(600ms);
  const auto progress = transport.progress();
  REQUIRE(progress.size() == 1);
  CHECK(progress[0].label == "big 2.0");
  CHECK(progress[0].started);
  CHECK(progress[0].total == body.size());
  CHECK(progress[0].received <= 64 * KiB + 64 * KiB);  // the buffer, and libcurl's last chunk

  auto rest = drain(*stream, 48 * KiB);
  REQUIRE_FALSE(rest.error);
  rest.bytes.insert(0, reinterpret_cast<const char*>(first.data()), *first_read);
  CHECK(rest.bytes.size() == body.size());
  CHECK(sha256_hex(rest.bytes) == sha256_hex(body));
  CHECK(server.requests("/big") == 1);
}

TEST_CASE("a 4xx on a mirror moves to the next URL at once", "[net][transport]") {
  FaultServer server;
  const auto body = payload(300 * KiB);
  server.serve("/forbidden", body, {.fail_first = 1000, .fail_status = 403});
  server.serve("/origin", body);
  Transport transport(quick());

  auto stream = transport.open(
      {.urls = {server.url("/missing"), server.url("/forbidden"), server.url("/origin")}});
  const auto got = drain(*stream);
  REQUIRE_FALSE(got.error);
  CHECK(sha256_hex(got.bytes) == sha256_hex(body));
  CHECK(server.requests("/forbidden") == 1);
  CHECK(stream->url() == server.url("/origin"));
}

TEST_CASE("a mirror that breaks mid-body hands over to the next URL, which continues",
          "[net][transport]") {
  FaultServer mirror, origin;
  const auto body = payload(2 * MiB);
  mirror.serve("/m/a.whl", body, {.cut_first = 100});
  origin.serve("/a.whl", body);
  auto options = quick();
  options.attempts = 2;
  Transport transport(options);

  const auto got = download(transport, {.urls = {mirror.url("/m/a.whl"), origin.url("/a.whl")}});
  REQUIRE_FALSE(got.error);
  CHECK(sha256_hex(got.bytes) == sha256_hex(body));
  CHECK(mirror.requests("/m/a.whl") == 2);
  const auto ranges = origin.ranges("/a.whl");
  REQUIRE(ranges.size() == 1);
  CHECK(range_from(ranges[0]) > 0);
}

TEST_CASE("when every URL fails, the error names each one without credentials",
          "[net][transport]") {
  FaultServer server;
  std::string closed;
  {
    FaultServer gone;
    closed = gone.url("/gone");
  }  // nothing listens there now
  const auto secret_url = "http://user:secret@127.0.0.1:" + std::to_string(server.port()) + "/x";
  Transport transport(quick());

  auto stream = transport.open({.urls = {secret_url, closed}});
  const auto progress = transport.progress();
  REQUIRE(progress.size() == 1);
  CHECK_THAT(progress[0].label, !Catch::Contains("secret"));
  const auto got = drain(*stream);
  REQUIRE(got.error);
  const auto text = got.error->to_string();
  CHECK_THAT(text, !Catch::Contains("secret"));
  CHECK_THAT(text, !Catch::Contains("user:"));
  CHECK_THAT(got.error->message(), Catch::StartsWith("cannot download http://***@127.0.0.1:"));
  REQUIRE(got.error->causes().size() == 2);
  CHECK(got.error->causes()[0] == "`http://***@127.0.0.1:" + std::to_string(server.port()) +
                                      "/x`: the server answered HTTP 404");
  CHECK_THAT(got.error->causes()[1], Catch::StartsWith("`" + closed + "`: "));
  CHECK_THAT(got.error->causes()[1], Catch::EndsWith("(3 tries)"));
  CHECK_THAT(stream->url(), !Catch::Contains("secret"));
}

TEST_CASE("expected_size: a body past it is an error, one short of it is resumed",
          "[net][transport]") {
  FaultServer server;
  const auto body = payload(200 * KiB);
  server.serve("/a", body);
  server.serve("/short-length", body, {.length_lie = -50'000});
  server.serve("/long-length", body, {.length_lie = 50'000});
  Transport transport(quick());

  SECTION("more bytes than the lock records") {
    const auto got = download(transport, {.urls = {server.url("/a")}, .expected_size = 1000});
    REQUIRE(got.error);
    CHECK_THAT(got.error->causes().at(0),
               Catch::EndsWith("the server sent more than the 1000 bytes the lock records"));
    CHECK(got.bytes.size() <= 1000);
  }
  SECTION("fewer bytes than the lock records, and the server has no more") {
    const auto got =
        download(transport, {.urls = {server.url("/a")}, .expected_size = body.size() + 10});
    REQUIRE(got.error);
    CHECK_THAT(got.error->causes().at(0),
               Catch::EndsWith("the server has " + std::to_string(body.size()) +
                               " bytes, the lock records " + std::to_string(body.size() + 10) +
                               " (2 tries)"));
    CHECK(server.requests("/a") == 2);  // the rest was asked for once (416)
  }
  SECTION("a Content-Length too short: the rest is fetched with a Range") {
    const auto got =
        download(transport, {.urls = {server.url("/short-length")}, .expected_size = body.size()});
    REQUIRE_FALSE(got.error);
    CHECK(sha256_hex(got.bytes) == sha256_hex(body));
    const auto ranges = server.ranges("/short-length");
    REQUIRE(ranges.size() == 2);
    CHECK(range_from(ranges[1]) == body.size() - 50'000);
  }
  SECTION("a Content-Length too long: the lock's size arrived, that is the body") {
    const auto got =
        download(transport, {.urls = {server.url("/long-length")}, .expected_size = body.size()});
    REQUIRE_FALSE(got.error);
    CHECK(sha256_hex(got.bytes) == sha256_hex(body));
    CHECK(server.requests("/long-length") == 1);
  }
  SECTION("a Content-Length too long and no size known: a 416 at the end confirms it") {
    const auto got = download(transport, {.urls = {server.url("/long-length")}});
    REQUIRE_FALSE(got.error);
    CHECK(sha256_hex(got.bytes) == sha256_hex(body));
    const auto ranges = server.ranges("/long-length");
    REQUIRE(ranges.size() == 2);
    CHECK(range_from(ranges[1]) == body.size());
  }
}

TEST_CASE("wrong bytes are delivered as served: the reader's sha256 tells", "[net][transport]") {
  FaultServer server;
  const auto body = payload(64 * KiB);
  server.serve("/tampered", body, {.wrong_bytes = true});
  Transport transport(quick());

  const auto got = download(transport, {.urls = {server.url("/tampered")}});
  REQUIRE_FALSE(got.error);
  CHECK(got.bytes.size() == body.size());
  CHECK(sha256_hex(got.bytes) != sha256_hex(body));
}

TEST_CASE("file:// URLs are read, and can continue a broken transfer", "[net][transport]") {
  envkit::test::TempDir dir;
  const auto body = payload(1 * MiB);
  const auto file = "file://" + dir.write("m/host/a.tar.xz", body).string();
  const auto missing = "file://" + (dir.path() / "nope").string();
  FaultServer server;
  server.serve("/a.tar.xz", body, {.cut_first = 100});
  auto options = quick();
  options.attempts = 1;
  Transport transport(options);

  const auto plain = download(transport, {.urls = {file}});
  REQUIRE_FALSE(plain.error);
  CHECK(sha256_hex(plain.bytes) == sha256_hex(body));

  const auto continued = download(transport, {.urls = {server.url("/a.tar.xz"), missing, file}});
  REQUIRE_FALSE(continued.error);
  CHECK(sha256_hex(continued.bytes) == sha256_hex(body));

  const auto failed = download(transport, {.urls = {missing}});
  REQUIRE(failed.error);
  CHECK_THAT(failed.error->causes().at(0), Catch::StartsWith("`" + missing + "`: "));
}

TEST_CASE("a file:// mirror larger than the buffer reaches a slow reader whole",
          "[net][transport]") {
  // libcurl cannot pause a file:// transfer; such files are read directly.
  envkit::test::TempDir dir;
  const auto body = payload(12 * MiB);
  const auto file = "file://" + dir.write("m/host/big.whl", body).string();
  FaultServer server;
  server.serve("/big.whl", body);
  auto options = quick();
  options.buffer_bytes = 64 * KiB;
  Transport transport(options);

  auto stream = transport.open({.urls = {file, server.url("/big.whl")}});
  const auto got = drain(*stream, 256 * KiB, 1ms);
  REQUIRE_FALSE(got.error);
  CHECK(sha256_hex(got.bytes) == sha256_hex(body));
  CHECK(server.requests("/big.whl") == 0);  // the mirror had it: no fallback

  // A missing file mirror before a remote one, and the error naming both when all fail.
  const auto missing = "file://" + (dir.path() / "m/host/nope.whl").string();
  const auto fell_back = download(transport, {.urls = {missing, server.url("/big.whl")}});
  REQUIRE_FALSE(fell_back.error);
  CHECK(sha256_hex(fell_back.bytes) == sha256_hex(body));
  const auto failed = download(transport, {.urls = {missing, server.url("/gone")}});
  REQUIRE(failed.error);
  CHECK_THAT(failed.error->to_string(), Catch::Contains(missing));
  CHECK_THAT(failed.error->to_string(), Catch::Contains(server.url("/gone")));
}

TEST_CASE("at most `jobs` transfers run at once, the others wait their turn", "[net][transport]") {
  FaultServer server;
  std::vector<std::string> bodies;
  for (unsigned i = 0; i < 16; ++i) {
    bodies.push_back(payload(256 * KiB, i + 1));
    server.serve("/" + std::to_string(i), bodies.back(), {.chunk_delay = 2ms});
  }
  Transport transport(quick());  // jobs = 4

  std::vector<std::unique_ptr<ByteStream>> streams;
  for (unsigned i = 0; i < 16; ++i) {
    streams.push_back(transport.open(
        {.urls = {server.url("/" + std::to_string(i))}, .label = "p" + std::to_string(i)}));
  }
  const auto progress = transport.progress();
  REQUIRE(progress.size() == 16);
  CHECK(progress[0].label == "p0");
  CHECK(progress[15].label == "p15");
  CHECK(std::count_if(progress.begin(), progress.end(), [](const auto& p) { return p.started; }) <=
        4);

  for (unsigned i = 0; i < 16; ++i) {
    const auto got = drain(*streams[i]);
    REQUIRE_FALSE(got.error);
    CHECK(sha256_hex(got.bytes) == sha256_hex(bodies[i]));
  }
  CHECK(server.max_concurrent() <= 4);
  CHECK(server.max_concurrent() >= 2);
  CHECK(transport.progress().empty());
}

TEST_CASE("dropping a stream cancels its transfer without hanging", "[net][transport]") {
  FaultServer server;
  server.serve("/hangs", payload(100 * KiB), {.stall_first = 1000});
  server.serve("/big", payload(4 * MiB));
  auto options = quick();
  options.stall_timeout = 30s;  // only dropping ends these
  options.buffer_bytes = 64 * KiB;
  options.jobs = 2;
  const auto start = std::chrono::steady_clock::now();
  {
    Transport transport(options);
    auto hanging = transport.open({.urls = {server.url("/hangs")}, .label = "hangs"});
    auto paused = transport.open({.urls = {server.url("/big")}, .label = "paused"});
    auto queued = transport.open({.urls = {server.url("/big")}, .label = "queued"});
    std::vector<std::byte> buffer(1024);
    REQUIRE(hanging->read(buffer).ok());  // running: half the body in, then silence
    REQUIRE(paused->read(buffer).ok());   // running, its buffer full
    REQUIRE(transport.progress().size() == 3);

    hanging.reset();
    paused.reset();
    queued.reset();
    for (int i = 0; i < 100 && !transport.progress().empty(); ++i)
      std::this_thread::sleep_for(10ms);
    CHECK(transport.progress().empty());
  }
  CHECK(std::chrono::steady_clock::now() - start < 3s);
  CHECK(server.requests("/big") <= 2);
}

TEST_CASE("a stream that outlives its transport reads an error", "[net][transport]") {
  FaultServer server;
  server.serve("/hangs", payload(1 * MiB), {.stall_first = 1000});
  auto options = quick();
  options.stall_timeout = 30s;
  std::unique_ptr<ByteStream> stream;
  {
    Transport transport(options);
    stream = transport.open({.urls = {server.url("/hangs")}, .label = "orphan"});
  }
  const auto got = drain(*stream);
  REQUIRE(got.error);
  CHECK(got.error->message() == "cannot download orphan");
  CHECK(got.error->causes().at(0) == "the download was cancelled");
}

TEST_CASE("against nginx: exact bytes, resume with a Range, 404 falls back", "[net][transport]") {
  if (envkit::test::nginx_missing()) return;
  envkit::test::TempDir www;
  const auto body = payload(5 * MiB);
  www.write("pkgs/a.tar.xz", body);
  envkit::test::StaticHttpServer nginx(www.path());
  FaultServer mirror;
  mirror.serve("/a.tar.xz", body, {.cut_first = 100});
  auto options = quick();
  options.attempts = 1;
  options.buffer_bytes = 256 * KiB;
  Transport transport(options);

  const auto plain = download(transport, {.urls = {nginx.url("/pkgs/a.tar.xz")}});
  REQUIRE_FALSE(plain.error);
  CHECK(sha256_hex(plain.bytes) == sha256_hex(body));

  // Half the body from the broken mirror, the rest from nginx's 206.
  const auto resumed =
      download(transport,
               {.urls = {mirror.url("/a.tar.xz"), nginx.url("/nope"), nginx.url("/pkgs/a.tar.xz")},
                .expected_size = body.size()});
  REQUIRE_FALSE(resumed.error);
  CHECK(sha256_hex(resumed.bytes) == sha256_hex(body));

  // A slow reader with a small buffer against a real server.
  auto stream = transport.open({.urls = {nginx.url("/pkgs/a.tar.xz")}});
  const auto slow = drain(*stream, 32 * KiB, 1ms);
  REQUIRE_FALSE(slow.error);
  CHECK(sha256_hex(slow.bytes) == sha256_hex(body));
}

TEST_CASE("a 206 with the wrong Content-Range is asked again for the whole body",
          "[net][transport]") {
  FaultServer server;
  const auto body = payload(1 * MiB);
  server.serve("/bad-start", body, {.cut_first = 1, .wrong_content_range = 1});
  server.serve("/bad-total", body,
               {.cut_first = 1, .wrong_content_range = 1, .range_lie = Behaviour::RangeLie::total});
  Transport transport(quick());

  for (const std::string path : {"/bad-start", "/bad-total"}) {
    INFO(path);
    const auto got =
        download(transport, {.urls = {server.url(path)}, .expected_size = body.size()});
    REQUIRE_FALSE(got.error);
    CHECK(sha256_hex(got.bytes) == sha256_hex(body));
    // Cut, resumed with a Range, answered wrongly, asked again without one.
    const auto ranges = server.ranges(path);
    REQUIRE(ranges.size() == 3);
    CHECK(ranges[0].empty());
    CHECK(range_from(ranges[1]) > 0);
    CHECK(ranges[2].empty());
  }
}

TEST_CASE("a mirror whose ranges stay wrong hands over to the next URL", "[net][transport]") {
  FaultServer mirror, origin;
  const auto body = payload(1 * MiB);
  // Every answer a 206 from byte 0, asked for a range or not.
  mirror.serve("/m/a.whl", body,
               {.cut_first = 1, .wrong_content_range = 1000, .always_partial = true});
  origin.serve("/a.whl", body);
  Transport transport(quick());
  std::vector<std::string> failed;

  const auto got = download(transport, {.urls = {mirror.url("/m/a.whl"), origin.url("/a.whl")},
                                        .expected_size = body.size(),
                                        .on_url_failed = [&](const auto& url, const auto& why) {
                                          failed.push_back(url + " " + why);
                                        }});
  REQUIRE_FALSE(got.error);
  CHECK(sha256_hex(got.bytes) == sha256_hex(body));
  CHECK(mirror.requests("/m/a.whl") == 3);  // cut, a wrong range, a 206 to a whole-body request
  const auto ranges = origin.ranges("/a.whl");
  REQUIRE(ranges.size() == 1);
  CHECK(range_from(ranges[0]) > 0);  // the origin continued
  REQUIRE(failed.size() == 1);
  CHECK(failed[0] == mirror.url("/m/a.whl") +
                         " asked for the whole body, the server sent part of it (HTTP 206 "
                         "without a Range) (3 tries)");
}

TEST_CASE("file:// sources are regular files, read no further than the lock's size",
          "[net][transport]") {
  envkit::test::TempDir dir;
  const auto body = payload(256 * KiB);
  const auto file = "file://" + dir.write("m/a.tar.xz", body).string();
  Transport transport(quick());
  const auto refused = [&](const std::string& url, std::optional<std::uint64_t> size) {
    const auto start = std::chrono::steady_clock::now();
    const auto got = download(transport, {.urls = {url}, .expected_size = size});
    CHECK(std::chrono::steady_clock::now() - start < 2s);
    REQUIRE(got.error);
    return got.error->to_string();
  };

  CHECK_THAT(refused("file:///dev/zero", body.size()),
             Catch::Contains("`file:///dev/zero`: `/dev/zero` is a character device; envkit "
                             "reads local sources only from regular files"));
  const auto fifo = dir.path() / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);  // no writer: opening it would wait forever
  CHECK_THAT(refused("file://" + fifo.string(), std::nullopt), Catch::Contains("is a FIFO"));
  CHECK_THAT(refused("file://" + (dir.path() / "m").string(), std::nullopt),
             Catch::Contains("is a directory"));
  CHECK_THAT(refused(file, body.size() - 1),
             Catch::Contains("the file has " + std::to_string(body.size()) +
                             " bytes, the lock records " + std::to_string(body.size() - 1)));

  SECTION("a file that grows while read is an error at the lock's size") {
    auto options = quick();
    options.buffer_bytes = 16 * KiB;  // the reading thread stays close behind the reader
    Transport slow(options);
    auto stream = slow.open({.urls = {file}, .expected_size = body.size()});
    std::vector<std::byte> first(1024);
    REQUIRE(stream->read(first).ok());
    {
      std::ofstream grow(file.substr(7), std::ios::app | std::ios::binary);
      grow << std::string(1 * MiB, 'x');
    }
    const auto got = drain(*stream);
    REQUIRE(got.error);
    CHECK_THAT(got.error->to_string(),
               Catch::Contains("the file has more than the " + std::to_string(body.size()) +
                               " bytes the lock records"));
    CHECK(got.bytes.size() + first.size() <= body.size());
  }
}

TEST_CASE("a URL that fails before a file:// one is reported, not skipped silently",
          "[net][transport]") {
  envkit::test::TempDir dir;
  const auto body = payload(64 * KiB);
  const auto file = "file://" + dir.write("m/a.tar.xz", body).string();
  const auto devices = std::string("file:///dev/zero");
  FaultServer server;
  Transport transport(quick());
  std::vector<std::string> failed;

  const auto got = download(transport, {.urls = {devices, server.url("/missing"), file},
                                        .expected_size = body.size(),
                                        .on_url_failed = [&](const auto& url, const auto& why) {
                                          failed.push_back(url + " " + why);
                                        }});
  REQUIRE_FALSE(got.error);
  CHECK(sha256_hex(got.bytes) == sha256_hex(body));
  REQUIRE(failed.size() == 2);
  CHECK_THAT(failed[0], Catch::StartsWith(devices + " `/dev/zero` is a character device"));
  CHECK(failed[1] == server.url("/missing") + " the server answered HTTP 404");
}

TEST_CASE("plain http to another machine is warned about once per host, loopback is not",
          "[net][transport]") {
  CHECK(envkit::net::is_plain_http_remote("http://mirror.lan/a.whl"));
  CHECK(envkit::net::is_plain_http_remote("HTTP://user:pw@10.0.0.5:8080/a"));
  CHECK_FALSE(envkit::net::is_plain_http_remote("https://mirror.lan/a.whl"));
  CHECK_FALSE(envkit::net::is_plain_http_remote("http://127.0.0.1:8080/a"));
  CHECK(envkit::net::is_plain_http_remote("http://127.mirror.lan/a"));
  CHECK_FALSE(envkit::net::is_plain_http_remote("http://localhost/a"));
  CHECK_FALSE(envkit::net::is_plain_http_remote("http://[::1]:80/a"));
  CHECK_FALSE(envkit::net::is_plain_http_remote("file:///srv/a"));

  // The fault server as the proxy: libcurl asks it for the remote URL itself.
  FaultServer proxy;
  const auto body = payload(16 * KiB);
  proxy.serve("http://mirror.example/a.whl", body);
  proxy.serve("http://mirror.example/b.whl", body);
  envkit::test::ScopedEnv via("http_proxy", proxy.url(""));
  proxy.serve("/local", body);
  auto options = quick();
  std::vector<std::string> warnings;
  options.on_warning = [&](const std::string& line) { warnings.push_back(line); };
  Transport transport(options);

  for (const auto* path : {"/a.whl", "/b.whl"}) {
    const auto got =
        download(transport, {.urls = {std::string("http://mirror.example") + path}, .label = path});
    REQUIRE_FALSE(got.error);
  }
  REQUIRE_FALSE(download(transport, {.urls = {proxy.url("/local")}}).error);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] ==
        "warning: /a.whl is downloaded over plain http from mirror.example "
        "(`http://mirror.example/a.whl`): anyone on the way can read or alter it, and only the "
        "lock's sha256 catches that; use https where the server has it");
}

TEST_CASE("an https download redirected to plain http is refused, naming both URLs",
          "[net][transport][tls]") {
  if (envkit::test::nginx_missing()) return;
  envkit::test::TempDir www;
  const auto tls = envkit::test::make_test_certificate(www.path());
  if (envkit::test::certificate_missing(tls)) return;
  const auto body = payload(64 * KiB);
  www.write("pkgs/a.tar.xz", body);
  FaultServer plain;
  plain.serve("/a.tar.xz", body);
  const envkit::test::StaticHttpServer nginx(www.path(), tls,
                                             {{"/down/a.tar.xz", plain.url("/a.tar.xz")}});
  auto options = quick();
  options.ca_file = tls->certificate;
  Transport transport(options);
  std::vector<std::string> failed;

  const auto downgraded = nginx.url("/down/a.tar.xz");
  const auto got = download(transport, {.urls = {downgraded, nginx.url("/pkgs/a.tar.xz")},
                                        .on_url_failed = [&](const auto& url, const auto& why) {
                                          failed.push_back(url + " " + why);
                                        }});
  REQUIRE_FALSE(got.error);  // the next URL served it
  CHECK(sha256_hex(got.bytes) == sha256_hex(body));
  CHECK(plain.requests("/a.tar.xz") == 0);  // never asked over http
  REQUIRE(failed.size() == 1);
  CHECK(failed[0] == downgraded + " refused the redirect from `" + downgraded +
                         "` to plain http `" + plain.url("/a.tar.xz") +
                         "`: an https download never goes on unencrypted");

  const auto alone = download(transport, {.urls = {downgraded}});
  REQUIRE(alone.error);
  CHECK_THAT(alone.error->to_string(),
             Catch::Contains("refused the redirect from `" + downgraded + "` to plain http"));

  // Documents (index pages, metadata) are fetched under the same rule.
  const auto document =
      envkit::net::fetch_text(downgraded, {.attempts = 1, .ca_file = tls->certificate});
  REQUIRE_FALSE(document.ok());
  CHECK_THAT(document.error().to_string(),
             Catch::Contains("refused the redirect from `" + downgraded + "` to plain http `" +
                             plain.url("/a.tar.xz") + "`"));
  CHECK(plain.requests("/a.tar.xz") == 0);

  // An http URL may still be redirected to https (and, on this machine, to http).
  const envkit::test::StaticHttpServer plain_nginx(www.path(), std::nullopt,
                                                   {{"/up/a.tar.xz", nginx.url("/pkgs/a.tar.xz")}});
  const auto upgraded = download(transport, {.urls = {plain_nginx.url("/up/a.tar.xz")}});
  REQUIRE_FALSE(upgraded.error);
  CHECK(sha256_hex(upgraded.bytes) == sha256_hex(body));
}
