#include "envkit/store/mirror.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/store/fill.hpp"
#include "envkit/store/fs_error.hpp"
#include "envkit/sys/file_lock.hpp"
#include "envkit/sys/parallel.hpp"
#include "spool.hpp"

namespace envkit::store {

namespace fs = std::filesystem;

namespace {

using specs::Artifact;
using specs::ArtifactKind;

// Where the downloads are written before they are verified, beside the files
// so that the rename into place never crosses file systems.
constexpr std::string_view kStaging = ".tmp";
// Held while a run writes into the folder: two runs into one folder take turns.
constexpr std::string_view kLockFile = ".tmp.lock";

const lock::PlatformLock* find_platform(const lock::Lockfile& lockfile, specs::Platform platform) {
  const auto it =
      std::find_if(lockfile.platforms.begin(), lockfile.platforms.end(),
                   [&](const lock::PlatformLock& entry) { return entry.platform == platform; });
  return it == lockfile.platforms.end() ? nullptr : &*it;
}

// The platforms of the lock that `selection` names (all of them by default).
Result<std::vector<const lock::PlatformLock*>> chosen_platforms(const lock::Lockfile& lockfile,
                                                                const MirrorSelection& selection) {
  std::vector<const lock::PlatformLock*> chosen;
  if (selection.platforms.empty()) {
    for (const auto& entry : lockfile.platforms)
      chosen.push_back(&entry);
    return chosen;
  }
  for (const auto platform : selection.platforms) {
    const auto* entry = find_platform(lockfile, platform);
    if (!entry) {
      std::vector<std::string> names;
      for (const auto& present : lockfile.platforms)
        names.emplace_back(specs::to_string(present.platform));
      return Error::input(fmt::format("envkit.lock has no platform {}",
                                      text::quoted(specs::to_string(platform))))
          .hint(names.empty() ? "the lock lists no platform"
                              : "it has " + text::join(names, ", ") +
                                    "; add platforms with `envkit lock --platform P`");
    }
    if (std::find(chosen.begin(), chosen.end(), entry) == chosen.end()) chosen.push_back(entry);
  }
  return chosen;
}

bool selected(const lock::LockedPackage& package, const Artifact& artifact,
              std::optional<Packaging> packaging) {
  if (!packaging) return true;
  if (artifact.kind != ArtifactKind::archive && artifact.kind != ArtifactKind::wheel) return true;
  const auto wanted =
      artifact.kind == ArtifactKind::archive ? Packaging::archive : Packaging::wheel;
  return packaging_for(package, *packaging) == wanted;
}

// Adds `file` unless its path is taken: by the same bytes (one download
// serves both), or by other bytes (an error: the mirror could not serve both).
Result<void> add_file(std::map<fs::path, MirrorFile>& files, MirrorFile file) {
  const auto [it, inserted] = files.emplace(file.path, file);
  if (inserted || it->second.target.artifact.sha256 == file.target.artifact.sha256) return {};
  const auto& first = it->second.target.artifact;
  const auto& second = file.target.artifact;
  return Error::failed(fmt::format("two artifacts of the lock would be one file of the mirror, {}",
                                   text::quoted(file.path.string())))
      .because(fmt::format("{} has sha256 {}", url::redacted(first.url), first.sha256))
      .because(fmt::format("{} has sha256 {}", url::redacted(second.url), second.sha256))
      .hint("URLs that differ only in their query string name one file on a static server");
}

// ------------------------------------------------------------ one file

enum class Done { skipped, downloaded, repaired };

struct Outcome {
  Done done = Done::skipped;
  std::uint64_t bytes = 0;
  std::string actual;  // the sha256 a repaired file had
  std::optional<Error> error;
};

// What is at the file's place now: nullopt when nothing, else its sha256.
Result<std::optional<std::string>> present(const fs::path& file) {
  std::error_code error;
  const auto status = fs::symlink_status(file, error);
  if (status.type() == fs::file_type::not_found) return std::optional<std::string>();
  if (error) return cannot("look at", file, error);
  if (status.type() != fs::file_type::regular) {
    return Error::failed(
        fmt::format("{} is in the way of a mirrored file: it is not a regular file",
                    text::quoted(file.string())));
  }
  auto sha = core::sha256_file(file);
  if (!sha) return Error::failed("cannot read " + text::quoted(file.string()));
  return sha;
}

Outcome mirror_one(const MirrorFile& file, const fs::path& part, const MirrorOptions& options) {
  const auto destination = options.out / file.path;
  auto found = present(destination);
  if (!found) return {.error = std::move(found).error()};
  Outcome outcome;
  if (*found) {
    if (**found == file.target.artifact.sha256) return outcome;
    outcome.actual = **found;
  }
  auto downloaded = download_verified(file, part, destination, options);
  if (!downloaded) return {.error = std::move(downloaded).error()};
  outcome.done = outcome.actual.empty() ? Done::downloaded : Done::repaired;
  outcome.bytes = *downloaded;
  return outcome;
}

// ------------------------------------------------------------ the folder

// Takes the folder for this run and empties its staging (what a killed run left).
Result<sys::FileLock> take_folder(const MirrorOptions& options) {
  const auto staging = options.out / kStaging;
  std::error_code error;
  fs::create_directories(options.out, error);
  if (error) return cannot("create", options.out, error);
  auto held = sys::FileLock::acquire(options.out / kLockFile, sys::FileLock::Mode::exclusive, [&] {
    if (options.note) {
      options.note(fmt::format("waiting for another envkit writing into {}",
                               text::quoted(options.out.string())));
    }
  });
  if (!held) return held;
  fs::remove_all(staging, error);
  if (!error) fs::create_directories(staging, error);
  if (error) return cannot("create", staging, error);
  return held;
}

// The first error, with a count of the others.
Error first_failure(const std::vector<Outcome>& outcomes) {
  std::optional<Error> first;
  std::size_t others = 0;
  for (const auto& outcome : outcomes) {
    if (!outcome.error) continue;
    if (first) {
      ++others;
    } else {
      first = *outcome.error;
    }
  }
  if (others > 0) first->because(fmt::format("and {} more file(s) failed", others));
  return *first;
}

void note(const MirrorOptions& options, std::mutex& mutex, const std::string& line) {
  if (!options.note) return;
  const std::lock_guard guard(mutex);
  options.note(line);
}

}  // namespace

Result<std::uint64_t> download_verified(const MirrorFile& file, const fs::path& part,
                                        const fs::path& destination, const MirrorOptions& options) {
  const auto& artifact = file.target.artifact;
  std::error_code error;
  fs::create_directories(destination.parent_path(), error);
  if (error) return cannot("create", destination.parent_path(), error);
  TempFile temporary(part);
  auto stream =
      options.transport->open(artifact_request(file.target, options.mirrors, options.note));
  bool unreachable = false;
  auto spooled = spool(*stream, temporary.path(), unreachable);
  if (!spooled) return std::move(spooled).error();
  if (spooled->sha256 != artifact.sha256) {
    return checksum_mismatch(file.target.label(), artifact.sha256, spooled->sha256, stream->url())
        .hint(fmt::format("nothing was written to {}; the file changed on the server or in "
                          "transit. If a mirror serves it, check the mirror's copy",
                          text::quoted(options.out.string())));
  }
  fs::rename(temporary.path(), destination, error);
  if (error) return cannot("move into place", destination, error);
  temporary.keep();
  return spooled->bytes;
}

Result<std::vector<MirrorFile>> mirror_files(const lock::Lockfile& lockfile,
                                             const MirrorSelection& selection) {
  auto platforms = chosen_platforms(lockfile, selection);
  if (!platforms) return std::move(platforms).error();
  std::map<fs::path, MirrorFile> files;
  for (const auto* platform : *platforms) {
    for (const auto& package : platform->packages) {
      for (const auto& artifact : package.artifacts) {
        if (!selected(package, artifact, selection.packaging)) continue;
        auto path = net::mirror_file(artifact.url);
        if (!path) return std::move(path).error();
        MirrorFile file{.target = {.package = package.name,
                                   .version = package.version.original(),
                                   .artifact = artifact},
                        .path = std::move(*path)};
        // A runfile's patches are downloads of their own.
        for (std::size_t i = 0; i < artifact.patches.size(); ++i) {
          auto patch = file.target.patch(i);
          auto patch_path = net::mirror_file(patch.artifact.url);
          if (!patch_path) return std::move(patch_path).error();
          MirrorFile patch_file{.target = std::move(patch), .path = std::move(*patch_path)};
          if (auto added = add_file(files, std::move(patch_file)); !added) return added.error();
        }
        if (auto added = add_file(files, std::move(file)); !added) return added.error();
      }
    }
    if (!platform->python) continue;
    // The Python closure's wheels: `install --mirror` fetches them like the rest.
    for (const auto& wheel : platform->python->packages) {
      const auto artifact = lock::wheel_artifact(wheel, platform->platform);
      auto path = net::mirror_file(artifact.url);
      if (!path) return std::move(path).error();
      MirrorFile file{
          .target = {.package = wheel.name, .version = wheel.version, .artifact = artifact},
          .path = std::move(*path)};
      if (auto added = add_file(files, std::move(file)); !added) return added.error();
    }
  }
  std::vector<MirrorFile> out;
  out.reserve(files.size());
  for (auto& [path, file] : files)
    out.push_back(std::move(file));
  return out;
}

Result<MirrorReport> mirror(const lock::Lockfile& lockfile, const MirrorOptions& options) {
  auto listed = mirror_files(lockfile, options.selection);
  if (!listed) return std::move(listed).error();
  auto files = *std::move(listed);
  auto held = take_folder(options);
  if (!held) return std::move(held).error();
  // The largest first: the run takes at least as long as its biggest file.
  std::stable_sort(files.begin(), files.end(), [](const MirrorFile& a, const MirrorFile& b) {
    return a.target.artifact.size.value_or(0) > b.target.artifact.size.value_or(0);
  });
  const auto staging = options.out / kStaging;
  std::vector<Outcome> outcomes(files.size());
  std::mutex notes;
  sys::for_each_parallel(files.size(), options.jobs, [&](std::size_t i) {
    outcomes[i] = mirror_one(files[i], staging / fmt::format("{}.part", i), options);
    if (!outcomes[i].error && outcomes[i].done != Done::skipped) {
      note(options, notes, fmt::format("mirrored {}", files[i].target.label()));
    }
  });
  std::error_code ignored;
  fs::remove_all(staging, ignored);
  if (std::any_of(outcomes.begin(), outcomes.end(), [](const Outcome& o) { return o.error; })) {
    return first_failure(outcomes);
  }
  MirrorReport report{.out = options.out};
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto& outcome = outcomes[i];
    report.bytes += outcome.bytes;
    if (outcome.done == Done::skipped) {
      ++report.skipped;
      continue;
    }
    ++report.files;
    if (outcome.done == Done::repaired) {
      report.repaired.push_back(fmt::format("{} had sha256 {}, not the locked {}: downloaded again",
                                            files[i].path.string(), outcome.actual,
                                            files[i].target.artifact.sha256));
    }
  }
  return report;
}

}  // namespace envkit::store
