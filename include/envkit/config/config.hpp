#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/env_vars.hpp"
#include "envkit/core/result.hpp"

// envkit's settings (docs/config.md) and where each value came from. Each
// setting is a key of config.yaml and an ENVKIT_* variable; the first that
// gives it wins, in this order:
//   the command-line flag > the variable > <project>/.envkit/config.yaml >
//   $XDG_CONFIG_HOME/envkit/config.yaml (~/.config/envkit/config.yaml) > the default.
// A value replaces the one below it whole: a project's `mirrors:` list is not
// added to the user's, it takes its place.
namespace envkit::config {

inline constexpr std::string_view kFileName = "config.yaml";
inline constexpr int kDefaultJobs = 8;
inline constexpr int kMaxJobs = 64;
// How long facts read from a package index stay fresh (uv keeps PyPI's pages 600 s).
inline constexpr int kDefaultIndexTtl = 600;
inline constexpr std::string_view kLinkModes[] = {"auto", "reflink", "hardlink", "copy"};
// `packaging`: auto is archives where NVIDIA's host answers, wheels where only PyPI does.
inline constexpr std::string_view kPackagings[] = {"auto", "archive", "wheel"};
// NVIDIA's two packagings, as `envkit mirror --packaging` names one of them.
inline constexpr std::string_view kNvidiaPackagings[] = {"archive", "wheel"};
// A yes-or-no setting, as uv's variables take it (UV_COMPILE_BYTECODE=1).
inline constexpr std::string_view kBooleans[] = {"true", "false", "1", "0"};

// How `envkit config list` names a value's source: "default", "flag",
// "env ENVKIT_JOBS" or "/path/.envkit/config.yaml:3".
inline constexpr std::string_view kDefaultSource = "default";
inline constexpr std::string_view kFlagSource = "flag";

template <class T>
struct Sourced {
  T value{};
  std::string source = std::string(kDefaultSource);
};

struct Settings {
  // Asked first, in order, for every download (net::mirror_url); the original URL last.
  Sourced<std::vector<std::string>> mirrors;
  Sourced<int> jobs{.value = kDefaultJobs};
  // nullopt: the platform's default ($XDG_CACHE_HOME/envkit, store::default_cache_dir).
  Sourced<std::optional<std::filesystem::path>> cache_dir;
  // The simple-API index of the wheel importers; nullopt: as pip (PIP_INDEX_URL, pip.conf, PyPI).
  Sourced<std::optional<std::string>> index_url;
  Sourced<std::string> link_mode{.value = "auto"};  // one of kLinkModes
  Sourced<std::string> packaging{.value = "auto"};  // one of kPackagings
  // `install` compiles the new Python packages' .py files (`--compile-bytecode`).
  Sourced<bool> compile_bytecode;
  // Seconds a lock uses the releases read from the index before reading it again.
  Sourced<int> index_ttl{.value = kDefaultIndexTtl};
};

// A setting as config.yaml and the environment name it.
struct Key {
  std::string_view name;  // in config.yaml: `cache-dir`
  const env::Variable* variable;
};
inline constexpr Key kMirrors{"mirrors", &env::kMirrors};
inline constexpr Key kJobs{"jobs", &env::kJobs};
inline constexpr Key kCacheDir{"cache-dir", &env::kCacheDir};
inline constexpr Key kIndexUrl{"index-url", &env::kIndexUrl};
inline constexpr Key kLinkMode{"link-mode", &env::kLinkMode};
inline constexpr Key kPackaging{"packaging", &env::kPackaging};
inline constexpr Key kCompileBytecode{"compile-bytecode", &env::kCompileBytecode};
inline constexpr Key kIndexTtl{"index-ttl", &env::kIndexTtl};
inline constexpr Key kKeys[] = {kMirrors,  kJobs,      kCacheDir,        kIndexUrl,
                                kLinkMode, kPackaging, kCompileBytecode, kIndexTtl};

// A command-line flag, when given, wins over everything.
template <class T, class U>
void set_by_flag(Sourced<T>& setting, U&& value) {
  setting.value = std::forward<U>(value);
  setting.source = std::string(kFlagSource);
}

// A command-line flag's values for `key` (`--mirror URL`, repeatable), checked
// as config.yaml's are: an input error names the flag and the value.
[[nodiscard]] Result<void> apply_flag(Settings& settings, const Key& key, std::string_view flag,
                                      std::vector<std::string> items);

// Reads an environment variable (env::get, or a table in tests).
using Lookup = std::function<std::optional<std::string>(const env::Variable&)>;

// The configuration files, each read when it exists.
struct Files {
  // $XDG_CONFIG_HOME/envkit/config.yaml, else $HOME/.config/envkit/config.yaml;
  // nullopt when neither variable is set.
  std::optional<std::filesystem::path> user;
  std::filesystem::path project;  // <project>/.envkit/config.yaml

  [[nodiscard]] static Files of(const std::filesystem::path& project_dir,
                                const Lookup& lookup = env::get);
};

// The defaults, then each layer over the one before: the user file, the
// project file, the environment. Flags are the caller's (set_by_flag). Unknown
// keys and bad values are input errors naming file:line:column or the variable.
[[nodiscard]] Result<Settings> load(const Files& files, const Lookup& lookup = env::get);

// One layer, applied over `settings`: the text of the config file `file`
// (errors and sources name it as given). A relative path in it is relative to
// the file's folder; `~/` is $HOME.
[[nodiscard]] Result<void> apply_file(Settings& settings, std::string_view text,
                                      const std::filesystem::path& file,
                                      const Lookup& lookup = env::get);
// The ENVKIT_* variables that are set (empty counts as unset, but for
// ENVKIT_MIRRORS, where it means no mirrors).
[[nodiscard]] Result<void> apply_environment(Settings& settings, const Lookup& lookup = env::get);

}  // namespace envkit::config
