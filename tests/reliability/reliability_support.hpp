#pragma once

// The reliability suite (docs/reliability.md): installs interrupted, faulted and
// raced many times, each one checked file by file the way a user would, and
// counted as survived, failed clearly, or lost. CI runs a few rounds of each;
// scripts/reliability runs the full figures.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "envkit/sys/process.hpp"
#include "integration/install_support.hpp"
#include "support/generation_check.hpp"
#include "support/temp_dir.hpp"

namespace envkit::test {

// Rounds of one scenario: `variable` (ENVKIT_RELIABILITY_*) when set, else CI's few.
inline int reliability_rounds(const char* variable, int ci_rounds) {
  const char* value = std::getenv(variable);
  if (value == nullptr || *value == '\0') return ci_rounds;
  return std::max(1, std::atoi(value));
}

// How many rounds of a scenario ended each way. Lost is what must never happen:
// a prefix that is not one whole generation, a cache that hands out wrong bytes,
// an install that hangs past its timeout, or a failure that destroyed what was there.
struct Tally {
  std::string scenario;
  int tried = 0;
  int survived = 0;
  int failed_clearly = 0;  // refused with an error, the previous environment intact
  int lost = 0;
  std::map<std::string, int> counts;  // scenario-specific ("killed", "fault: stall", ...)
  std::vector<std::string> losses;
  std::vector<std::string> remarks;  // rounds worth a look that lost nothing

  void survive() { ++tried, ++survived; }
  void fail_clearly() { ++tried, ++failed_clearly; }
  void lose(std::string why) {
    ++tried, ++lost;
    if (losses.size() < 10) losses.push_back(std::move(why));
  }
  void count(const std::string& what) { ++counts[what]; }
  void remark(const std::string& what, std::string detail) {
    count(what);
    if (remarks.size() < 10) remarks.push_back(std::move(detail));
  }

  // Prints the figures, and appends them as a JSON line to $ENVKIT_RELIABILITY_REPORT.
  void report() const {
    std::string extra;
    for (const auto& [what, n] : counts)
      extra += fmt::format(", {} {}", what, n);
    fmt::print("reliability: {}: tried {}, survived {}, failed clearly {}, lost {}{}\n", scenario,
               tried, survived, failed_clearly, lost, extra);
    for (const auto& why : losses)
      fmt::print("  lost: {}\n", why);
    for (const auto& what : remarks)
      fmt::print("  note: {}\n", what);
    if (const char* path = std::getenv("ENVKIT_RELIABILITY_REPORT"); path && *path) {
      nlohmann::json line = {{"scenario", scenario}, {"tried", tried},
                             {"survived", survived}, {"failed_clearly", failed_clearly},
                             {"lost", lost},         {"counts", counts},
                             {"losses", losses},     {"remarks", remarks}};
      std::ofstream(path, std::ios::app) << line.dump() << "\n";
    }
  }
};

// How TwoReleases runs one envkit command.
struct ProjectRun {
  std::chrono::milliseconds limit = std::chrono::seconds(60);  // then kill -9
  std::filesystem::path prefix;                                // empty: the project's
  std::filesystem::path cache;                                 // empty: the project's cache()
  std::map<std::string, std::optional<std::string>> env;
};

// A project with two releases (1.0.0, 2.0.0) of `components` fixture components
// (release_component's), served by nginx, and envkit runs against one cache.
class TwoReleases {
 public:
  TwoReleases(int components, int files_each, std::size_t blob_bytes = 0)
      : mirror_(work_.path() / "www"), server_(mirror_.root()) {
    for (int i = 0; i < components; ++i) {
      first_.push_back(mirror_.add_archive(release_component(i, "1.0.0", files_each, blob_bytes)));
      second_.push_back(mirror_.add_archive(release_component(i, "2.0.0", files_each, blob_bytes)));
    }
    std::filesystem::create_directories(project());
  }

  [[nodiscard]] std::filesystem::path root() const { return work_.path(); }
  [[nodiscard]] std::filesystem::path project() const { return work_.path() / "project"; }
  [[nodiscard]] std::filesystem::path cache() const { return work_.path() / "cache"; }
  [[nodiscard]] std::filesystem::path prefix() const { return project() / ".envkit" / "env"; }
  [[nodiscard]] const RedistMirror& mirror() const { return mirror_; }
  [[nodiscard]] const std::vector<BuiltArtifact>& release(const std::string& version) const {
    return version == "1.0.0" ? first_ : second_;
  }

  // envkit.lock of `version`, its artifacts at `base_url` (default: nginx).
  void lock(const std::string& version, const std::string& base_url = "") const {
    std::vector<specs::Artifact> artifacts;
    for (const auto& built : release(version))
      artifacts.push_back(lock_artifact(built, base_url.empty() ? server_.url("") : base_url));
    lock(version, artifacts);
  }
  void lock(const std::string& version, const std::vector<specs::Artifact>& artifacts) const {
    std::ofstream(project() / "envkit.lock") << lock_text({{"cuda", version, artifacts}});
  }

  // `envkit <args...>` in the project.
  [[nodiscard]] sys::ProcessOutput envkit(const std::vector<std::string>& args,
                                          ProjectRun run) const {
    std::vector<std::string> all{"-C", project().string(), "--cache-dir",
                                 (run.cache.empty() ? cache() : run.cache).string(), "-q"};
    all.insert(all.end(), args.begin(), args.end());
    if (!run.prefix.empty()) all.insert(all.end(), {"--prefix", run.prefix.string()});
    return run_envkit({.args = all, .env = std::move(run.env), .timeout = run.limit});
  }
  [[nodiscard]] sys::ProcessOutput install(ProjectRun run = {}) const {
    return envkit({"install", "--frozen"}, std::move(run));
  }
  // Why `envkit cache verify` (every file of every entry hashed against its record)
  // finds the cache unsound; nullopt when it is sound.
  [[nodiscard]] std::optional<std::string> cache_unsound() const {
    const auto verified = envkit({"cache", "verify"}, {});
    if (verified.exit_code == 0) return std::nullopt;
    return "cache verify: " + verified.out + verified.err;
  }

 private:
  TempDir work_;
  RedistMirror mirror_;
  StaticHttpServer server_;
  std::vector<BuiltArtifact> first_;
  std::vector<BuiltArtifact> second_;
};

}  // namespace envkit::test
