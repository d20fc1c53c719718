#pragma once

// Shared by the mirror and config tests: a project whose envkit runs with its
// own home, XDG config folder and cache, so that nothing is read from (or
// written to) the real $HOME, and with millisecond retry delays.
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "install_support.hpp"
#include "support/envkit_runner.hpp"
#include "support/temp_dir.hpp"

namespace envkit::test {

struct IsolatedProject {
  TempDir dir;
  std::filesystem::path root = dir.path() / "project";
  std::filesystem::path home = dir.path() / "home";
  std::filesystem::path xdg_config = dir.path() / "xdg-config";

  IsolatedProject() {
    std::filesystem::create_directories(root);
    std::filesystem::create_directories(home);
  }
  [[nodiscard]] std::filesystem::path prefix() const { return root / ".envkit" / "env"; }
  [[nodiscard]] std::filesystem::path project_config() const {
    return root / ".envkit" / "config.yaml";
  }
  [[nodiscard]] std::filesystem::path user_config() const {
    return xdg_config / "envkit" / "config.yaml";
  }
  void write(const std::filesystem::path& file, const std::string& text) const {
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }
  // envkit -C ROOT ARGS, with ENVKIT_* settings cleared unless `env` sets them.
  [[nodiscard]] sys::ProcessOutput envkit(
      std::vector<std::string> args,
      std::map<std::string, std::optional<std::string>> env = {}) const {
    std::vector<std::string> all = {"-C", root.string()};
    all.insert(all.end(), args.begin(), args.end());
    env.emplace("HOME", home.string());
    env.emplace("XDG_CONFIG_HOME", xdg_config.string());
    env.emplace("XDG_CACHE_HOME", (dir.path() / "xdg-cache").string());
    env.emplace("ENVKIT_CACHE_DIR", std::nullopt);  // run_envkit clears the other settings
    env.emplace("ENVKIT_RETRY_DELAY_MS", "1");
    env.emplace("ENVKIT_MAX_RETRY_DELAY_MS", "20");
    env.emplace("ENVKIT_STALL_TIMEOUT_MS", "500");
    env.emplace("ENVKIT_RETRIES", "2");
    return run_envkit({.args = all, .env = env});
  }
};

}  // namespace envkit::test
