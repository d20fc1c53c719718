// Installs of release 2.0.0 over a prefix at 1.0.0 while the server (or the local
// file a lock names) misbehaves. Each must end either with exactly the files a
// clean install has, or with an error and the 1.0.0 environment untouched; never
// with other bytes, never hanging past its timeout.
#include <sys/stat.h>

#include <random>

#include "reliability_support.hpp"
#include "support/fault_server.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;

struct Fault {
  std::string name;
  Behaviour behaviour;  // served for the faulted artifact(s)
  bool recoverable;     // a client that retries well finishes the install
  // Instead of the server: the faulted artifact's URL, a local file (`file://`).
  std::string local_url;
};

std::vector<Fault> faults(const fs::path& work) {
  const auto fifo = work / "fifo";
  ::mkfifo(fifo.c_str(), 0600);
  const auto endless = work / "longer-than-locked";
  std::ofstream(endless) << std::string(4 << 20, 'x');
  return {
      {"500 once", {.fail_first = 1}, true, ""},
      {"503 twice", {.fail_first = 2, .fail_status = 503}, true, ""},
      {"429 with Retry-After", {.fail_first = 1, .fail_status = 429, .retry_after = "1"}, true, ""},
      {"reset mid-body", {.cut_first = 1}, true, ""},
      {"reset, no range support", {.ranges = false, .cut_first = 1}, true, ""},
      {"stall", {.stall_first = 1}, true, ""},
      {"Content-Length too long", {.length_lie = 64}, true, ""},
      {"Content-Length too short", {.length_lie = -64}, true, ""},
      {"reset, then a 206 from the wrong start",
       {.cut_first = 1, .wrong_content_range = 1, .range_lie = Behaviour::RangeLie::start},
       true,
       ""},
      {"reset, then a 206 with the wrong total",
       {.cut_first = 1, .wrong_content_range = 1, .range_lie = Behaviour::RangeLie::total},
       true,
       ""},
      {"a flipped byte, same length", {.wrong_bytes = true}, false, ""},
      {"file:///dev/zero", {}, false, "file:///dev/zero"},
      {"a FIFO", {}, false, "file://" + fifo.string()},
      {"a local file longer than locked", {}, false, "file://" + endless.string()},
  };
}

// Retries quick enough for a few hundred rounds; the stall timeout is what ends a stall.
std::map<std::string, std::optional<std::string>> quick_retries() {
  return {{"ENVKIT_RETRIES", "4"},
          {"ENVKIT_RETRY_DELAY_MS", "20"},
          {"ENVKIT_MAX_RETRY_DELAY_MS", "1000"},
          {"ENVKIT_STALL_TIMEOUT_MS", "1500"},
          {"ENVKIT_CONNECT_TIMEOUT_MS", "2000"}};
}

}  // namespace

TEST_CASE("reliability: installs through a faulty server never leave wrong files",
          "[reliability][slow]") {
  if (nginx_missing()) return;
  const int rounds = reliability_rounds("ENVKIT_RELIABILITY_FAULTS", 14);
  const TwoReleases project(6, 30, 256 << 10);
  const auto kinds = faults(project.root());

  // What a clean install of 2.0.0 holds, to compare every faulted one with.
  const auto reference = project.root() / "reference";
  project.lock("2.0.0");
  REQUIRE(project.install({.prefix = reference}).exit_code == 0);
  const auto old_cache = project.cache();  // keeps 1.0.0 for going back quickly
  project.lock("1.0.0");
  REQUIRE(project.install().exit_code == 0);

  FaultServer server;
  std::vector<std::string> bodies;
  for (const auto& built : project.release("2.0.0")) {
    bodies.push_back(read_text(project.mirror().root() / built.relative_path));
  }
  std::mt19937 random(19);
  Tally tally{.scenario = "faulted installs"};
  for (int round = 0; round < rounds; ++round) {
    const auto& fault = kinds[static_cast<std::size_t>(round) % kinds.size()];
    // One artifact faulted, or (every other pass over the kinds) all of them at once.
    const bool all = (round / kinds.size()) % 2 == 1;
    const auto& second = project.release("2.0.0");
    const auto one = std::uniform_int_distribution<std::size_t>(0, second.size() - 1)(random);
    std::vector<specs::Artifact> artifacts;
    for (std::size_t i = 0; i < second.size(); ++i) {
      const bool faulted = all || i == one;
      server.serve("/" + second[i].relative_path, bodies[i],
                   faulted ? fault.behaviour : Behaviour{});
      artifacts.push_back(lock_artifact(second[i], server.url("")));
      if (faulted && !fault.local_url.empty()) artifacts.back().url = fault.local_url;
    }
    project.lock("2.0.0", artifacts);
    // A cache of its own each round, so that every artifact is downloaded.
    const auto round_cache = project.root() / ("cache-" + std::to_string(round));
    const auto result = project.install(
        {.limit = std::chrono::seconds(20), .cache = round_cache, .env = quick_retries()});
    fs::remove_all(round_cache);
    const auto where =
        fmt::format("round {} ({}{})", round, fault.name, all ? ", every artifact" : "");
    tally.count("fault: " + fault.name);

    if (result.timed_out) {
      tally.lose(where + ": still running after 20 s");
    } else if (result.exit_code == 0) {
      if (auto wrong = differs_from(project.prefix(), reference)) {
        tally.lose(where + ": installed with wrong files: " + *wrong);
      } else {
        tally.survive();
        if (!fault.recoverable) tally.count("unexpectedly installed");
      }
    } else if (check_generation(project.prefix()).release() != "1.0.0") {
      tally.lose(where + ": the failure broke the 1.0.0 environment");
    } else if (result.err.find("error:") == std::string::npos) {
      tally.lose(where + ": failed without saying why: " + result.err);
    } else {
      tally.fail_clearly();
      if (fault.recoverable)
        tally.remark("gave up on a recoverable fault", where + ": " + result.err);
    }
    // Back to 1.0.0 (from the kept cache) for the next round.
    if (result.exit_code == 0) {
      project.lock("1.0.0");
      REQUIRE(project.install({.cache = old_cache}).exit_code == 0);
    }
  }
  tally.report();
  CHECK(tally.lost == 0);
  CHECK(tally.counts["gave up on a recoverable fault"] == 0);
}

}  // namespace envkit::test
