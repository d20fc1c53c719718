// `envkit install` of CPython built from its python.org source tarball, for
// real: CPython 3.9.2's tarball (scripts/setup keeps it in the test cache;
// nothing here reaches the internet) served by nginx, built by configure and
// make with the host's compiler into the cache, linked into the prefix, where
// its python imports what deep-learning code needs and runs pip.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "envkit/core/sha256.hpp"
#include "envkit/sys/process.hpp"
#include "install_support.hpp"
#include "support/http_server.hpp"
#include "support/temp_dir.hpp"
#include "support/tiny_library.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Keep in step with scripts/fetch-test-tools.
constexpr std::string_view kCpythonTarball = "Python-3.9.2.tar.xz";
constexpr std::string_view kCpythonSha256 =
    "3c2034c54f811448f516668dce09d24008a0716c3a794dd8639b5388cbde247d";

fs::path test_cache() {
  if (const char* given = std::getenv("ENVKIT_TEST_CACHE"); given && *given) return given;
  const char* home = std::getenv("HOME");
  return fs::path(home ? home : "/nonexistent") / ".cache" / "envkit-test";
}

sys::ProcessOutput run_in_prefix(const fs::path& program, std::vector<std::string> args) {
  args.insert(args.begin(), program.string());
  auto ran = sys::run_process(args, {.env = {{"PYTHONHOME", std::nullopt},
                                             {"PYTHONPATH", std::nullopt},
                                             {"PIP_DISABLE_PIP_VERSION_CHECK", "1"}},
                                     .timeout = std::chrono::minutes(1)});
  REQUIRE(ran);
  return *std::move(ran);
}

}  // namespace

TEST_CASE(
    "install builds CPython 3.9.2 from its python.org tarball: ctypes zlib sqlite3 and pip work",
    "[cli][install][source][python][slow]") {
  if (nginx_missing() || build_tools_missing()) return;
  const auto cached = test_cache() / std::string(kCpythonTarball);
  if (!fs::is_regular_file(cached)) {
    FAIL(cached.string() << " is missing: run scripts/setup (it runs scripts/fetch-test-tools, "
                            "which downloads it once and checks its sha256)");
  }
  TempDir dir;
  const auto root = dir.path() / "project";
  const auto cache = dir.path() / "cache";
  const auto www = dir.path() / "www";
  fs::create_directories(root);
  fs::create_directories(www);
  fs::copy_file(cached, www / std::string(kCpythonTarball));
  REQUIRE(core::sha256_file(www / std::string(kCpythonTarball)) == std::string(kCpythonSha256));
  const StaticHttpServer server(www);

  specs::Artifact artifact;
  artifact.platform = specs::Platform::linux_x86_64;
  artifact.component = "python";
  artifact.kind = specs::ArtifactKind::source;
  artifact.url = server.url("/" + std::string(kCpythonTarball));
  artifact.sha256 = kCpythonSha256;
  artifact.size = fs::file_size(cached);
  artifact.format = "tar.xz";
  artifact.layout = specs::Layout::source_tree;
  artifact.build_system = specs::BuildSystem::cpython;
  std::ofstream(root / "envkit.lock") << lock_text({{"python", "3.9.2", {artifact}}});

  // -O0: the test checks that the build works and is relocatable, not its speed;
  // an optimised build takes about three times as long on two cores.
  const auto started = std::chrono::steady_clock::now();
  const auto r = run_envkit({.args = {"-C", root.string(), "--cache-dir", cache.string(), "install",
                                      "--frozen", "--json"},
                             .env = {{"CFLAGS", "-O0"}},
                             .timeout = std::chrono::minutes(40)});
  const auto took =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started);
  WARN("CPython 3.9.2 built and installed in " << took.count() << " s");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto report = json::parse(r.out);
  CHECK(report.at("added") == json::array({"python 3.9.2 (source)"}));

  const auto prefix = root / ".envkit" / "env";
  const auto python = prefix / "bin" / "python";
  const auto imported =
      run_in_prefix(python, {"-c", "import ctypes, zlib, sqlite3, sys; print(sys.prefix)"});
  INFO(imported.err);
  CHECK(imported.exit_code == 0);
  // The prefix's python is its own: sys.prefix is the prefix, not the cache entry it came from.
  CHECK(imported.out == prefix.string() + "\n");

  const auto pip = run_in_prefix(python, {"-m", "pip", "--version"});
  INFO(pip.err);
  CHECK(pip.exit_code == 0);
  CHECK_THAT(pip.out, Catch::StartsWith("pip "));
  CHECK_THAT(pip.out, Catch::Contains("(python 3.9)"));
  // bin/pip runs the python beside it (its shebang names no cache entry).
  const auto pip_script = run_in_prefix(prefix / "bin" / "pip", {"--version"});
  CHECK(pip_script.exit_code == 0);
  CHECK_THAT(pip_script.out, Catch::Contains(" from " + fs::canonical(prefix).string() + "/lib/"));

  // libpython is found through the $ORIGIN rpath, wherever the tree is.
  const auto dynamic = sys::run_process({"readelf", "-d", (prefix / "bin" / "python3.9").string()});
  REQUIRE(dynamic);
  CHECK_THAT(dynamic->out, Catch::Contains("[$ORIGIN/../lib]"));
  CHECK(fs::is_regular_file(prefix / "lib" / "libpython3.9.so.1.0"));
}

}  // namespace envkit::test
