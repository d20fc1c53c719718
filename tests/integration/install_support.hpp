#pragma once

// Shared by the install tests: locks written from fixture artifacts, and
// checks of a prefix the way a user would look at it.
#include <filesystem>
#include <string>
#include <vector>

#include "envkit/lock/lockfile.hpp"
#include "support/envkit_runner.hpp"
#include "support/redist_fixture.hpp"

namespace envkit::test {

// An artifact of the lock for a fixture artifact served at `base_url`.
inline recipes::Artifact lock_artifact(const BuiltArtifact& built, const std::string& base_url) {
  recipes::Artifact artifact;
  artifact.platform = specs::Platform::linux_x86_64;
  artifact.component = built.component;
  artifact.kind = built.wheel ? recipes::ArtifactKind::wheel : recipes::ArtifactKind::archive;
  artifact.url = base_url + "/" + built.relative_path;
  artifact.sha256 = built.sha256;
  if (!built.wheel) artifact.size = built.size;
  artifact.format = built.wheel ? "whl" : "tar.xz";
  artifact.layout = built.wheel ? recipes::Layout::nvidia_wheel : recipes::Layout::nvidia_redist;
  artifact.wheel_root = built.wheel_root;
  return artifact;
}

// A lock for linux-x86_64 holding one package per (name, version, artifacts).
struct LockedSpec {
  std::string name;
  std::string version;
  std::vector<recipes::Artifact> artifacts;
};

inline std::string lock_text(const std::vector<LockedSpec>& packages) {
  lock::Lockfile lockfile;
  lockfile.manifest_hash = "sha256:" + std::string(64, '0');
  lockfile.system.source = "none";
  lock::PlatformLock platform;
  platform.platform = specs::Platform::linux_x86_64;
  for (const auto& spec : packages) {
    platform.packages.push_back({.name = spec.name,
                                 .version = specs::Version::parse(spec.version).value(),
                                 .build = "",
                                 .external = std::nullopt,
                                 .requires_ = {},
                                 .artifacts = spec.artifacts});
  }
  lockfile.platforms.push_back(std::move(platform));
  return lock::write(lockfile);
}

}  // namespace envkit::test
