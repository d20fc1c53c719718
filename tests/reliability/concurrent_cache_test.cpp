// Many envkit processes on one cache at once: installs into a few shared
// prefixes, with `cache clean` and `cache prune` running among them. Every
// install must succeed with exactly the files a clean install has (a clean
// waits for, or skips, entries in use), and the cache must stay sound.
#include <future>

#include "reliability_support.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;

}  // namespace

TEST_CASE("reliability: concurrent installs and cleans on one cache corrupt nothing",
          "[reliability][slow]") {
  if (nginx_missing()) return;
  const int processes = reliability_rounds("ENVKIT_RELIABILITY_CONCURRENT", 12);
  const int waves = reliability_rounds("ENVKIT_RELIABILITY_WAVES", 2);
  const TwoReleases project(6, 30, 256 << 10);
  project.lock("2.0.0");
  const auto reference = project.root() / "reference";
  REQUIRE(project.install({.prefix = reference, .cache = project.root() / "reference-cache"})
              .exit_code == 0);

  Tally installs{.scenario = "concurrent installs"};
  int cleans = 0;
  int cleans_failed = 0;
  for (int wave = 0; wave < waves; ++wave) {
    std::vector<std::pair<fs::path, std::future<sys::ProcessOutput>>> runs;
    for (int i = 0; i < processes; ++i) {
      // Every sixth process cleans (alternately everything, then what no prefix uses).
      if (i % 6 == 5) {
        const auto command = (i / 6) % 2 == 0 ? "clean" : "prune";
        runs.emplace_back(fs::path(), std::async(std::launch::async, [&project, command] {
                            return project.envkit({"cache", command}, {});
                          }));
        continue;
      }
      const auto prefix = project.root() / ("prefix-" + std::to_string(i % 4));
      runs.emplace_back(prefix, std::async(std::launch::async, [&project, prefix] {
                          return project.install({.prefix = prefix});
                        }));
    }
    for (auto& [prefix, run] : runs) {
      const auto result = run.get();
      if (prefix.empty()) {
        ++cleans;
        cleans_failed += result.exit_code == 0 ? 0 : 1;
        continue;
      }
      const auto where = fmt::format("wave {}, {}", wave, prefix.filename().string());
      if (result.timed_out) {
        installs.lose(where + ": still running after 60 s");
      } else if (result.exit_code != 0) {
        installs.lose(where + ": failed: " + result.err);
      } else {
        installs.survive();
      }
    }
    // Every prefix, after all the races: exactly what a clean install has.
    for (int p = 0; p < 4; ++p) {
      const auto prefix = project.root() / ("prefix-" + std::to_string(p));
      if (auto wrong = differs_from(prefix, reference)) {
        installs.lose(fmt::format("wave {}: {}", wave, *wrong));
      }
    }
  }
  // The cache after it all gives a fresh prefix the right bytes.
  const auto fresh = project.root() / "fresh";
  const auto last = project.install({.prefix = fresh});
  if (last.exit_code != 0) installs.lose("a fresh install after the races failed: " + last.err);
  if (auto wrong = differs_from(fresh, reference)) installs.lose("fresh prefix: " + *wrong);
  if (auto unsound = project.cache_unsound()) installs.lose(*unsound);
  installs.counts["cleans"] = cleans;
  installs.counts["cleans failed"] = cleans_failed;
  installs.report();
  CHECK(installs.lost == 0);
  CHECK(cleans_failed == 0);
}

}  // namespace envkit::test
