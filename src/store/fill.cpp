#include "envkit/store/fill.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <thread>

#include "entry_files.hpp"
#include "envkit/archive/layout.hpp"
#include "envkit/archive/runfile.hpp"
#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/store/fs_error.hpp"
#include "spool.hpp"

namespace envkit::store {

net::DownloadRequest artifact_request(const ArtifactTarget& target,
                                      const std::vector<std::string>& mirrors,
                                      const std::function<void(const std::string&)>& note) {
  const auto& artifact = target.artifact;
  net::DownloadRequest request{.urls = candidate_urls(mirrors, artifact),
                               .expected_size = artifact.size,
                               .label = target.label()};
  if (note) {
    request.on_url_failed = [note, label = target.label()](const std::string& url,
                                                           const std::string& reason) {
      note(fmt::format("warning: {}: {} failed ({}); trying the next URL", label, url, reason));
    };
  }
  return request;
}

namespace fs = std::filesystem;

namespace {

// The download as the extractor's source, hashed and counted on the way.
class HashingSource final : public archive::Source {
 public:
  HashingSource(net::ByteStream& stream, std::string name)
      : stream_(stream), name_(std::move(name)) {}

  Result<std::size_t> read(std::span<std::byte> buffer) override {
    auto count = stream_.read(buffer);
    if (!count) {
      download_error_ = count.error();
      return count;
    }
    sha_.update(buffer.first(*count));
    bytes_ += *count;
    return count;
  }
  [[nodiscard]] std::string name() const override { return name_; }

  // Reads what the extractor left (tar padding, a tail) so the hash covers it all.
  Result<void> drain() {
    std::array<std::byte, 1 << 16> buffer{};
    while (true) {
      auto count = read(buffer);
      if (!count) return std::move(count).error();
      if (*count == 0) return {};
    }
  }

  [[nodiscard]] std::string digest() { return sha_.hex_digest(); }
  [[nodiscard]] std::uint64_t bytes() const { return bytes_; }
  [[nodiscard]] const std::optional<Error>& download_error() const { return download_error_; }

 private:
  net::ByteStream& stream_;
  std::string name_;
  core::Sha256 sha_;
  std::uint64_t bytes_ = 0;
  std::optional<Error> download_error_;
};

// Holds an xz decoding slot for the length of one unpack.
class SlotGuard {
 public:
  explicit SlotGuard(std::counting_semaphore<>* slots) : slots_(slots) {
    if (slots_) slots_->acquire();
  }
  ~SlotGuard() {
    if (slots_) slots_->release();
  }
  SlotGuard(const SlotGuard&) = delete;
  SlotGuard& operator=(const SlotGuard&) = delete;

 private:
  std::counting_semaphore<>* slots_;
};

bool is_zip(const specs::Artifact& artifact) {
  return artifact.kind == specs::ArtifactKind::wheel || artifact.format == "zip" ||
         artifact.format == "whl";
}

// A closure package's wheel (layout none): unpacked verbatim, at its archive
// paths; envkit's wheel installer places its files (wheel_install.hpp).
bool closure_wheel(const specs::Artifact& artifact) {
  return artifact.kind == specs::ArtifactKind::wheel && artifact.layout == specs::Layout::none;
}

bool is_runfile(const specs::Artifact& artifact) {
  return artifact.kind == specs::ArtifactKind::runfile;
}

// Whether unpacking may run an xz decoder: runfiles too, whose payload's
// compression only their header tells.
bool needs_xz_slot(const specs::Artifact& artifact) {
  return artifact.format == "tar.xz" || artifact.format == "txz" || is_runfile(artifact);
}

// Limits against decompression bombs: generous for real CUDA archives (they
// unpack to 2-4 times their size), far below what a bomb would write.
std::uint64_t unpack_limit(const specs::Artifact& artifact) {
  constexpr std::uint64_t kFloor = std::uint64_t{4} << 30;
  constexpr std::uint64_t kWithoutSize = std::uint64_t{32} << 30;
  if (!artifact.size) return kWithoutSize;
  return std::max(kFloor, *artifact.size * 40);
}

Error mismatch(const ArtifactTarget& target, const std::string& url, const std::string& actual) {
  return checksum_mismatch(target.label(), target.artifact.sha256, actual, url)
      .hint(
          "the file changed on the server or in transit; nothing was installed from it. If a "
          "mirror serves it, check the mirror's copy");
}

FillOutcome failure(Error error, bool unreachable = false) {
  return FillOutcome{.error = std::move(error), .unreachable = unreachable};
}

// A full disk while unpacking: the extractor names the archive's entry, this
// says which disk (where the cache unpacks), and what to do.
Error located(Error error, const fs::path& staging) {
  if (!disk_full(error)) return error;
  return error.because(fmt::format("while unpacking into {}", text::quoted(staging.string())))
      .hint(std::string(kDiskFullHint));
}

// A wheel's large libraries inflate side by side on every core: inflating is
// most of a cold wheel install, and one cuDNN wheel holds 1 GB of them.
unsigned unpack_threads() {
  constexpr unsigned kMost = 8;
  return std::clamp(std::thread::hardware_concurrency(), 1U, kMost);
}

archive::LayoutTarget layout_target(const ArtifactTarget& target) {
  const auto& artifact = target.artifact;
  return {.layout = artifact.layout,
          .package = target.package,
          .component = artifact.component.empty() ? target.package : artifact.component,
          .wheel_root = artifact.wheel_root,
          .components = artifact.components};
}

archive::ExtractOptions base_options(const specs::Artifact& artifact) {
  // A wheel's RECORD gives its large files' hashes: the lock's sha256 vouches for the wheel.
  const bool wheel = artifact.kind == specs::ArtifactKind::wheel || artifact.format == "whl";
  return {.max_bytes = unpack_limit(artifact),
          .hash_files = true,
          .trust_record = wheel,
          .threads = unpack_threads()};
}

archive::ExtractOptions options_for(const ArtifactTarget& target) {
  if (closure_wheel(target.artifact)) return base_options(target.artifact);
  return archive::layout_options(layout_target(target), base_options(target.artifact));
}

std::unique_ptr<net::ByteStream> open_download(const ArtifactTarget& target,
                                               const FillContext& context) {
  return context.transport->open(artifact_request(target, context.mirrors, context.note));
}

// The download read through `source` to its end: its bytes must be the
// locked ones, whatever an extractor made of them (a hash mismatch explains a
// "corrupt archive" better than the archive does).
Result<void> check_download(HashingSource& source, const ArtifactTarget& target,
                            const net::ByteStream& stream, std::string& digest,
                            std::uint64_t& bytes, bool& unreachable) {
  auto drained = source.drain();
  bytes = source.bytes();
  if (source.download_error()) {
    unreachable = true;
    return *source.download_error();
  }
  if (!drained) return std::move(drained).error();
  digest = source.digest();
  if (digest != target.artifact.sha256) return mismatch(target, stream.url(), digest);
  return {};
}

// The download written whole to `file`, which must be the locked bytes.
Result<void> spool_checked(const ArtifactTarget& target, net::ByteStream& stream,
                           const fs::path& file, std::string& digest, std::uint64_t& bytes,
                           bool& unreachable) {
  auto spooled = spool(stream, file, unreachable);
  if (!spooled) return std::move(spooled).error();
  digest = spooled->sha256;
  bytes = spooled->bytes;
  if (digest != target.artifact.sha256) return mismatch(target, stream.url(), digest);
  return {};
}

// Unpacks a tar.* (or a runfile's payload) straight from the download.
Result<archive::ExtractResult> stream_unpack(const ArtifactTarget& target, net::ByteStream& stream,
                                             const fs::path& staging,
                                             const archive::ExtractOptions& options,
                                             std::string& digest, std::uint64_t& bytes,
                                             bool& unreachable) {
  HashingSource source(stream, url::redacted(target.artifact.url));
  auto extracted = is_runfile(target.artifact) ? archive::extract_runfile(source, staging, options)
                                               : archive::extract(source, staging, options);
  if (auto checked = check_download(source, target, stream, digest, bytes, unreachable); !checked) {
    return std::move(checked).error();
  }
  return extracted;
}

// Unpacks a zip/wheel as it downloads (extract_zip_stream: entries inflate as
// their data comes, nothing spooled). Nothing of it is used unless the whole
// download is the locked one: on a mismatch the caller discards `staging`. A
// zip that cannot be read as it comes (a data descriptor, a symlink) is
// downloaded again, whole, and unpacked from the file, as uv does.
Result<archive::ExtractResult> zip_unpack(const ArtifactTarget& target,
                                          std::unique_ptr<net::ByteStream> stream,
                                          const FillContext& context, const fs::path& staging,
                                          std::string& digest, std::uint64_t& bytes,
                                          bool& unreachable) {
  const auto options = options_for(target);
  {
    HashingSource source(*stream, url::redacted(target.artifact.url));
    auto extracted = archive::extract_zip_stream(source, staging, options);
    if (!extracted || *extracted) {
      if (auto checked = check_download(source, target, *stream, digest, bytes, unreachable);
          !checked) {
        return std::move(checked).error();
      }
      if (!extracted) return std::move(extracted).error();
      return std::move(**extracted);
    }
  }
  std::error_code ignored;
  fs::remove_all(staging, ignored);
  stream = open_download(target, context);
  const TempFile file(staging.string() + ".download");
  if (auto spooled = spool_checked(target, *stream, file.path(), digest, bytes, unreachable);
      !spooled) {
    return std::move(spooled).error();
  }
  return archive::extract_file(file.path(), staging, options);
}

// The file name of a closure package's sdist, as pip needs it (its archive
// suffix): only sdists are kept whole, a wheel is unpacked.
Result<std::string> kept_file_name(const ArtifactTarget& target) {
  const auto name = url::file_name(target.artifact.url);
  if (name.ends_with(".whl") || name.empty() || name.starts_with('.') ||
      name.find_first_of(std::string_view("/\0", 2)) != std::string::npos) {
    return Error::failed(fmt::format("{}: {} does not name a source distribution file",
                                     target.label(), url::redacted(target.artifact.url)))
        .hint("an sdist's URL ends in its file name, `NAME-VERSION.tar.gz`");
  }
  return name;
}

// Python sdists, built into wheels at install, are kept whole: the entry holds
// the file, named as on the index (pip reads the name).
Result<archive::ExtractResult> spool_keep(const ArtifactTarget& target, net::ByteStream& stream,
                                          const fs::path& staging, std::string& digest,
                                          std::uint64_t& bytes, bool& unreachable) {
  auto checked = kept_file_name(target);
  if (!checked) return std::move(checked).error();
  const std::string name = *std::move(checked);
  std::error_code error;
  fs::create_directories(staging, error);
  if (error) {
    return Error::failed(fmt::format("cannot create {}", text::quoted(staging.string())))
        .because(error.message());
  }
  if (auto spooled = spool_checked(target, stream, staging / name, digest, bytes, unreachable);
      !spooled) {
    return std::move(spooled).error();
  }
  archive::ExtractResult kept;
  kept.entries.push_back(
      {.path = name, .type = archive::EntryType::file, .size = bytes, .sha256 = digest});
  kept.bytes_written = bytes;
  return kept;
}

// A closure package's sdist (layout none): kept as downloaded.
bool kept_whole(const specs::Artifact& artifact) {
  return artifact.kind == specs::ArtifactKind::source && artifact.layout == specs::Layout::none;
}

// Removes a folder of the cache's tmp/ when it goes out of scope.
class ScratchDir {
 public:
  explicit ScratchDir(fs::path path) : path_(std::move(path)) { remove(); }
  ~ScratchDir() { remove(); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  [[nodiscard]] const fs::path& path() const { return path_; }

 private:
  void remove() const {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  fs::path path_;
};

// An artifact downloaded, verified and unpacked: what was unpacked, and the download.
struct Unpacked {
  std::vector<FileRecord> files;
  std::string digest;
  std::uint64_t bytes = 0;
  std::vector<PatchRecord> patches;   // applied over it, in order
  std::vector<std::string> warnings;  // the unpacking's (a wheel's stale METADATA row)
};

// A runfile whose payload is not laid out as its era's is refused, not installed empty.
Result<void> placed_something(const ArtifactTarget& target,
                              const std::vector<archive::ExtractedEntry>& entries) {
  const bool any = std::any_of(entries.begin(), entries.end(), [](const auto& entry) {
    return entry.type != archive::EntryType::directory;
  });
  if (any) return {};
  return Error::failed(fmt::format("{}: nothing of it was placed", target.label()))
      .because(fmt::format("{} holds no file of the components the lock names ({})",
                           url::redacted(target.artifact.url),
                           fmt::join(target.artifact.components, ", ")))
      .hint(fmt::format("report this with the URL: its payload is not laid out as envkit expects "
                        "for `layout: {}` (docs/runfiles.md)",
                        specs::to_string(target.artifact.layout)));
}

// Moves a patch's unpacked tree over `destination`: its files and links replace
// the release's (a patched library keeps its name), folders merge.
Result<void> lay_over(const fs::path& patch_root, const fs::path& destination,
                      const std::vector<archive::ExtractedEntry>& entries) {
  for (const auto& entry : entries) {
    if (entry.type == archive::EntryType::directory) continue;
    const auto to = destination / entry.path;
    std::error_code error;
    fs::create_directories(to.parent_path(), error);
    if (!error && fs::is_directory(fs::symlink_status(to, error))) {
      return Error::failed(
          fmt::format("the patch replaces the folder {} with a file", text::quoted(entry.path)));
    }
    fs::rename(patch_root / entry.path, to, error);
    if (error) {
      return Error::failed(fmt::format("cannot apply the patch's {}", text::quoted(entry.path)))
          .because(error.message());
    }
  }
  return {};
}

// NVIDIA's patch runfiles for `target`, each downloaded, verified and unpacked
// on its own, then laid over `destination` in order.
// `entries` gets the patches' entries after the release's own.
Result<void> apply_patches(const ArtifactTarget& target, const fs::path& destination,
                           const FillContext& context,
                           std::vector<archive::ExtractedEntry>& entries, Unpacked& unpacked,
                           bool& unreachable) {
  const auto& patches = target.artifact.patches;
  for (std::size_t i = 0; i < patches.size(); ++i) {
    const auto patch = target.patch(i);
    const ScratchDir scratch(fmt::format("{}.patch{}", destination.string(), i + 1));
    auto stream = open_download(patch, context);
    std::string digest;
    std::uint64_t bytes = 0;
    auto extracted = stream_unpack(
        patch, *stream, scratch.path(),
        archive::runfile_patch_options(layout_target(target), base_options(patch.artifact)), digest,
        bytes, unreachable);
    unpacked.bytes += bytes;
    if (!extracted) return std::move(extracted).error();
    if (auto placed = placed_something(patch, extracted->entries); !placed) return placed;
    if (auto laid = lay_over(scratch.path(), destination, extracted->entries); !laid) {
      return Error::failed(fmt::format("cannot apply {}", patch.label()))
          .because(laid.error().message());
    }
    entries.insert(entries.end(), extracted->entries.begin(), extracted->entries.end());
    unpacked.patches.push_back({.sha256 = digest, .url = url::without_credentials(patches[i].url)});
  }
  return {};
}

// Downloads `target`, checks its sha256 and unpacks it under `destination`.
Result<Unpacked> fetch_unpacked(const ArtifactTarget& target, const fs::path& destination,
                                const FillContext& context, bool& unreachable) {
  const auto& artifact = target.artifact;
  const SlotGuard slot(needs_xz_slot(artifact) ? context.xz_slots : nullptr);
  auto stream = open_download(target, context);
  Unpacked unpacked;
  auto extracted =
      kept_whole(artifact)
          ? spool_keep(target, *stream, destination, unpacked.digest, unpacked.bytes, unreachable)
      : is_zip(artifact) ? zip_unpack(target, std::move(stream), context, destination,
                                      unpacked.digest, unpacked.bytes, unreachable)
                         : stream_unpack(target, *stream, destination, options_for(target),
                                         unpacked.digest, unpacked.bytes, unreachable);
  if (!extracted) return std::move(extracted).error();
  if (is_runfile(artifact)) {
    if (auto placed = placed_something(target, extracted->entries); !placed) return placed.error();
  }
  if (auto patched =
          apply_patches(target, destination, context, extracted->entries, unpacked, unreachable);
      !patched)
    return std::move(patched).error();
  // A patched path's record is the patch's (records_of keeps the last per path).
  unpacked.files = records_of(extracted->entries);
  unpacked.warnings = std::move(extracted->warnings);
  return unpacked;
}

// Makes `staging` (holding `files`) cache entry `id`, its record written last.
FillOutcome commit_entry(const Cache& cache, const ArtifactTarget& target, const std::string& id,
                         const fs::path& staging, std::vector<FileRecord> files,
                         const Unpacked& download) {
  make_read_only(staging, files);
  EntryRecord record{.id = id,
                     .sha256 = download.digest,
                     .url = url::without_credentials(target.artifact.url),
                     .package = target.package,
                     .component = target.artifact.component,
                     .layout = std::string(specs::to_string(target.artifact.layout)),
                     .patches = download.patches,
                     .files = std::move(files)};
  if (auto committed = cache.commit(staging, record); !committed) {
    std::error_code ignored;
    fs::remove_all(staging, ignored);
    return failure(std::move(committed).error());
  }
  return FillOutcome{.record = std::move(record), .downloaded_bytes = download.bytes};
}

FillOutcome download_and_unpack(const Cache& cache, const ArtifactTarget& target,
                                const std::string& id, const FillContext& context) {
  auto staging = cache.fresh_staging(id);
  if (!staging) return failure(std::move(staging).error());
  const auto discard = [&] {
    std::error_code ignored;
    fs::remove_all(*staging, ignored);
  };
  bool unreachable = false;
  auto unpacked = fetch_unpacked(target, *staging, context, unreachable);
  if (!unpacked) {
    discard();
    return failure(located(std::move(unpacked).error(), *staging), unreachable);
  }
  auto files = std::move(unpacked->files);
  // Links the packaging cannot hold (wheels) or leaves out (python, pip).
  const auto layout = target.artifact.layout;
  if (layout == specs::Layout::nvidia_wheel || layout == specs::Layout::python_standalone ||
      layout == specs::Layout::python_standalone_full) {
    auto links = layout == specs::Layout::nvidia_wheel ? archive::add_library_links(*staging)
                                                       : archive::add_python_links(*staging);
    if (!links) {
      discard();
      return failure(std::move(links).error());
    }
    for (auto& link : records_of(*links))
      files.push_back(std::move(link));
    std::sort(files.begin(), files.end(),
              [](const FileRecord& a, const FileRecord& b) { return a.path < b.path; });
  }
  auto outcome = commit_entry(cache, target, id, *staging, std::move(files), *unpacked);
  outcome.warnings = std::move(unpacked->warnings);
  return outcome;
}

// A source artifact: downloaded and unpacked into a private scratch folder,
// built there, and what its install step installs becomes the entry. The
// build is configured for the entry's own path, so files that name their
// prefix (pkg-config's `prefix=`) name the entry.
FillOutcome build_from_source_entry(const Cache& cache, const ArtifactTarget& target,
                                    const std::string& id, const FillContext& context,
                                    const SourceBuilder& builder) {
  const auto label = fmt::format("{} {}", target.package, target.version);
  if (const auto& declared = target.artifact.build_system) {
    // Say what is missing before downloading anything.
    if (auto tools = builder.check_tools(*declared, label); !tools)
      return failure(std::move(tools).error());
  }
  auto staging = cache.fresh_staging(id);
  if (!staging) return failure(std::move(staging).error());
  const ScratchDir work(staging->string() + ".build");
  bool unreachable = false;
  auto unpacked = fetch_unpacked(target, work.path() / "src", context, unreachable);
  const auto discard = [&] {
    std::error_code ignored;
    fs::remove_all(*staging, ignored);
  };
  if (!unpacked) {
    discard();
    return failure(located(std::move(unpacked).error(), work.path()), unreachable);
  }
  if (context.note)
    context.note(fmt::format("building {} from source ({})", label, builder.description()));
  auto built = builder.build({.label = label,
                              .source = work.path() / "src",
                              .work = work.path(),
                              .prefix = cache.entry_dir(id),
                              .install_root = *staging,
                              .log = cache.build_log(id),
                              .build_system = target.artifact.build_system});
  if (!built) {
    discard();
    return failure(std::move(built).error());
  }
  auto files = record_tree(*staging);
  if (!files) {
    discard();
    return failure(std::move(files).error());
  }
  auto outcome = commit_entry(cache, target, id, *staging, *std::move(files), *unpacked);
  outcome.warnings = *std::move(built);
  return outcome;
}

}  // namespace

std::vector<std::string> candidate_urls(const std::vector<std::string>& mirrors,
                                        const std::string& url, const std::string& sha256) {
  std::vector<std::string> urls;
  for (const auto& mirror : mirrors)
    urls.push_back(net::artifact_mirror_url(mirror, url, sha256));
  urls.push_back(url);
  return urls;
}

std::vector<std::string> candidate_urls(const std::vector<std::string>& mirrors,
                                        const specs::Artifact& artifact) {
  auto urls = candidate_urls(mirrors, artifact.url, artifact.sha256);
  urls.insert(urls.end(), artifact.also_at.begin(), artifact.also_at.end());
  return urls;
}

FillOutcome fill_entry(const Cache& cache, const ArtifactTarget& target,
                       const FillContext& context) {
  // A source artifact's entry is its build with this machine's compiler; a
  // Python sdist (kept whole) is built later, by the environment's Python.
  std::optional<std::string> builder_identity;
  if (target.artifact.kind == specs::ArtifactKind::source && !kept_whole(target.artifact)) {
    const auto label = fmt::format("{} {}", target.package, target.version);
    if (!context.source_builder)
      return failure(
          Error::failed(fmt::format("{} is built from source, and nothing here builds "
                                    "it",
                                    label)));
    auto identity = context.source_builder->identity(label);
    if (!identity) return failure(std::move(identity).error());
    builder_identity = *std::move(identity);
  }
  const auto id = builder_identity ? Cache::source_entry_id(target, *builder_identity)
                                   : Cache::entry_id(target);
  // Taken before the entry is looked up and kept by the outcome, so that a
  // `cache clean` running now cannot remove it before it is linked.
  // A cache this user cannot write (shared read-only, used --offline) gives no
  // lock, and no one cleans it from here either.
  auto in_use = cache.use_entry(id);
  const auto lock_used = in_use ? std::make_shared<sys::FileLock>(*std::move(in_use)) : nullptr;
  const auto usable = [&](FillOutcome outcome) {
    outcome.in_use = lock_used;
    return outcome;
  };
  auto found = cache.find(id);
  if (!found) return failure(std::move(found).error());
  std::vector<std::string> changed;
  if (*found) {
    changed = cache.changed_files(**found);
    if (changed.empty()) return usable(FillOutcome{.record = std::move(**found)});
  }
  if (!context.transport) {
    if (!changed.empty()) {
      return FillOutcome{.error = Error::failed(fmt::format("{}: its cache entry changed ({})",
                                                            target.label(), changed.front())),
                         .missing_offline = true};
    }
    return FillOutcome{.error = Error::failed(target.label() + " is not in the cache"),
                       .missing_offline = true};
  }
  // Another envkit may be making the same entry: wait for it, then look again.
  auto lock = cache.lock_entry(id);
  if (!lock) return failure(std::move(lock).error());
  found = cache.find(id);
  if (!found) return failure(std::move(found).error());
  if (*found) {
    changed = cache.changed_files(**found);
    if (changed.empty()) return usable(FillOutcome{.record = std::move(**found)});
    // Written through a prefix's hard link: made again from the download.
    if (context.note) {
      context.note(fmt::format(
          "warning: {}: the cache's copy changed ({}{}); unpacking it again", target.label(),
          changed.front(),
          changed.size() > 1 ? fmt::format(" and {} more", changed.size() - 1) : std::string()));
    }
    cache.discard_entry(id);
  }
  if (builder_identity)
    return usable(build_from_source_entry(cache, target, id, context, *context.source_builder));
  return usable(download_and_unpack(cache, target, id, context));
}

}  // namespace envkit::store
