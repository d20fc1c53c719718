// kill -9 at random moments of cold, warm and upgrade installs, half of them
// aimed at the last quarter of the run, where the new generation is switched in.
// After each kill: the prefix is one whole generation (old or new, or none where
// there was none), the next install finishes the job, and the cache hands a
// fresh prefix exactly the bytes its receipts promise.
#include <random>

#include "reliability_support.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

enum class Start { cold, warm, upgrade };
constexpr std::array<std::string_view, 3> kStartNames = {"cold", "warm", "upgrade"};

// Puts the project where a round starts: cold (no cache, no prefix), warm (prefix at
// 1.0.0, 2.0.0 already in the cache: only linking is left) or upgrade (prefix at
// 1.0.0, nothing of 2.0.0 cached: downloads too). Then locks 2.0.0.
void prepare(const TwoReleases& project, Start start) {
  if (start != Start::warm) fs::remove_all(project.cache());
  fs::remove_all(project.project() / ".envkit");
  if (start != Start::cold) {
    project.lock("1.0.0");
    REQUIRE(project.install().exit_code == 0);
  }
  if (start == Start::warm) {
    project.lock("2.0.0");
    const auto side = project.root() / "side-prefix";
    REQUIRE(project.install({.prefix = side}).exit_code == 0);
    fs::remove_all(side);
  }
  project.lock("2.0.0");
}

milliseconds timed_install(const TwoReleases& project, Start start) {
  prepare(project, start);
  const auto began = std::chrono::steady_clock::now();
  REQUIRE(project.install().exit_code == 0);
  return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - began);
}

}  // namespace

TEST_CASE("reliability: kill -9 during cold warm and upgrade installs loses nothing",
          "[reliability][slow]") {
  if (nginx_missing()) return;
  const int rounds = reliability_rounds("ENVKIT_RELIABILITY_KILLS", 9);
  const TwoReleases project(8, 40, 128 << 10);
  std::array<milliseconds, 3> full{};
  // The faster of two runs: the first of a kind warms the page cache and the server.
  for (const auto start : {Start::cold, Start::warm, Start::upgrade})
    full[static_cast<std::size_t>(start)] =
        std::min(timed_install(project, start), timed_install(project, start));

  std::mt19937 random(19);  // fixed: a lost round can be replayed
  Tally tally{.scenario = "kill -9"};
  for (int round = 0; round < rounds; ++round) {
    const auto start = static_cast<Start>(round % 3);
    const bool aimed = (round / 3) % 2 == 1;
    const auto duration = full[static_cast<std::size_t>(start)].count();
    // Aimed: the last quarter of the run (the switch to the new generation is at its end).
    std::uniform_int_distribution<long> moment(aimed ? duration * 3 / 4 : 1,
                                               std::max(2L, duration * 11 / 10));
    prepare(project, start);
    const auto killed_at = milliseconds(moment(random));
    const auto began = std::chrono::steady_clock::now();
    const auto interrupted = project.install({.limit = killed_at});
    const bool killed = interrupted.exit_code == 128 + 9;
    tally.count(killed ? "killed" : "finished first");
    // A run that beat its kill shows how long runs take now (the first measure can be a
    // cold one): later rounds aim at that.
    if (!killed)
      full[static_cast<std::size_t>(start)] = std::max(
          milliseconds(2),
          std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - began));
    const auto where =
        fmt::format("round {} ({}, killed at {} ms of {})", round,
                    kStartNames[static_cast<std::size_t>(start)], killed_at.count(), duration);

    const auto after_kill = check_generation(project.prefix());
    const bool acceptable = after_kill.whole() ||
                            (start == Start::cold && !after_kill.installed && !after_kill.problem);
    if (!acceptable) {
      tally.lose(where + ": the prefix is not one whole generation: " +
                 after_kill.problem.value_or("several releases"));
      continue;
    }
    if (const auto again = project.install(); again.exit_code != 0) {
      tally.lose(where + ": the next install failed: " + again.err);
      continue;
    }
    if (const auto done = check_generation(project.prefix()); done.release() != "2.0.0") {
      tally.lose(where + ": the next install left " + done.problem.value_or("another release"));
      continue;
    }
    // Nothing a killed run left behind survives the next install: one generation, no staging.
    const auto generations =
        std::distance(fs::directory_iterator(project.project() / ".envkit" / ".env.generations"),
                      fs::directory_iterator());
    if (generations != 1) {
      tally.lose(fmt::format("{}: {} generations after the next install", where, generations));
      continue;
    }
    // The cache after the kill gives a new prefix exactly what its receipts say.
    const auto fresh = project.root() / "fresh-prefix";
    const auto from_cache = project.install({.prefix = fresh});
    const auto fresh_check = check_generation(fresh);
    fs::remove_all(fresh);
    if (from_cache.exit_code != 0 || fresh_check.release() != "2.0.0") {
      tally.lose(where + ": a fresh prefix from the cache is wrong: " +
                 fresh_check.problem.value_or(from_cache.err));
      continue;
    }
    if (auto unsound = project.cache_unsound()) {
      tally.lose(where + ": " + *unsound);
      continue;
    }
    tally.survive();
  }
  tally.report();
  CHECK(tally.lost == 0);
  CHECK(tally.survived == rounds);
  // Most rounds really were interrupted (the measure of a run can be off on a loaded machine).
  CHECK(tally.counts["killed"] * 2 >= rounds);
}

}  // namespace envkit::test
