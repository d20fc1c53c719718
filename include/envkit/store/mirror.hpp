#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/net/transport.hpp"
#include "envkit/store/cache.hpp"
#include "envkit/store/plan.hpp"

// `envkit mirror --out DIR`: the artifacts of a lock downloaded into DIR as
// DIR/HOST/PATH (net::mirror_file), so that any static HTTP server of DIR is a
// `--mirror` for `envkit install` (which asks MIRROR/HOST/PATH, net::mirror_url).
// A file reaches its place only whole and verified: it is written to DIR/.tmp,
// its sha256 checked, then renamed. Files already there with the locked sha256
// are not downloaded again, so a second run is cheap and an interrupted one resumes.
namespace envkit::store {

// One file of the mirror.
struct MirrorFile {
  ArtifactTarget target;
  std::filesystem::path path;  // relative to the mirror folder
};

struct MirrorSelection {
  // Empty: every platform of the lock.
  std::vector<specs::Platform> platforms;
  // nullopt: archives and wheels both. Else, per package, the packaging
  // `install --packaging P` takes (packaging_for). Runfiles and source
  // tarballs are artifacts of the lock too and are always mirrored.
  std::optional<Packaging> packaging;
};

struct MirrorOptions {
  std::filesystem::path out;
  MirrorSelection selection;
  net::Transport* transport = nullptr;  // required
  // Asked first, as `install` asks them (an upstream mirror of the team's).
  std::vector<std::string> mirrors;
  int jobs = 8;
  // Human progress lines ("mirrored ...").
  std::function<void(const std::string&)> note;
};

struct MirrorReport {
  std::filesystem::path out;
  std::size_t files = 0;    // downloaded by this run
  std::uint64_t bytes = 0;  // downloaded by this run
  std::size_t skipped = 0;  // there already with the locked sha256
  // There with another sha256 (corrupt, or changed by hand): downloaded again,
  // one sentence each.
  std::vector<std::string> repaired;
};

// The files `selection` asks for, one per path, sorted by path. An unusable
// URL, a platform the lock does not have, or two artifacts with different
// hashes at one path are errors.
[[nodiscard]] Result<std::vector<MirrorFile>> mirror_files(const lock::Lockfile& lockfile,
                                                           const MirrorSelection& selection);

// Downloads `file` (options.mirrors first) to `part`, checks its sha256
// against the lock, and renames it to `destination`; nothing reaches
// `destination` otherwise. `options.out` is named in the hint of a mismatch.
[[nodiscard]] Result<std::uint64_t> download_verified(const MirrorFile& file,
                                                      const std::filesystem::path& part,
                                                      const std::filesystem::path& destination,
                                                      const MirrorOptions& options);

[[nodiscard]] Result<MirrorReport> mirror(const lock::Lockfile& lockfile,
                                          const MirrorOptions& options);

}  // namespace envkit::store
