// Installs running at once on one cache and one prefix. kill -9 at many moments of an
// install, and cleans among concurrent installs, are the reliability suite's
// (tests/reliability).
#include <catch2/catch.hpp>
#include <future>

#include "envkit/sys/fs.hpp"
#include "install_support.hpp"
#include "support/generation_check.hpp"
#include "support/http_server.hpp"
#include "support/temp_dir.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
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

TEST_CASE("installs running at once share the cache and the prefix safely",
          "[cli][install][concurrency]") {
  if (nginx_missing()) return;
  InstallProject project;
  const RedistMirror mirror(project.dir.path() / "www");
  const StaticHttpServer server(mirror.root());
  std::vector<specs::Artifact> artifacts;
  for (int i = 0; i < 8; ++i)
    artifacts.push_back(lock_artifact(mirror.add_archive(component(i, "1.0.0")), server.url("")));
  project.lock({{"cuda", "1.0.0", artifacts}});
  const auto install = [&](const fs::path& prefix) {
    return std::async(std::launch::async, [&, prefix] {
      return project.install({"--prefix", prefix.string()});
    });
  };
  const auto shared = project.dir.path() / "env";
  const auto other = project.dir.path() / "other-env";
  std::vector<std::future<sys::ProcessOutput>> runs;
  runs.push_back(install(shared));
  runs.push_back(install(shared));
  runs.push_back(install(other));
  runs.push_back(install(other));
  for (auto& run : runs) {
    const auto result = run.get();
    INFO(result.err);
    CHECK(result.exit_code == 0);
  }
  CHECK(whole_generation(shared) == "1.0.0");
  CHECK(whole_generation(other) == "1.0.0");
  // One cache entry per artifact, however many processes wanted it.
  std::size_t entries = 0;
  for (const auto& entry : fs::directory_iterator(project.entries()))
    entries += entry.path().extension() == ".json" ? 1 : 0;
  CHECK(entries == artifacts.size());
}

}  // namespace
}  // namespace envkit::test
