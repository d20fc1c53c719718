// `envkit install` of a package built from source (zlib's kind): the real
// binary downloads a generated tiny C library's tarball from nginx, builds it
// with the host's compiler into the cache and links it into the prefix.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "install_support.hpp"
#include "support/http_server.hpp"
#include "support/temp_dir.hpp"
#include "support/tiny_library.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A project with its own cache; tarballs are served from www/.
struct SourceProject {
  TempDir dir;
  fs::path root = dir.path() / "project";
  fs::path cache = dir.path() / "cache";
  fs::path www = dir.path() / "www";

  SourceProject() { fs::create_directories(root); }
  [[nodiscard]] fs::path prefix() const { return root / ".envkit" / "env"; }
  [[nodiscard]] fs::path store() const { return cache / "store" / "v1"; }

  // tiny-<version>.tar.gz in www/, made from a generated tree.
  [[nodiscard]] Tarball tarball(const TinyLibrary& tiny) const {
    const auto tree = write_tiny_source(dir.path() / "trees" / tiny.version, tiny);
    return pack_tarball(tree, www / ("tiny-" + tiny.version + ".tar.gz"));
  }
  // A lock whose package `name` is built from `tarball`, served by `server`.
  void lock(const std::string& name, const std::string& version, const Tarball& tarball,
            const StaticHttpServer& server,
            std::optional<specs::BuildSystem> build_system = specs::BuildSystem::configure) const {
    specs::Artifact artifact;
    artifact.platform = specs::Platform::linux_x86_64;
    artifact.component = name;
    artifact.kind = specs::ArtifactKind::source;
    artifact.url = server.url("/" + tarball.path.filename().string());
    artifact.sha256 = tarball.sha256;
    artifact.size = tarball.size;
    artifact.format = "tar.gz";
    artifact.layout = specs::Layout::source_tree;
    artifact.build_system = build_system;
    std::ofstream(root / "envkit.lock") << lock_text({{name, version, {artifact}}});
  }
  [[nodiscard]] sys::ProcessOutput install(
      std::vector<std::string> extra = {},
      std::map<std::string, std::optional<std::string>> env = {}) const {
    std::vector<std::string> args = {"-C",           root.string(), "--cache-dir",
                                     cache.string(), "install",     "--frozen"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_envkit({.args = args, .env = env, .timeout = std::chrono::minutes(5)});
  }
  [[nodiscard]] json receipt(const std::string& name) const {
    return json::parse(read_text(prefix() / ".envkit" / "receipts" / (name + ".json")));
  }
};

std::vector<std::string> receipt_paths(const json& receipt) {
  std::vector<std::string> paths;
  for (const auto& file : receipt.at("files"))
    paths.push_back(file.at("path").get<std::string>());
  return paths;
}

fs::file_time_type modified(const fs::path& path) {
  return fs::last_write_time(path);
}

TEST_CASE("install builds a source package with the host's compiler and links it into the prefix",
          "[cli][install][source]") {
  if (nginx_missing() || build_tools_missing()) return;
  SourceProject project;
  const auto tarball = project.tarball({});
  const StaticHttpServer server(project.www);
  project.lock("zlib", "1.3.1", tarball, server);

  const auto r = project.install({"--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto report = json::parse(r.out);
  CHECK(report.at("added") == json::array({"zlib 1.3.1 (source)"}));
  CHECK(report.at("skipped").empty());
  CHECK(report.at("downloaded_bytes") == tarball.size);

  // The prefix's library is a real ELF that loads and answers.
  const auto prefix = project.prefix();
  CHECK(call_tiny_answer(prefix / "lib" / "libtiny.so") == 42);
  CHECK(fs::read_symlink(prefix / "lib" / "libtiny.so.1") == "libtiny.so.1.0");
  CHECK(read_text(prefix / "include" / "tiny.h") == "int tiny_answer(void);\n");

  // Its receipt lists every file, and the cache entry it came from.
  const auto receipt = project.receipt("zlib");
  CHECK(receipt.at("packaging") == "source");
  const auto paths = receipt_paths(receipt);
  for (const auto* path : {"lib/libtiny.so", "lib/libtiny.so.1", "lib/libtiny.so.1.0",
                           "include/tiny.h", "lib/pkgconfig/tiny.pc"}) {
    CHECK(std::find(paths.begin(), paths.end(), path) != paths.end());
  }
  const auto entry = receipt.at("artifacts").at(0).at("entry").get<std::string>();
  CHECK_THAT(entry, Catch::StartsWith(tarball.sha256 + "-source-"));
  const auto entry_dir = project.store() / "entries" / entry;
  CHECK(fs::is_regular_file(entry_dir / "lib" / "libtiny.so.1.0"));
  // pkg-config's prefix= names the cache entry the build was configured for.
  CHECK_THAT(read_text(prefix / "lib" / "pkgconfig" / "tiny.pc"),
             Catch::StartsWith("prefix=" + entry_dir.string() + "\n"));
  // The build log is kept; the scratch folders are gone.
  const auto log = project.store() / "logs" / (entry + ".log");
  CHECK_THAT(read_text(log), Catch::Contains("install DESTDIR="));
  CHECK(fs::is_empty(project.store() / "tmp"));

  const auto list = run_envkit({.args = {"-C", project.root.string(), "--cache-dir",
                                         project.cache.string(), "list", "--json"}});
  REQUIRE(list.exit_code == 0);
  CHECK(json::parse(list.out).at("packages").at(0).at("packaging") == "source");

  SECTION("a second install is a no-op") {
    const auto before = modified(log);
    const auto again = project.install({"--json"});
    INFO(again.err);
    REQUIRE(again.exit_code == 0);
    CHECK(json::parse(again.out).at("changed") == false);
    CHECK(modified(log) == before);
  }
  SECTION("--reinstall and another prefix take the build from the cache, not a new build") {
    const auto before = modified(log);
    const auto log_text = read_text(log);
    const auto reinstalled = project.install({"--reinstall", "--json"});
    INFO(reinstalled.err);
    REQUIRE(reinstalled.exit_code == 0);
    CHECK(json::parse(reinstalled.out).at("added") == json::array({"zlib 1.3.1 (source)"}));
    CHECK(json::parse(reinstalled.out).at("downloaded_bytes") == 0);

    const auto other = project.dir.path() / "other-env";
    const auto elsewhere = project.install({"--prefix", other.string(), "--json"});
    INFO(elsewhere.err);
    REQUIRE(elsewhere.exit_code == 0);
    CHECK(json::parse(elsewhere.out).at("downloaded_bytes") == 0);
    CHECK(call_tiny_answer(other / "lib" / "libtiny.so") == 42);
    // Not built again: the log was not rewritten.
    CHECK(modified(log) == before);
    CHECK(read_text(log) == log_text);
  }
}

TEST_CASE("a failing source build names the step, shows the log's tail, and changes nothing",
          "[cli][install][source]") {
  if (nginx_missing() || build_tools_missing()) return;
  SourceProject project;
  const auto good = project.tarball({});
  const auto broken = project.tarball({.version = "1.1", .broken = true});
  const StaticHttpServer server(project.www);
  project.lock("zlib", "1.3.1", good, server);
  const auto first = project.install();
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  const auto generation = fs::read_symlink(project.prefix());
  const auto receipt = read_text(project.prefix() / ".envkit" / "receipts" / "zlib.json");
  const auto state = read_text(project.prefix() / ".envkit" / "state.json");

  project.lock("zlib", "1.3.2", broken, server);
  const auto r = project.install();
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("cannot build zlib 1.3.2 from source: `make` failed"));
  CHECK_THAT(r.err, Catch::Contains("the last lines of its output:"));
  CHECK_THAT(r.err, Catch::Contains("tiny.c"));  // the compiler's complaint
  CHECK_THAT(r.err, Catch::Contains("the whole log: " + (project.store() / "logs").string()));
  const auto at = r.err.find("the whole log: ");
  REQUIRE(at != std::string::npos);
  const auto line_end = r.err.find('\n', at);
  const fs::path log = r.err.substr(at + 15, line_end - at - 15);
  CHECK_THAT(read_text(log), Catch::Contains("[exit status 2]"));

  // The prefix is exactly as it was: same generation, files and receipts.
  CHECK(fs::read_symlink(project.prefix()) == generation);
  CHECK(read_text(project.prefix() / ".envkit" / "receipts" / "zlib.json") == receipt);
  CHECK(read_text(project.prefix() / ".envkit" / "state.json") == state);
  CHECK(call_tiny_answer(project.prefix() / "lib" / "libtiny.so") == 42);
  CHECK(std::distance(fs::directory_iterator(project.root / ".envkit" / ".env.generations"),
                      fs::directory_iterator()) == 1);
  // Nothing half-made stays in the cache.
  CHECK(fs::is_empty(project.store() / "tmp"));
  CHECK_FALSE(fs::exists(project.store() / "entries" / (log.stem().string() + ".json")));

  // `cache clean` takes the failed build's log too.
  const auto clean = run_envkit({.args = {"-C", project.root.string(), "--cache-dir",
                                          project.cache.string(), "cache", "clean"}});
  INFO(clean.err);
  CHECK(clean.exit_code == 0);
  CHECK_FALSE(fs::exists(log));
}

TEST_CASE("a source build without a compiler says to install build-essential",
          "[cli][install][source]") {
  SourceProject project;
  const TinyLibrary tiny;
  const auto tarball = pack_tarball(write_tiny_source(project.dir.path() / "trees", tiny),
                                    project.www / "tiny-1.0.tar.gz");
  specs::Artifact artifact;
  artifact.component = "zlib";
  artifact.kind = specs::ArtifactKind::source;
  // There, but never read: the compiler comes first. (A URL whose host does not answer would
  // have the machine's own zlib stand in: docs/install.md#sources-and-reachability.)
  artifact.url = "file://" + tarball.path.string();
  artifact.sha256 = tarball.sha256;
  artifact.format = "tar.gz";
  artifact.layout = specs::Layout::source_tree;
  std::ofstream(project.root / "envkit.lock") << lock_text({{"zlib", "1.3.1", {artifact}}});

  const auto r = project.install({}, {{"CC", "/nonexistent/cc"}});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("cannot build zlib 1.3.1 from source: no C compiler"));
  CHECK_THAT(r.err, Catch::Contains("/nonexistent/cc"));
  CHECK_THAT(r.err, Catch::Contains("sudo apt-get install build-essential"));
  CHECK_FALSE(fs::exists(project.prefix()));
}

TEST_CASE("without a declared build system, a CMake-only source tree is built with CMake",
          "[cli][install][source]") {
  if (nginx_missing() || build_tools_missing(/*need_cmake=*/true)) return;
  SourceProject project;
  const auto tarball = project.tarball({.answer = 5, .configure = false});
  const StaticHttpServer server(project.www);
  project.lock("zlib", "1.3.1", tarball, server, std::nullopt);

  const auto r = project.install();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(call_tiny_answer(project.prefix() / "lib" / "libtiny.so") == 5);
  const auto entry = project.receipt("zlib").at("artifacts").at(0).at("entry").get<std::string>();
  CHECK_THAT(read_text(project.store() / "logs" / (entry + ".log")),
             Catch::Contains("# build system: cmake (detected)"));
}

}  // namespace
}  // namespace envkit::test
