// `kill -9` at many moments of an install: each time the prefix must still be
// one whole generation (the old one or the new one, never a mix), and the
// next `envkit install` must finish the job.
#include <catch2/catch.hpp>
#include <fstream>
#include <future>
#include <set>

#include "envkit/sys/fs.hpp"
#include "install_support.hpp"
#include "support/generation_check.hpp"
#include "support/http_server.hpp"
#include "support/temp_dir.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kComponents = 24;
constexpr int kFilesEach = 40;

FixtureComponent component(int index, const std::string& release) {
  return release_component(index, release, kFilesEach);
}

// The release every package of the prefix's generation was installed at,
// after checking each file its receipts list against its recorded hash.
std::string whole_generation(const fs::path& prefix) {
  const auto check = check_generation(prefix);
  INFO(check.problem.value_or(""));
  REQUIRE(check.whole());
  return check.release();
}

TEST_CASE("kill -9 at any moment of an install leaves a whole environment",
          "[cli][install][crash][slow]") {
  if (!StaticHttpServer::available()) {
    WARN("skipped: nginx is not installed (scripts/setup installs it)");
    return;
  }
  TempDir work;
  const RedistMirror mirror(work.path() / "www");
  std::vector<specs::Artifact> first;
  std::vector<specs::Artifact> second;
  const StaticHttpServer server(mirror.root());
  for (int i = 0; i < kComponents; ++i) {
    first.push_back(lock_artifact(mirror.add_archive(component(i, "1.0.0")), server.url("")));
    second.push_back(lock_artifact(mirror.add_archive(component(i, "2.0.0")), server.url("")));
  }
  const auto project = work.path() / "project";
  fs::create_directories(project);
  const auto cache = work.path() / "cache";
  const auto install = [&](std::chrono::milliseconds kill_after) {
    auto result = sys::run_process({ENVKIT_BINARY, "-C", project.string(), "--cache-dir",
                                    cache.string(), "-q", "install", "--frozen"},
                                   {.env = {{"NO_COLOR", "1"}}, .timeout = kill_after});
    REQUIRE(result);
    return *result;
  };
  const auto write_lock = [&](const std::string& version, const std::vector<specs::Artifact>& a) {
    std::ofstream(project / "envkit.lock") << lock_text({{"cuda", version, a}});
  };
  const auto prefix = project / ".envkit" / "env";

  write_lock("1.0.0", first);
  REQUIRE(install(std::chrono::seconds(60)).exit_code == 0);
  REQUIRE(whole_generation(prefix) == "1.0.0");

  // How long the change takes when nothing stops it (cold cache), to spread the kills over.
  write_lock("2.0.0", second);
  const auto started = Clock::now();
  REQUIRE(install(std::chrono::seconds(60)).exit_code == 0);
  const auto full = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
  REQUIRE(whole_generation(prefix) == "2.0.0");

  int killed = 0;
  std::set<std::string> seen;
  for (int round = 0; round < 24; ++round) {
    // Back to the first release, then interrupt the change to the second;
    // every other round from a cold cache, so downloads get interrupted too.
    write_lock("1.0.0", first);
    REQUIRE(install(std::chrono::seconds(60)).exit_code == 0);
    if (round % 2 == 0) fs::remove_all(cache / "store" / "v1" / "entries");
    write_lock("2.0.0", second);
    const auto kill_after = std::chrono::milliseconds(2 + full.count() * round / 20);
    const auto interrupted = install(kill_after);
    if (interrupted.exit_code == 128 + 9) ++killed;
    seen.insert(whole_generation(prefix));  // old or new, whole either way
  }
  CHECK(killed >= 8);  // many rounds were really interrupted (fewer on a loaded machine)
  CHECK(seen.contains("1.0.0"));

  // The next install finishes the job.
  REQUIRE(install(std::chrono::seconds(60)).exit_code == 0);
  CHECK(whole_generation(prefix) == "2.0.0");
  // Nothing a killed run left behind survives: one generation, no staging.
  CHECK(std::distance(fs::directory_iterator(project / ".envkit" / ".env.generations"),
                      fs::directory_iterator()) == 1);
}

TEST_CASE("installs running at once share the cache and the prefix safely",
          "[cli][install][concurrency]") {
  if (!StaticHttpServer::available()) {
    WARN("skipped: nginx is not installed (scripts/setup installs it)");
    return;
  }
  TempDir work;
  const RedistMirror mirror(work.path() / "www");
  const StaticHttpServer server(mirror.root());
  std::vector<specs::Artifact> artifacts;
  for (int i = 0; i < 8; ++i)
    artifacts.push_back(lock_artifact(mirror.add_archive(component(i, "1.0.0")), server.url("")));
  const auto project = work.path() / "project";
  fs::create_directories(project);
  std::ofstream(project / "envkit.lock") << lock_text({{"cuda", "1.0.0", artifacts}});
  const auto cache = work.path() / "cache";
  const auto install = [&](const fs::path& prefix) {
    return std::async(std::launch::async, [&, prefix] {
      return sys::run_process({ENVKIT_BINARY, "-C", project.string(), "--cache-dir", cache.string(),
                               "-q", "install", "--frozen", "--prefix", prefix.string()},
                              {.env = {{"NO_COLOR", "1"}}, .timeout = std::chrono::seconds(60)});
    });
  };
  const auto shared = work.path() / "env";
  const auto other = work.path() / "other-env";
  std::vector<std::future<Result<sys::ProcessOutput>>> runs;
  runs.push_back(install(shared));
  runs.push_back(install(shared));
  runs.push_back(install(other));
  runs.push_back(install(other));
  for (auto& run : runs) {
    auto result = run.get();
    REQUIRE(result);
    INFO(result->err);
    CHECK(result->exit_code == 0);
  }
  CHECK(whole_generation(shared) == "1.0.0");
  CHECK(whole_generation(other) == "1.0.0");
  // One cache entry per artifact, however many processes wanted it.
  std::size_t entries = 0;
  for (const auto& entry : fs::directory_iterator(cache / "store" / "v1" / "entries"))
    entries += entry.path().extension() == ".json" ? 1 : 0;
  CHECK(entries == artifacts.size());
}

}  // namespace
}  // namespace envkit::test
