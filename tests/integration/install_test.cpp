// `envkit install` end to end: the real binary downloads from nginx and from
// the fault-injecting server, verifies, unpacks and links into a prefix.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "envkit/core/sha256.hpp"
#include "envkit/sys/fs.hpp"
#include "install_support.hpp"
#include "support/fault_server.hpp"
#include "support/http_server.hpp"
#include "support/temp_dir.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST_CASE("install lays a redist archive out as a prefix, links intact", "[cli][install]") {
  if (nginx_missing()) return;
  const ServedFooProject served;
  const auto& project = served.project;
  const auto& built = served.built;

  const auto r = project.install({"--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto prefix = project.prefix();
  CHECK(read_text(prefix / "lib" / "libfoo.so") == "foo library 1.2.3\n");
  CHECK(fs::read_symlink(prefix / "lib" / "libfoo.so") == "libfoo.so.1");
  CHECK(fs::read_symlink(prefix / "lib" / "libfoo.so.1") == "libfoo.so.1.2.3");
  CHECK(read_text(prefix / "include" / "foo.h") == "int foo(void);\n");
  CHECK((fs::status(prefix / "bin" / "foo-tool").permissions() & fs::perms::owner_exec) !=
        fs::perms::none);
  CHECK(read_text(prefix / "share" / "licenses" / "cuda" / "foo" / "LICENSE") == "test licence\n");
  CHECK(fs::read_symlink(prefix / "lib64") == "lib");
  const auto report = json::parse(r.out);
  CHECK(report.at("changed") == true);
  CHECK(report.at("generation") == 1);
  CHECK(report.at("downloaded_bytes") == built.size);
  CHECK(report.at("added") == json::array({"cuda 12.4.1 (archive)"}));

  // `envkit list` shows it, with its files counted from the receipt.
  const auto list = project.envkit({"list", "--json"});
  REQUIRE(list.exit_code == 0);
  const auto listed = json::parse(list.out);
  CHECK(listed.at("packages").at(0).at("name") == "cuda");
  CHECK(listed.at("packages").at(0).at("version") == "12.4.1");
  CHECK(listed.at("packages").at(0).at("files") == 6);  // 3 files, 2 links, LICENSE
  const auto table = project.envkit({"list"});
  CHECK(table.out ==
        "name  version  build  from     files\n"
        "cuda  12.4.1   -      archive  6\n");
}

TEST_CASE("a second install with nothing changed does nothing", "[cli][install]") {
  if (nginx_missing()) return;
  const ServedFooProject served;
  const auto& project = served.project;
  REQUIRE(project.install().exit_code == 0);
  const auto target = fs::read_symlink(project.prefix());

  const auto again = project.install({"--json"});
  REQUIRE(again.exit_code == 0);
  CHECK(json::parse(again.out).at("changed") == false);
  CHECK_THAT(again.err, Catch::Contains("nothing to do"));
  CHECK(fs::read_symlink(project.prefix()) == target);
}

TEST_CASE("an upgrade replaces exactly the old package's files and keeps the user's",
          "[cli][install]") {
  if (nginx_missing()) return;
  InstallProject project;
  const RedistMirror mirror(project.dir.path() / "www");
  const auto old_foo = mirror.add_archive(library_component("foo", "1.2.3"));
  const auto new_foo = mirror.add_archive(library_component("foo", "1.3.0"));
  const auto bar = mirror.add_archive(library_component("bar", "2.0.0"));
  const StaticHttpServer server(mirror.root());
  const auto base = server.url("");
  project.lock({{"cuda", "12.4.1", {lock_artifact(old_foo, base)}},
                {"cudnn", "9.1.0", {lock_artifact(bar, base)}}});
  REQUIRE(project.install().exit_code == 0);
  std::ofstream(project.prefix() / "notes.txt") << "mine\n";

  project.lock({{"cuda", "12.4.1", {lock_artifact(new_foo, base)}}});
  const auto r = project.install({"--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto prefix = project.prefix();
  CHECK_FALSE(fs::exists(prefix / "lib" / "libfoo.so.1.2.3"));
  CHECK(read_text(prefix / "lib" / "libfoo.so") == "foo library 1.3.0\n");
  CHECK_FALSE(fs::exists(prefix / "lib" / "libbar.so"));  // cudnn left the lock
  CHECK_FALSE(fs::exists(prefix / "share" / "licenses" / "cudnn"));
  CHECK(read_text(prefix / "notes.txt") == "mine\n");
  const auto report = json::parse(r.out);
  CHECK(report.at("generation") == 2);
  CHECK(report.at("removed") == json::array({"cudnn 9.1.0"}));
  // Only the current generation is kept.
  CHECK(std::distance(fs::directory_iterator(prefix.parent_path() / ".env.generations"),
                      fs::directory_iterator()) == 1);
}

TEST_CASE("a checksum mismatch installs nothing and names both hashes and the URL",
          "[cli][install]") {
  InstallProject project;
  const RedistMirror mirror(project.dir.path() / "www");
  const auto good = mirror.add_archive(library_component("foo", "1.2.3"));
  FaultServer server;
  server.serve("/" + good.relative_path, read_text(mirror.root() / good.relative_path));
  project.lock({{"cuda", "12.4.1", {lock_artifact(good, server.url(""))}}});
  REQUIRE(project.install().exit_code == 0);

  FaultServer bad_server;
  const auto other = mirror.add_archive(library_component("foo", "1.2.4"));
  bad_server.serve("/" + other.relative_path, read_text(mirror.root() / other.relative_path),
                   {.wrong_bytes = true});
  project.lock({{"cuda", "12.4.1", {lock_artifact(other, bad_server.url(""))}}});
  const auto r = project.install();
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("checksum mismatch"));
  CHECK_THAT(r.err, Catch::Contains(other.sha256));
  CHECK_THAT(r.err, Catch::Contains(bad_server.url("/" + other.relative_path)));
  // The previous environment is untouched, and nothing of the bad download is cached.
  CHECK(read_text(project.prefix() / "lib" / "libfoo.so") == "foo library 1.2.3\n");
  const auto info = project.envkit({"cache", "info", "--json"});
  CHECK(json::parse(info.out).at("entries") == 1);
}

TEST_CASE("install rides out broken transfers: resets, 500s, 429s, short bodies",
          "[cli][install][faults]") {
  InstallProject project;
  const RedistMirror mirror(project.dir.path() / "www");
  FaultServer server;
  std::vector<specs::Artifact> artifacts;
  const std::vector<std::pair<std::string, Behaviour>> cases = {
      {"cut", {.cut_first = 2}},
      {"fail", {.fail_first = 2, .fail_status = 503}},
      {"busy", {.fail_first = 1, .fail_status = 429, .retry_after = "0"}},
      {"short", {.length_lie = -100}},
      {"norange", {.ranges = false, .cut_first = 1}},
      {"badrange", {.cut_first = 1, .wrong_content_range = 1}},
      {"badtotal",
       {.cut_first = 1, .wrong_content_range = 1, .range_lie = Behaviour::RangeLie::total}},
      {"stall", {.stall_first = 1}}};
  for (const auto& [name, behaviour] : cases) {
    const auto built = mirror.add_archive(library_component(name, "1.0.0"));
    server.serve("/" + built.relative_path, read_text(mirror.root() / built.relative_path),
                 behaviour);
    artifacts.push_back(lock_artifact(built, server.url("")));
  }
  project.lock({{"cuda", "12.4.1", artifacts}});
  const auto r = project.install();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (const auto& [name, behaviour] : cases)
    CHECK(read_text(project.prefix() / "lib" / ("lib" + name + ".so")) ==
          name + " library 1.0.0\n");
  // The cut transfer resumed where it broke instead of starting over.
  const auto ranges = server.ranges("/" + artifacts[0].url.substr(server.url("").size() + 1));
  REQUIRE(ranges.size() == 3);
  CHECK_THAT(ranges[1], Catch::StartsWith("bytes="));
  CHECK_THAT(r.err, !Catch::Contains("plain http"));  // 127.0.0.1 is this machine
}

TEST_CASE("a file:// source that is no regular file, or not the lock's size, fails at once",
          "[cli][install][faults]") {
  InstallProject project;
  const RedistMirror mirror(project.dir.path() / "www");
  const auto built = mirror.add_archive(library_component("foo", "1.2.3"));
  const auto archive = read_text(mirror.root() / built.relative_path);
  const auto fifo = project.dir.path() / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto longer = project.dir.write("longer.tar.xz", archive + "and more");
  for (const auto& [path, expected] : std::vector<std::pair<std::string, std::string>>{
           {"/dev/zero",
            "`/dev/zero` is a character device; envkit reads local sources only "
            "from regular files"},
           {fifo.string(), "`" + fifo.string() + "` is a FIFO"},
           {longer.string(), "the file has " + std::to_string(archive.size() + 8) +
                                 " bytes, the lock records " + std::to_string(archive.size())}}) {
    auto artifact = lock_artifact(built, "");
    artifact.url = "file://" + path;
    project.lock({{"cuda", "12.4.1", {artifact}}});
    const auto start = std::chrono::steady_clock::now();
    const auto r = project.install();
    INFO(r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("file://" + path) && Catch::Contains(expected));
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
  }
  CHECK_FALSE(fs::exists(project.prefix()));
}

TEST_CASE("credentials in URLs never reach messages, receipts or the cache", "[cli][install]") {
  if (nginx_missing()) return;
  InstallProject project;
  const RedistMirror mirror(project.dir.path() / "www");
  const auto good = mirror.add_archive(library_component("foo", "1.2.3"));
  const StaticHttpServer server(mirror.root());
  const auto with_credentials = "http://alice:s3cr3t@127.0.0.1:" + std::to_string(server.port());
  auto broken = lock_artifact(good, with_credentials);
  broken.sha256 = std::string(64, 'f');  // a mismatch, so the URL is printed
  project.lock({{"cuda", "12.4.1", {broken}}});
  const auto failed = project.install({"-v"});
  CHECK(failed.exit_code == 1);
  CHECK_THAT(failed.err, Catch::Contains("checksum mismatch"));
  CHECK_THAT(failed.err, !Catch::Contains("s3cr3t"));

  project.lock({{"cuda", "12.4.1", {lock_artifact(good, with_credentials)}}});
  const auto r = project.install({"-v", "--json"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err + r.out, !Catch::Contains("s3cr3t"));
  for (const auto& entry : fs::recursive_directory_iterator(project.dir.path())) {
    if (!entry.is_regular_file() || entry.path().extension() != ".json") continue;
    INFO(entry.path());
    CHECK_THAT(read_text(entry.path()), !Catch::Contains("s3cr3t"));
  }
}

TEST_CASE("over HTTPS the server is always verified, --cacert or SSL_CERT_FILE trusts a CA",
          "[cli][install][tls]") {
  if (nginx_missing()) return;
  InstallProject project;
  const auto tls = make_test_certificate(project.dir.path());
  if (certificate_missing(tls)) return;
  const RedistMirror mirror(project.dir.path() / "www");
  const auto built = mirror.add_archive(library_component("foo", "1.2.3"));
  const StaticHttpServer server(mirror.root(), tls);
  project.lock({{"cuda", "12.4.1", {lock_artifact(built, server.url(""))}}});

  const auto refused = project.envkit({"install", "--frozen"}, {{"SSL_CERT_FILE", std::nullopt}});
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.err, Catch::Contains("certificate"));
  CHECK_THAT(refused.err, Catch::Contains("SSL_CERT_FILE"));
  CHECK_FALSE(fs::exists(project.prefix()));

  const auto trusted = project.install({"--cacert", tls->certificate.string()});
  INFO(trusted.err);
  REQUIRE(trusted.exit_code == 0);
  CHECK(read_text(project.prefix() / "lib" / "libfoo.so") == "foo library 1.2.3\n");
  // libcurl and nginx agreed on HTTP/2 over TLS.
  CHECK_THAT(server.access_log(), Catch::Contains("HTTP/2.0 200 /" + built.relative_path));

  InstallProject other;
  other.lock({{"cuda", "12.4.1", {lock_artifact(built, server.url(""))}}});
  const auto by_variable =
      other.envkit({"install", "--frozen"}, {{"SSL_CERT_FILE", tls->certificate.string()}});
  INFO(by_variable.err);
  CHECK(by_variable.exit_code == 0);
}

TEST_CASE("progress: bars on a terminal, plain lines elsewhere, nothing with -q",
          "[cli][install][progress]") {
  if (program_missing("script")) return;  // util-linux's, to give envkit a terminal
  InstallProject project;
  const RedistMirror mirror(project.dir.path() / "www");
  auto slow = library_component("slow", "1.0.0");
  std::string noise(512 << 10, '\0');  // 512 KiB xz cannot shrink, served slowly
  std::uint32_t state = 7;
  for (auto& c : noise)
    c = static_cast<char>((state = state * 1664525u + 1013904223u) >> 24);
  slow.files.push_back({.path = "lib/libslow-data.so", .content = noise});
  const auto built = mirror.add_archive(slow);
  FaultServer server;
  server.serve("/" + built.relative_path, read_text(mirror.root() / built.relative_path),
               {.chunk_delay = std::chrono::milliseconds(25)});
  project.lock({{"cuda", "12.4.1", {lock_artifact(built, server.url(""))}}});

  // `script` runs envkit on a pseudo-terminal, as a user's shell would.
  const std::string command = std::string(ENVKIT_BINARY) + " -C " + project.root.string() +
                              " --cache-dir " + project.cache.string() + " install --frozen";
  // Not through run_envkit: the machine's driver is hidden here as it is there.
  auto on_terminal =
      sys::run_process({"script", "-qec", command, "/dev/null"},
                       {.env = {{"NO_COLOR", "1"}, {"ENVKIT_OVERRIDE_DRIVER", "none"}}});
  REQUIRE(on_terminal);
  INFO(on_terminal->out);
  REQUIRE(on_terminal->exit_code == 0);
  CHECK_THAT(on_terminal->out, Catch::Contains("slow of cuda 12.4.1 (archive)"));
  CHECK_THAT(on_terminal->out, Catch::Contains("[#"));
  CHECK_THAT(on_terminal->out, Catch::Contains("total "));
  CHECK_THAT(on_terminal->out, Catch::Contains("/s"));

  fs::remove_all(project.cache);
  const auto off_terminal = project.install({"--prefix", (project.dir.path() / "b").string()});
  REQUIRE(off_terminal.exit_code == 0);
  CHECK_THAT(off_terminal.err, !Catch::Contains("\x1b["));  // no cursor movement in logs
  CHECK_THAT(off_terminal.err, !Catch::Contains("[#"));

  fs::remove_all(project.cache);
  const auto quiet = project.install({"-q", "--prefix", (project.dir.path() / "c").string()});
  REQUIRE(quiet.exit_code == 0);
  CHECK(quiet.err.empty());
}

TEST_CASE("install --locked refuses a stale lock, --frozen a missing one, and not both at once",
          "[cli][install]") {
  InstallProject project;
  std::ofstream(project.root / "envkit.yaml") << "requires:\n  cuda: \"12.4\"\n";
  const auto missing = project.install();  // --frozen
  CHECK(missing.exit_code == 1);
  CHECK_THAT(missing.err, Catch::Contains("envkit.lock does not exist"));

  REQUIRE(project.envkit({"lock"}, {{"ENVKIT_OVERRIDE_DRIVER", "550.54.15"}}).exit_code == 0);
  std::ofstream(project.root / "envkit.yaml") << "requires:\n  cuda: \"12.2\"\n";
  const auto stale =
      project.envkit({"install", "--locked"}, {{"ENVKIT_OVERRIDE_DRIVER", "550.54.15"}});
  CHECK(stale.exit_code == 1);
  CHECK_THAT(stale.err, Catch::Contains("out of date"));
  CHECK_FALSE(fs::exists(project.prefix()));

  const auto both = project.envkit({"install", "--locked", "--frozen"});
  CHECK(both.exit_code == 2);
}

TEST_CASE("downloads go through the proxy the environment names", "[cli][install]") {
  InstallProject project;
  const RedistMirror mirror(project.dir.path() / "www");
  const auto built = mirror.add_archive(library_component("foo", "1.2.3"));
  // A proxy is asked for the absolute URL; the fault server answers it as a path.
  const std::string original = "http://downloads.invalid/redist/" + built.relative_path;
  FaultServer proxy;
  proxy.serve(original, read_text(mirror.root() / built.relative_path));
  project.lock({{"cuda", "12.4.1", {lock_artifact(built, "http://downloads.invalid/redist")}}});
  const auto r = project.envkit(
      {"install", "--frozen"},
      {{"http_proxy", proxy.url("")}, {"no_proxy", std::nullopt}, {"NO_PROXY", std::nullopt}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(proxy.requests(original) == 1);
  CHECK(read_text(project.prefix() / "lib" / "libfoo.so") == "foo library 1.2.3\n");
  // Plain http to another machine is said, naming the host (the servers on 127.0.0.1 are not).
  CHECK_THAT(r.err, Catch::Contains("is downloaded over plain http from downloads.invalid"));

  // A proxy that is not there: the error says the download went through it, credentials hidden.
  InstallProject other;
  other.lock({{"cuda", "12.4.1", {lock_artifact(built, "http://downloads.invalid/redist")}}});
  const auto failed =
      other.envkit({"install", "--frozen"}, {{"http_proxy", "http://bob:pw@127.0.0.1:9"},
                                             {"no_proxy", std::nullopt},
                                             {"NO_PROXY", std::nullopt}});
  CHECK(failed.exit_code == 1);
  CHECK_THAT(
      failed.err,
      Catch::Contains("envkit went through the proxy http://***@127.0.0.1:9 (from $http_proxy)"));
  CHECK_THAT(failed.err, !Catch::Contains("pw@"));
}

TEST_CASE("credentials for a mirror come from ~/.netrc", "[cli][install]") {
  InstallProject project;
  const RedistMirror mirror(project.dir.path() / "www");
  const auto built = mirror.add_archive(library_component("foo", "1.2.3"));
  FaultServer server;
  server.serve("/" + built.relative_path, read_text(mirror.root() / built.relative_path));
  project.lock({{"cuda", "12.4.1", {lock_artifact(built, server.url(""))}}});
  const auto home = project.dir.path() / "home";
  project.dir.write("home/.netrc", "machine 127.0.0.1 login alice password s3cr3t\n");
  const auto r = project.envkit({"install", "--frozen", "-v"}, {{"HOME", home.string()}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // The host was asked whether it answers (HEAD /), then the file was downloaded once.
  std::vector<std::string> downloads;
  for (const auto& head : server.heads()) {
    if (head.starts_with("GET /" + built.relative_path + " ")) downloads.push_back(head);
  }
  REQUIRE(downloads.size() == 1);
  // Basic base64("alice:s3cr3t"), sent to the server and printed nowhere.
  CHECK_THAT(downloads[0], Catch::Contains("Authorization: Basic YWxpY2U6czNjcjN0"));
  CHECK_THAT(r.err, !Catch::Contains("s3cr3t"));
}

TEST_CASE("mirrors are tried first, and the original URL when they fail", "[cli][install]") {
  if (nginx_missing()) return;
  InstallProject project;
  const RedistMirror origin(project.dir.path() / "origin");
  const auto built = origin.add_archive(library_component("foo", "1.2.3"));
  // The lock's URL is on a host nobody serves; the mirror has it at MIRROR/HOST/PATH.
  const std::string original = "http://downloads.invalid/redist";
  copy_to_mirror(origin, built, project.dir.path() / "mirror", original);
  const StaticHttpServer server(project.dir.path() / "mirror");
  project.lock({{"cuda", "12.4.1", {lock_artifact(built, original)}}});

  const auto empty = project.dir.path() / "empty-mirror";
  fs::create_directories(empty);
  const StaticHttpServer empty_server(empty);
  const auto r = project.install({"--mirror", empty_server.url("/"), "--mirror", server.url("")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(read_text(project.prefix() / "lib" / "libfoo.so") == "foo library 1.2.3\n");
  // The mirror that failed is a warning, though the next one delivered.
  CHECK_THAT(r.err, Catch::Contains("warning: ") &&
                        Catch::Contains(empty_server.url("/downloads.invalid/redist/")) &&
                        Catch::Contains("trying the next URL"));

  // Unreachable everywhere: the error names every URL it tried.
  InstallProject other;
  other.lock({{"cuda", "12.4.1", {lock_artifact(built, original)}}});
  const auto failed = other.install({"--mirror", empty_server.url("")});
  CHECK(failed.exit_code == 1);
  CHECK_THAT(failed.err, Catch::Contains(empty_server.url("/downloads.invalid/redist/")));
  CHECK_THAT(failed.err, Catch::Contains("http://downloads.invalid/redist/"));
}

TEST_CASE("a package whose archives are unreachable comes from its wheels instead",
          "[cli][install]") {
  if (nginx_missing()) return;
  InstallProject project;
  const RedistMirror mirror(project.dir.path() / "www");
  FixtureComponent runtime{
      .name = "cuda_cudart",
      .version = "13.0.96",
      .files = {{.path = "lib/libcudart.so.13", .content = "runtime\n"},
                {.path = "include/cuda_runtime_api.h", .content = "// api\n"}}};
  const auto archive = mirror.add_archive(runtime);
  const auto wheel = mirror.add_wheel(runtime, "nvidia_cuda_runtime");
  fs::remove(mirror.root() / archive.relative_path);  // the archive host is down
  const StaticHttpServer server(mirror.root());
  project.lock({{"cuda",
                 "13.0.2",
                 {lock_artifact(archive, server.url("")), lock_artifact(wheel, server.url(""))}}});

  const auto r = project.install({"--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto report = json::parse(r.out);
  CHECK(report.at("added") == json::array({"cuda 13.0.2 (wheel)"}));
  CHECK(report.at("fell_back").size() == 1);
  const auto prefix = project.prefix();
  CHECK(read_text(prefix / "lib" / "libcudart.so.13") == "runtime\n");
  // Wheels hold no symlinks: envkit made the development link itself.
  CHECK(fs::read_symlink(prefix / "lib" / "libcudart.so") == "libcudart.so.13");
  CHECK(read_text(prefix / "share" / "licenses" / "cuda" / "cuda_cudart" / "License.txt") ==
        "test licence\n");
  CHECK(fs::read_symlink(prefix / "targets" / "x86_64-linux" / "include") == "../../include");
}

TEST_CASE("an offline install uses the cache only and names what is missing", "[cli][install]") {
  if (nginx_missing()) return;
  InstallProject project;
  const RedistMirror mirror(project.dir.path() / "www");
  const auto built = mirror.add_archive(library_component("foo", "1.2.3"));
  std::optional<StaticHttpServer> server(std::in_place, mirror.root());
  const auto base = server->url("");
  project.lock({{"cuda", "12.4.1", {lock_artifact(built, base)}}});

  const auto missing = project.install({"--offline"});
  CHECK(missing.exit_code == 1);
  CHECK_THAT(missing.err, Catch::Contains("not in the cache"));
  CHECK_THAT(missing.err, Catch::Contains(built.relative_path));
  CHECK_FALSE(fs::exists(project.prefix()));

  REQUIRE(project.install().exit_code == 0);
  server.reset();  // no network from here on
  const auto elsewhere = project.dir.path() / "second-env";
  const auto r = project.install({"--offline", "--prefix", elsewhere.string(), "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(json::parse(r.out).at("downloaded_bytes") == 0);
  CHECK(read_text(elsewhere / "lib" / "libfoo.so") == "foo library 1.2.3\n");
}

TEST_CASE("prefixes with different CUDA versions live side by side", "[cli][install]") {
  if (nginx_missing()) return;
  InstallProject project;
  const RedistMirror mirror(project.dir.path() / "www");
  const auto v12 = mirror.add_archive(library_component("cudart", "12.4.127"));
  const auto v13 = mirror.add_archive(library_component("cudart", "13.0.96"));
  const StaticHttpServer server(mirror.root());
  project.lock({{"cuda", "12.4.1", {lock_artifact(v12, server.url(""))}}});
  const auto first = project.dir.path() / "envs" / "cuda12";
  REQUIRE(project.install({"--prefix", first.string()}).exit_code == 0);
  project.lock({{"cuda", "13.0.2", {lock_artifact(v13, server.url(""))}}});
  const auto second = project.dir.path() / "envs" / "cuda13";
  REQUIRE(project.install({"--prefix", second.string()}).exit_code == 0);
  CHECK(read_text(first / "lib" / "libcudart.so") == "cudart library 12.4.127\n");
  CHECK(read_text(second / "lib" / "libcudart.so") == "cudart library 13.0.96\n");
}

TEST_CASE("files come from the cache by hard link, and the cache's copies are read-only",
          "[cli][install]") {
  if (nginx_missing()) return;
  const ServedFooProject served;
  const auto& project = served.project;
  const auto r = project.install({"--json"});
  REQUIRE(r.exit_code == 0);
  const auto mode = json::parse(r.out).at("link_mode").get<std::string>();
  CHECK((mode == "reflink" || mode == "hardlink" || mode == "copy"));
  struct stat info {};
  REQUIRE(::stat((project.prefix() / "include" / "foo.h").c_str(), &info) == 0);
  if (mode == "hardlink") {
    CHECK(info.st_nlink == 2);
    CHECK((info.st_mode & 0222) == 0);
  }
  const auto copied = project.dir.path() / "copied";
  const auto c = project.install({"--prefix", copied.string(), "--link-mode", "copy", "--json"});
  REQUIRE(c.exit_code == 0);
  CHECK(json::parse(c.out).at("link_mode") == "copy");
  REQUIRE(::stat((copied / "include" / "foo.h").c_str(), &info) == 0);
  CHECK(info.st_nlink == 1);
}

TEST_CASE("a cold install loads libcurl and libarchive, a warm one neither", "[cli][install]") {
  // Both are loaded the first time they are needed (envkit/sys/lazy_library.hpp):
  // their ~30 libraries were most of every start. The loader's trace names
  // each library it loads.
  if (nginx_missing()) return;
  const ServedFooProject served;
  const auto& project = served.project;
  const std::map<std::string, std::optional<std::string>> traced = {{"LD_DEBUG", "files"}};
  const auto cold = project.install({}, traced);
  REQUIRE(cold.exit_code == 0);
  CHECK_THAT(cold.err, Catch::Contains("libcurl.so.4") && Catch::Contains("libarchive.so.13"));
  const auto fresh = project.dir.path() / "second";
  const auto warm = project.install({"--prefix", fresh.string()}, traced);
  REQUIRE(warm.exit_code == 0);
  CHECK(read_text(fresh / "include" / "foo.h") == "int foo(void);\n");
  CHECK_THAT(warm.err, Catch::Contains("libc.so.6"));
  CHECK_THAT(warm.err, !Catch::Contains("libcurl") && !Catch::Contains("libarchive"));
}

TEST_CASE("restrictive modes survive the cache and the prefix, only write bits go",
          "[cli][install]") {
  if (nginx_missing()) return;
  InstallProject project;
  const RedistMirror mirror(project.dir.path() / "www");
  auto component = library_component("foo", "1.2.3");
  component.files.push_back({.path = "include/private.h", .content = "secret\n", .mode = 0600});
  component.files.push_back(
      {.path = "bin/group-tool", .content = "#!/bin/sh\n", .executable = true, .mode = 0750});
  const auto built = mirror.add_archive(component);
  const StaticHttpServer server(mirror.root());
  project.lock({{"cuda", "12.4.1", {lock_artifact(built, server.url(""))}}});
  const auto mode_of = [](const fs::path& path) {
    struct stat info {};
    REQUIRE(::stat(path.c_str(), &info) == 0);
    return static_cast<unsigned>(info.st_mode & 07777);
  };
  REQUIRE(project.install({"--link-mode", "hardlink"}).exit_code == 0);
  // Hard links share the cache's file: read-only, and no more readable than the archive said.
  CHECK(mode_of(project.prefix() / "include/private.h") == 0400);
  CHECK(mode_of(project.prefix() / "bin/group-tool") == 0550);
  CHECK(mode_of(project.prefix() / "include/foo.h") == 0444);
  CHECK(mode_of(project.prefix() / "bin/foo-tool") == 0555);
  const auto copied = project.dir.path() / "copied";
  const auto saved = ::umask(022);
  const auto c = project.install({"--prefix", copied.string(), "--link-mode", "copy"});
  ::umask(saved);
  REQUIRE(c.exit_code == 0);
  // A copy is the prefix's own: its owner may write it, others get nothing more.
  CHECK(mode_of(copied / "include/private.h") == 0600);
  CHECK(mode_of(copied / "bin/group-tool") == 0750);
  CHECK(mode_of(copied / "include/foo.h") == 0644);
  CHECK(mode_of(copied / "bin/foo-tool") == 0755);
}

TEST_CASE("two packages writing one path with different content is an error naming both",
          "[cli][install]") {
  if (nginx_missing()) return;
  InstallProject project;
  const RedistMirror mirror(project.dir.path() / "www");
  auto first = library_component("foo", "1.0.0");
  auto second = library_component("bar", "1.0.0");
  second.files.push_back({.path = "include/foo.h", .content = "int other(void);\n"});
  const auto a = mirror.add_archive(first);
  const auto b = mirror.add_archive(second);
  const StaticHttpServer server(mirror.root());
  project.lock({{"cuda", "12.4.1", {lock_artifact(a, server.url(""))}},
                {"cudnn", "9.1.0", {lock_artifact(b, server.url(""))}}});
  const auto r = project.install();
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("`cuda` and `cudnn` both install"));
  CHECK_THAT(r.err, Catch::Contains("include/foo.h"));
  CHECK_FALSE(fs::exists(project.prefix()));
}

TEST_CASE("a runfile locked before envkit unpacked runfiles asks for a new lock",
          "[cli][install]") {
  InstallProject project;
  specs::Artifact runfile;
  runfile.component = "cuda";
  runfile.kind = specs::ArtifactKind::runfile;
  runfile.url =
      "https://developer.download.nvidia.com/compute/cuda/11.2.2/local_installers/"
      "cuda_11.2.2_460.32.03_linux.run";
  runfile.sha256 = std::string(64, 'a');
  runfile.format = "run";
  runfile.layout = specs::Layout::none;
  project.lock({{"cuda", "11.2.2", {runfile}}});
  const auto r = project.install();
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("cuda 11.2.2: envkit.lock does not say how to unpack its "
                                    "runfile"));
  CHECK_THAT(r.err, Catch::Contains("layout: none"));
  CHECK_THAT(r.err, Catch::Contains("run `envkit lock`"));
  CHECK_FALSE(fs::exists(project.prefix()));
}

TEST_CASE("cache info, prune and clean", "[cli][install][cache]") {
  if (nginx_missing()) return;
  InstallProject project;
  const RedistMirror mirror(project.dir.path() / "www");
  const auto foo = mirror.add_archive(library_component("foo", "1.2.3"));
  const auto bar = mirror.add_archive(library_component("bar", "2.0.0"));
  const StaticHttpServer server(mirror.root());
  project.lock({{"cuda", "12.4.1", {lock_artifact(foo, server.url(""))}},
                {"cudnn", "9.1.0", {lock_artifact(bar, server.url(""))}}});
  REQUIRE(project.install().exit_code == 0);
  project.lock({{"cuda", "12.4.1", {lock_artifact(foo, server.url(""))}}});
  REQUIRE(project.install().exit_code == 0);

  auto info = json::parse(project.envkit({"cache", "info", "--json"}).out);
  CHECK(info.at("entries") == 2);
  CHECK(info.at("prefixes").size() == 1);
  const auto pruned = project.envkit({"cache", "prune", "--json"});
  REQUIRE(pruned.exit_code == 0);
  CHECK(json::parse(pruned.out).at("removed") == 1);  // bar: no prefix uses it now
  info = json::parse(project.envkit({"cache", "info", "--json"}).out);
  CHECK(info.at("entries") == 1);

  const auto cleaned = project.envkit({"cache", "clean", "--json"});
  REQUIRE(cleaned.exit_code == 0);
  CHECK(json::parse(cleaned.out).at("removed") == 1);
  // The prefix does not depend on the cache's entries.
  CHECK(read_text(project.prefix() / "lib" / "libfoo.so") == "foo library 1.2.3\n");
  // And a later change still works: the kept package comes from the prefix itself.
  const auto baz = mirror.add_archive(library_component("baz", "1.0.0"));
  project.lock({{"cuda", "12.4.1", {lock_artifact(foo, server.url(""))}},
                {"zlib", "1.3.1", {lock_artifact(baz, server.url(""))}}});
  const auto r = project.install({"--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(json::parse(r.out).at("downloaded_bytes") == baz.size);
  CHECK(read_text(project.prefix() / "lib" / "libfoo.so") == "foo library 1.2.3\n");
}

TEST_CASE("a full disk is a clear error and the previous environment stays", "[cli][install]") {
  if (nginx_missing()) return;
  InstallProject project;
  const SmallDisk disk(project.dir.path() / "small");
  if (small_disk_missing(disk)) return;
  const RedistMirror mirror(project.dir.path() / "www");
  const auto small = mirror.add_archive(library_component("foo", "1.2.3"));
  auto big = library_component("big", "1.0.0");
  const auto noise = incompressible(3 << 20, 12345);  // 3 MiB that xz cannot shrink away
  big.files.push_back({.path = "lib/libbig-data.so", .content = noise});
  const auto large = mirror.add_archive(big);
  const StaticHttpServer server(mirror.root());
  const auto prefix = project.dir.path() / "small" / "env";
  project.lock({{"cuda", "12.4.1", {lock_artifact(small, server.url(""))}}});
  const auto first = project.install({"--prefix", prefix.string()});
  INFO(first.err);
  REQUIRE(first.exit_code == 0);

  project.lock({{"cuda", "12.4.1", {lock_artifact(large, server.url(""))}}});
  const auto r = project.install({"--prefix", prefix.string()});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("No space left on device"));
  CHECK_THAT(r.err, Catch::Contains("previous environment is untouched"));
  CHECK(read_text(prefix / "lib" / "libfoo.so") == "foo library 1.2.3\n");
  // The half-built generation gave its space back.
  CHECK(std::distance(fs::directory_iterator(project.dir.path() / "small" / ".env.generations"),
                      fs::directory_iterator()) == 1);
}

TEST_CASE("an unwritable cache is a clear error, and the prefix is untouched", "[cli][install]") {
  InstallProject project;
  const RedistMirror mirror(project.dir.path() / "www");
  const auto foo = mirror.add_archive(library_component("foo", "1.2.3"));
  project.lock({{"cuda", "12.4.1", {lock_artifact(foo, "http://127.0.0.1:9")}}});
  // /proc refuses new folders even to root.
  const auto r = run_envkit({.args = {"-C", project.root.string(), "--cache-dir",
                                      "/proc/envkit-cache", "install", "--frozen"}});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("/proc/envkit-cache"));
  CHECK_THAT(r.err, Catch::Contains("not writable"));
  CHECK_THAT(r.err, Catch::Contains("--cache-dir"));
  CHECK_FALSE(fs::exists(project.prefix()));
}

}  // namespace
}  // namespace envkit::test
