#pragma once

// Shared by the install tests: locks written from fixture artifacts, and
// checks of a prefix the way a user would look at it.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

#include "envkit/lock/lockfile.hpp"
#include "envkit/sys/fs.hpp"
#include "envkit/sys/process.hpp"
#include "support/envkit_runner.hpp"
#include "support/http_server.hpp"
#include "support/redist_fixture.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

namespace envkit::test {

// An artifact of the lock for a fixture artifact served at `base_url`.
inline specs::Artifact lock_artifact(const BuiltArtifact& built, const std::string& base_url) {
  specs::Artifact artifact;
  artifact.platform = specs::Platform::linux_x86_64;
  artifact.component = built.component;
  artifact.kind = built.wheel ? specs::ArtifactKind::wheel : specs::ArtifactKind::archive;
  artifact.url = base_url + "/" + built.relative_path;
  artifact.sha256 = built.sha256;
  if (!built.wheel) artifact.size = built.size;
  artifact.format = built.wheel ? "whl" : "tar.xz";
  artifact.layout = built.wheel ? specs::Layout::nvidia_wheel : specs::Layout::nvidia_redist;
  artifact.wheel_root = built.wheel_root;
  return artifact;
}

// A package of a lock: name, version, artifacts.
struct LockedSpec {
  std::string name;
  std::string version;
  std::vector<specs::Artifact> artifacts;
};

// A lock of several platforms: platform -> its packages.
inline std::string lock_text(
    const std::vector<std::pair<specs::Platform, std::vector<LockedSpec>>>& platforms) {
  lock::Lockfile lockfile;
  lockfile.manifest_hash = "sha256:" + std::string(64, '0');
  lockfile.system.source = envkit::specs::FactSource::none;
  for (const auto& [platform, packages] : platforms) {
    lock::PlatformLock entry{.platform = platform};
    for (const auto& spec : packages) {
      entry.packages.push_back({.name = spec.name,
                                .version = specs::Version::parse(spec.version).value(),
                                .build = "",
                                .external = std::nullopt,
                                .requires_ = {},
                                .artifacts = spec.artifacts});
    }
    lockfile.platforms.push_back(std::move(entry));
  }
  return lock::write(lockfile);
}

inline std::string lock_text(const std::vector<LockedSpec>& packages) {
  return lock_text({{specs::Platform::linux_x86_64, packages}});
}

// A small library component with the links NVIDIA's archives carry.
inline FixtureComponent library_component(const std::string& name, const std::string& version) {
  return {.name = name,
          .version = version,
          .files = {{.path = "lib/lib" + name + ".so." + version,
                     .content = name + " library " + version + "\n"},
                    {.path = "lib/lib" + name + ".so.1",
                     .symlink_target = "lib" + name + ".so." + version},
                    {.path = "lib/lib" + name + ".so", .symlink_target = "lib" + name + ".so.1"},
                    {.path = "include/" + name + ".h", .content = "int " + name + "(void);\n"},
                    {.path = "bin/" + name + "-tool",
                     .content = "#!/bin/sh\necho " + name + " " + version + "\n",
                     .executable = true}}};
}

// Copies `built` (served by `origin`) into a mirror folder at the place where
// `--mirror` looks for it when the lock names it under `original_url`
// (`http://HOST/PATH` -> MIRROR/HOST/PATH/<relative path>).
inline void copy_to_mirror(const RedistMirror& origin, const BuiltArtifact& built,
                           const std::filesystem::path& mirror_root,
                           std::string_view original_url) {
  auto rest = original_url.substr(original_url.find("://") + 3);
  const auto mirrored = mirror_root / std::string(rest) / built.relative_path;
  std::filesystem::create_directories(mirrored.parent_path());
  std::filesystem::copy_file(origin.root() / built.relative_path, mirrored);
}

// A file's content, or "<unreadable>" (so a missing file fails a comparison, not the test).
inline std::string read_text(const std::filesystem::path& path) {
  auto text = sys::read_file(path);
  return text ? *text : std::string("<unreadable>");
}

// A project folder with its own cache, running envkit with millisecond retry
// delays, a short stall timeout and no driver (unless a call's `env` says otherwise).
struct InstallProject {
  TempDir dir;
  std::filesystem::path root = dir.path() / "project";
  std::filesystem::path cache = dir.path() / "cache";
  std::string stall_timeout_ms = "500";

  InstallProject() { std::filesystem::create_directories(root); }
  [[nodiscard]] std::filesystem::path prefix() const { return root / ".envkit" / "env"; }
  [[nodiscard]] std::filesystem::path entries() const { return cache / "store" / "v1" / "entries"; }
  void lock(const std::vector<LockedSpec>& packages) const {
    std::ofstream(root / "envkit.lock") << lock_text(packages);
  }
  [[nodiscard]] sys::ProcessOutput envkit(
      std::vector<std::string> args,
      std::map<std::string, std::optional<std::string>> env = {}) const {
    std::vector<std::string> all = {"-C", root.string(), "--cache-dir", cache.string()};
    all.insert(all.end(), args.begin(), args.end());
    env.emplace("ENVKIT_RETRY_DELAY_MS", "1");
    env.emplace("ENVKIT_MAX_RETRY_DELAY_MS", "20");
    env.emplace("ENVKIT_STALL_TIMEOUT_MS", stall_timeout_ms);
    env.emplace("ENVKIT_OVERRIDE_DRIVER", "none");
    return run_envkit({.args = all, .env = env});
  }
  [[nodiscard]] sys::ProcessOutput install(
      std::vector<std::string> extra = {},
      std::map<std::string, std::optional<std::string>> env = {}) const {
    std::vector<std::string> args = {"install", "--frozen"};
    args.insert(args.end(), extra.begin(), extra.end());
    return envkit(args, std::move(env));
  }
  // The folders of entries/ (finished entries and record-less ones alike).
  [[nodiscard]] int entry_folders() const {
    int count = 0;
    std::error_code ignored;
    for (const auto& item : std::filesystem::directory_iterator(entries(), ignored))
      count += item.is_directory() ? 1 : 0;
    return count;
  }
};

// The messages of `envkit doctor --json`'s findings with id `id`.
inline std::vector<std::string> doctor_messages(const sys::ProcessOutput& run,
                                                const std::string& id) {
  std::vector<std::string> messages;
  const auto report = nlohmann::json::parse(run.out);
  for (const auto& finding : report.at("findings")) {
    if (finding.at("id").get<std::string>() == id)
      messages.push_back(finding.at("message").get<std::string>());
  }
  return messages;
}

// A project whose lock holds cuda 12.4.1 as one redist archive (library
// `foo` 1.2.3) served by nginx: the most common start of an install test.
// Check nginx_missing() (support/http_server.hpp) first.
struct ServedFooProject {
  InstallProject project;
  RedistMirror mirror{project.dir.path() / "www"};
  BuiltArtifact built = mirror.add_archive(library_component("foo", "1.2.3"));
  StaticHttpServer server{mirror.root()};
  ServedFooProject() { project.lock({{"cuda", "12.4.1", {lock_artifact(built, server.url(""))}}}); }
};

// Tests that make the prefix a venv of the machine's python3 and install with
// its pip skip, saying why, where that Python lacks venv, ensurepip or pip
// (scripts/setup installs python3-venv and python3-pip).
inline bool host_python_missing(std::source_location where = std::source_location::current()) {
  if (std::system("python3 -c 'import venv, ensurepip, pip' >/dev/null 2>&1") == 0) return false;
  skip_test(SkipKind::setup_should_provide,
            "no python3 with venv, ensurepip and pip on PATH (scripts/setup installs "
            "python3-venv and python3-pip)",
            where);
  return true;
}

// A 1 MiB tmpfs, where the kernel lets this process mount one (root in a
// container that allows it); the test skips elsewhere (small_disk_missing).
class SmallDisk {
 public:
  explicit SmallDisk(std::filesystem::path where) : path_(std::move(where)) {
    std::filesystem::create_directories(path_);
    auto mounted =
        sys::run_process({"mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", path_.string()});
    mounted_ = mounted && mounted->exit_code == 0;
  }
  ~SmallDisk() {
    if (mounted_) static_cast<void>(sys::run_process({"umount", path_.string()}));
  }
  SmallDisk(const SmallDisk&) = delete;
  SmallDisk& operator=(const SmallDisk&) = delete;
  [[nodiscard]] bool mounted() const { return mounted_; }

 private:
  std::filesystem::path path_;
  bool mounted_ = false;
};

// Whether `disk` could not be mounted; records an expected skip (not root, or a
// container that forbids mounts).
inline bool small_disk_missing(const SmallDisk& disk,
                               std::source_location where = std::source_location::current()) {
  if (disk.mounted()) return false;
  skip_test(SkipKind::expected,
            "cannot mount a small tmpfs here (needs root in a container that allows it)", where);
  return true;
}

}  // namespace envkit::test
