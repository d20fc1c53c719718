#include "envkit/store/cache.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "envkit/core/env_vars.hpp"
#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/store/fs_error.hpp"
#include "envkit/store/prefix.hpp"
#include "envkit/sys/fs.hpp"
#include "envkit/sys/parallel.hpp"
#include "envkit/sys/unique_fd.hpp"

namespace envkit::store {

namespace fs = std::filesystem;

namespace {

// Removes a tree the cache made; its files are read-only, its folders are not.
std::uint64_t remove_tree(const fs::path& path) {
  std::error_code ignored;
  const auto count = fs::remove_all(path, ignored);
  return count == static_cast<std::uintmax_t>(-1) ? 0 : count;
}

// How an artifact is unpacked: the same bytes unpacked for another layout are another entry.
// A runfile's entry also depends on the components placed and the patches applied.
std::string layout_key(const ArtifactTarget& target) {
  const auto& artifact = target.artifact;
  auto key = fmt::format("{}\n{}\n{}\n{}", specs::to_string(artifact.layout), target.package,
                         artifact.component, artifact.wheel_root);
  if (!artifact.components.empty()) key += fmt::format("\n{}", fmt::join(artifact.components, ","));
  for (const auto& patch : artifact.patches)
    key += "\npatch " + patch.sha256;
  // A closure wheel's entry is the wheel unpacked (it held the file itself before).
  if (artifact.kind == specs::ArtifactKind::wheel && artifact.layout == specs::Layout::none)
    key += "\nunpacked";
  return key;
}

std::optional<FileStamp> stamp_from(const struct stat& info) {
  if (!S_ISREG(info.st_mode)) return std::nullopt;
  constexpr std::int64_t kNs = 1'000'000'000;
  return FileStamp{.size = static_cast<std::uint64_t>(info.st_size),
                   .inode = static_cast<std::uint64_t>(info.st_ino),
                   .mtime_ns = info.st_mtim.tv_sec * kNs + info.st_mtim.tv_nsec,
                   .ctime_ns = info.st_ctim.tv_sec * kNs + info.st_ctim.tv_nsec};
}

// A regular file's stamp, or nullopt when `path` is not one (gone, replaced by a link).
std::optional<FileStamp> stamp_of(const fs::path& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return std::nullopt;
  return stamp_from(info);
}

// Stamps of files under one root, each folder opened once (O_PATH) and kept
// while the next files are in it too.
class FolderLookup {
 public:
  explicit FolderLookup(fs::path root) : root_(std::move(root)) {}

  std::optional<FileStamp> stamp_of(const std::string& relative) {
    const auto slash = relative.rfind('/');
    const auto folder = slash == std::string::npos ? std::string() : relative.substr(0, slash);
    if (!folder_fd_.valid() || folder != folder_) {
      folder_ = folder;
      folder_fd_ =
          sys::UniqueFd(::open((root_ / folder).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    }
    if (!folder_fd_.valid()) return std::nullopt;
    struct stat info {};
    const auto name = slash == std::string::npos ? relative : relative.substr(slash + 1);
    if (::fstatat(folder_fd_.get(), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0)
      return std::nullopt;
    return stamp_from(info);
  }

 private:
  fs::path root_;
  std::string folder_;
  sys::UniqueFd folder_fd_;
};

Result<std::map<std::string, FileStamp>> stamps_of(const fs::path& root,
                                                   const std::vector<FileRecord>& files) {
  std::map<std::string, FileStamp> stamps;
  for (const auto& file : files) {
    if (file.type != archive::EntryType::file) continue;
    auto stamp = stamp_of(root / file.path);
    if (!stamp) {
      return cannot("read", root / file.path,
                    std::error_code(errno != 0 ? errno : ENOENT, std::generic_category()));
    }
    stamps[file.path] = *stamp;
  }
  return stamps;
}

// How a file of an entry differs from its record, hashing it; nullopt when it does not.
std::optional<std::string_view> hashed_difference(const fs::path& path, const FileRecord& file) {
  std::error_code ignored;
  const auto status = fs::symlink_status(path, ignored);
  if (!fs::exists(status)) return "missing";
  switch (file.type) {
    case archive::EntryType::directory:
      if (!fs::is_directory(status)) return "replaced";
      return std::nullopt;
    case archive::EntryType::symlink:
      if (!fs::is_symlink(status)) return "replaced";
      if (fs::read_symlink(path, ignored).string() != file.link_target) return "repointed";
      return std::nullopt;
    case archive::EntryType::file: {
      if (!fs::is_regular_file(status)) return "replaced";
      if (fs::file_size(path, ignored) != file.size) return "modified";
      const auto sha256 = core::sha256_file(path);
      if (!sha256) return "unreadable";
      if (*sha256 != file.sha256) return "modified";
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// "<id>.json" of a finished entry's record; nullopt for anything else in entries/.
std::optional<std::string> record_id(const fs::path& path) {
  const auto name = path.filename().string();
  if (name.starts_with('.') || path.extension() != ".json") return std::nullopt;
  return path.stem().string();
}

// The entry a leftover of entries/ or tmp/ belongs to: a record-less folder
// (`<id>`), a record never renamed in (`.<id>.json.tmp-XXXXXXXX`), staging
// (`tmp/<id>`, `tmp/<id>.build`, `tmp/<id>.download`, ...).
std::string leftover_id(const fs::path& path) {
  const auto name = path.filename().string();
  if (const auto temp = name.find(".json.tmp-"); name.starts_with('.') && temp != std::string::npos)
    return name.substr(1, temp - 1);
  return path.stem().string();
}

std::uint64_t unpacked_bytes(const EntryRecord& record) {
  std::uint64_t bytes = 0;
  for (const auto& file : record.files)
    bytes += file.size;
  return bytes;
}

}  // namespace

std::string ArtifactTarget::label() const {
  const auto kind = specs::to_string(artifact.kind);
  if (artifact.component.empty() || artifact.component == package)
    return fmt::format("{} {} ({})", package, version, kind);
  return fmt::format("{} of {} {} ({})", artifact.component, package, version, kind);
}

ArtifactTarget ArtifactTarget::patch(std::size_t index) const {
  ArtifactTarget patch = *this;
  const auto& source = artifact.patches.at(index);
  patch.artifact.url = source.url;
  patch.artifact.sha256 = source.sha256;
  patch.artifact.size = source.size;
  patch.artifact.patches.clear();
  patch.artifact.component = fmt::format("{} patch {}", artifact.component, index + 1);
  return patch;
}

Cache::Cache(fs::path root) : store_(std::move(root) / "store" / "v1") {}

std::string Cache::entry_id(const ArtifactTarget& target) {
  return target.artifact.sha256 + "-" + core::sha256_hex(layout_key(target)).substr(0, 8);
}

std::string Cache::source_entry_id(const ArtifactTarget& target,
                                   std::string_view toolchain_identity) {
  const auto& build_system = target.artifact.build_system;
  const auto key =
      fmt::format("{}\n{}\n{}", layout_key(target),
                  build_system ? specs::to_string(*build_system) : "detect", toolchain_identity);
  return target.artifact.sha256 + "-source-" + core::sha256_hex(key).substr(0, 8);
}

std::string Cache::sdist_wheel_id(std::string_view sdist_sha256, std::string_view python_version) {
  return fmt::format(
      "{}-wheel-{}", sdist_sha256,
      // "unpacked": entries before envkit installed wheels itself held the file.
      core::sha256_hex(fmt::format("python {}\nunpacked", python_version)).substr(0, 8));
}

fs::path Cache::build_log(const std::string& id) const {
  return store_ / "logs" / (id + ".log");
}

fs::path Cache::entry_dir(const std::string& id) const {
  return store_ / "entries" / id;
}

Result<std::optional<EntryRecord>> Cache::find(const std::string& id) const {
  const auto record_file = store_ / "entries" / (id + ".json");
  std::error_code ignored;
  if (!fs::exists(record_file, ignored) || !fs::is_directory(entry_dir(id), ignored))
    return std::optional<EntryRecord>{};
  auto text = sys::read_file(record_file);
  if (!text) return std::move(text).error();
  auto record = parse_entry_record(*text, record_file);
  if (!record) return std::move(record).error();
  return std::optional<EntryRecord>(*std::move(record));
}

Result<sys::FileLock> Cache::lock_entry(const std::string& id) const {
  return sys::FileLock::acquire(store_ / "locks" / (id + ".lock"), sys::FileLock::Mode::exclusive);
}

Result<fs::path> Cache::fresh_staging(const std::string& id) const {
  const auto staging = store_ / "tmp" / id;
  remove_tree(staging);
  std::error_code error;
  fs::create_directories(staging, error);
  if (error) return cannot("create", staging, error);
  return staging;
}

Result<sys::FileLock> Cache::use_entry(const std::string& id) const {
  return sys::FileLock::acquire(store_ / "locks" / (id + ".use"), sys::FileLock::Mode::shared);
}

Result<void> Cache::commit(const fs::path& staging, EntryRecord record) const {
  auto stamps = stamps_of(staging, record.files);
  if (!stamps) return std::move(stamps).error();
  record.stamps = *std::move(stamps);
  const auto target = entry_dir(record.id);
  const auto record_file = store_ / "entries" / (record.id + ".json");
  std::error_code error;
  fs::create_directories(target.parent_path(), error);
  if (error) return cannot("create", target.parent_path(), error);
  // The record is written (and flushed) before the entry moves in, so a full
  // disk fails here, with nothing of the entry in entries/; its rename is the
  // commit point.
  std::random_device seed;
  const auto pending = store_ / "entries" / fmt::format(".{}.json.tmp-{:08x}", record.id, seed());
  if (auto written = sys::write_new_file(pending, to_json(record)); !written) {
    auto failure = std::move(written).error();
    if (disk_full(failure)) failure.hint(std::string(kDiskFullHint));
    return failure;
  }
  const auto abandon = [&] {
    std::error_code ignored;
    fs::remove(pending, ignored);
  };
  remove_tree(target);  // an unfinished entry of a crashed run (we hold its lock)
  fs::rename(staging, target, error);
  if (error) {
    abandon();
    return cannot("move into the cache:", staging, error);
  }
  fs::rename(pending, record_file, error);
  if (error) {
    abandon();
    remove_tree(target);
    return cannot("commit", record_file, error);
  }
  return {};
}

// Stat'ing each path whole walks every folder again (CCCL: 1,850 files ten
// folders deep), so each folder is opened once and its files are looked up in
// it; a big entry is split over the cores. A warm install checks every entry.
std::vector<std::string> Cache::changed_files(const EntryRecord& record) const {
  const auto root = entry_dir(record.id);
  const std::vector<std::pair<std::string, FileStamp>> stamps(record.stamps.begin(),
                                                              record.stamps.end());
  constexpr std::size_t kPerTask = 512;
  const std::size_t tasks = (stamps.size() + kPerTask - 1) / kPerTask;
  std::vector<std::vector<std::string>> changed_by_task(tasks);
  sys::for_each_parallel(
      tasks, static_cast<int>(std::thread::hardware_concurrency()), [&](std::size_t task) {
        const auto begin = stamps.begin() + static_cast<std::ptrdiff_t>(task * kPerTask);
        const auto end = stamps.begin() + static_cast<std::ptrdiff_t>(
                                              std::min(stamps.size(), (task + 1) * kPerTask));
        FolderLookup folders(root);
        for (auto it = begin; it != end; ++it) {
          const auto& [path, stamp] = *it;
          const auto now = folders.stamp_of(path);
          if (!now) {
            changed_by_task[task].push_back(path + " (missing)");
          } else if (now->size != stamp.size || now->mtime_ns != stamp.mtime_ns) {
            changed_by_task[task].push_back(path + " (modified)");
          } else if (now->inode != stamp.inode) {
            changed_by_task[task].push_back(path + " (replaced)");
          }
        }
      });
  std::vector<std::string> changed;
  for (auto& some : changed_by_task)
    changed.insert(changed.end(), some.begin(), some.end());
  return changed;
}

void Cache::discard_entry(const std::string& id) const {
  std::error_code ignored;
  fs::remove(store_ / "entries" / (id + ".json"), ignored);  // from now on it is incomplete
  // Moved aside first, so the entry's path is free at once.
  std::random_device seed;
  const auto aside = store_ / "tmp" / fmt::format("{}.changed-{:08x}", id, seed());
  fs::create_directories(aside.parent_path(), ignored);
  fs::rename(entry_dir(id), aside, ignored);
  remove_tree(ignored ? entry_dir(id) : aside);
}

std::optional<std::pair<sys::FileLock, sys::FileLock>> Cache::claim_for_removal(
    const std::string& id) const {
  auto made =
      sys::FileLock::try_acquire(store_ / "locks" / (id + ".lock"), sys::FileLock::Mode::exclusive);
  if (!made) return std::nullopt;
  auto used =
      sys::FileLock::try_acquire(store_ / "locks" / (id + ".use"), sys::FileLock::Mode::exclusive);
  if (!used) return std::nullopt;
  return std::make_pair(*std::move(made), *std::move(used));
}

std::size_t Cache::remove_leftovers() const {
  std::size_t removed = 0;
  for (const auto& path : leftovers()) {
    // Held while removing: an envkit that starts making the entry now waits.
    const auto lock = sys::FileLock::try_acquire(store_ / "locks" / (leftover_id(path) + ".lock"),
                                                 sys::FileLock::Mode::exclusive);
    if (!lock) continue;  // being made now
    remove_tree(path);
    ++removed;
  }
  return removed;
}

std::vector<fs::path> Cache::leftovers() const {
  std::vector<fs::path> found;
  std::error_code error;
  for (fs::directory_iterator it(store_ / "entries", error), end; !error && it != end;
       it.increment(error)) {
    const auto& path = it->path();
    const auto name = path.filename().string();
    std::error_code ignored;
    const bool pending_record =
        name.starts_with('.') && name.find(".json.tmp-") != std::string::npos;
    const bool without_record =
        it->is_directory(ignored) && !fs::exists(store_ / "entries" / (name + ".json"), ignored);
    if (pending_record || without_record) found.push_back(path);
  }
  std::error_code tmp_error;
  for (fs::directory_iterator it(store_ / "tmp", tmp_error), end; !tmp_error && it != end;
       it.increment(tmp_error))
    found.push_back(it->path());
  return found;
}

Result<void> Cache::check_writable() const {
  std::error_code error;
  fs::create_directories(store_ / "tmp", error);
  if (!error && ::access((store_ / "tmp").c_str(), W_OK) != 0)
    error = std::error_code(errno, std::generic_category());
  if (error) {
    return Error::failed(fmt::format("the cache {} is not writable", text::quoted(store_.string())))
        .because(error.message())
        .hint("point --cache-dir (or ENVKIT_CACHE_DIR) at a writable folder");
  }
  return {};
}

Result<void> Cache::register_prefix(const fs::path& prefix) const {
  const auto absolute = fs::absolute(prefix).lexically_normal().string();
  const auto file = store_ / "prefixes" / core::sha256_hex(absolute).substr(0, 16);
  if (auto existing = sys::read_file(file); existing && *existing == absolute + "\n") return {};
  std::error_code error;
  fs::create_directories(file.parent_path(), error);
  if (error) return cannot("create", file.parent_path(), error);
  // Not synced: the install's receipts, synced later, commit it with them on a
  // journaling file system, and a registration lost in a crash costs only sharing
  // (`cache prune` may drop the prefix's entries; its hard links keep the files).
  return sys::write_file_atomic(file, absolute + "\n", sys::Durability::unsynced);
}

std::set<std::string> Cache::record_ids() const {
  std::set<std::string> ids;
  std::error_code error;
  for (fs::directory_iterator it(store_ / "entries", error), end; !error && it != end;
       it.increment(error)) {
    if (auto id = record_id(it->path())) ids.insert(*std::move(id));
  }
  return ids;
}

Result<CacheInfo> Cache::info() const {
  CacheInfo info{.root = store_};
  for (const auto& id : record_ids()) {
    auto record = find(id);
    if (!record) return std::move(record).error();
    if (!*record) continue;
    ++info.entries;
    info.bytes += unpacked_bytes(**record);
  }
  for (const auto& path : leftovers()) {
    if (sys::FileLock::try_acquire(store_ / "locks" / (leftover_id(path) + ".lock"),
                                   sys::FileLock::Mode::exclusive))
      ++info.incomplete;
  }
  std::error_code error;
  for (fs::directory_iterator it(store_ / "prefixes", error), end; !error && it != end;
       it.increment(error)) {
    if (it->path().filename().string().starts_with('.')) continue;  // being written
    if (auto text = sys::read_file(it->path()))
      info.prefixes.emplace_back(std::string(text::trim(*text)));
  }
  return info;
}

Result<CleanReport> Cache::remove_entries(
    const std::function<bool(const std::string&)>& keep) const {
  CleanReport report;
  for (const auto& id : record_ids()) {
    if (keep(id)) continue;
    // Held while removing; an install linking from the entry holds its use lock.
    const auto locks = claim_for_removal(id);
    if (!locks) {
      ++report.in_use;
      continue;
    }
    if (auto record = find(id); record && *record) report.bytes += unpacked_bytes(**record);
    // The record goes first: from then on the entry counts as unfinished.
    std::error_code ignored;
    fs::remove(store_ / "entries" / (id + ".json"), ignored);
    remove_tree(entry_dir(id));
    fs::remove(build_log(id), ignored);
    ++report.removed;
  }
  report.incomplete = remove_leftovers();
  return report;
}

Result<CleanReport> Cache::clean() const {
  auto report = remove_entries([](const std::string&) { return false; });
  if (!report) return report;
  // Logs of source builds that failed (a finished entry's went with it).
  std::error_code error;
  for (fs::directory_iterator it(store_ / "logs", error), end; !error && it != end;
       it.increment(error)) {
    const auto id = it->path().stem().string();
    std::error_code ignored;
    if (fs::exists(entry_dir(id), ignored)) continue;
    const auto lock = sys::FileLock::try_acquire(store_ / "locks" / (id + ".lock"),
                                                 sys::FileLock::Mode::exclusive);
    if (lock) fs::remove(it->path(), ignored);
  }
  return report;
}

Result<CleanReport> Cache::prune() const {
  std::set<std::string> used;
  std::error_code error;
  for (fs::directory_iterator it(store_ / "prefixes", error), end; !error && it != end;
       it.increment(error)) {
    // `.NAME.tmp-…`: a registration being written (write_file_atomic), not ours to judge.
    if (it->path().filename().string().starts_with('.')) continue;
    auto text = sys::read_file(it->path());
    if (!text) continue;
    const fs::path prefix_path(std::string(text::trim(*text)));
    auto prefix = Prefix::open(prefix_path);
    std::error_code ignored;
    if (!prefix || !fs::exists(prefix->lock_path().parent_path(), ignored)) {
      fs::remove(it->path(), ignored);  // the prefix is gone, and its folder
      continue;
    }
    // An install in progress holds this lock (it registers before it makes the
    // prefix): wait for it, so that its entries count and its prefix exists.
    auto lock = sys::FileLock::acquire(prefix->lock_path(), sys::FileLock::Mode::shared);
    if (!lock) return std::move(lock).error();
    if (!fs::exists(prefix_path, ignored)) {
      fs::remove(it->path(), ignored);  // the prefix is gone
      continue;
    }
    auto state = prefix->state();
    if (!state) return std::move(state).error();
    if (!*state) continue;
    for (const auto& package : (*state)->packages) {
      for (const auto& artifact : package.artifacts)
        used.insert(artifact.entry);
    }
  }
  return remove_entries([&](const std::string& id) { return used.contains(id); });
}

Result<VerifyReport> Cache::verify(bool repair) const {
  VerifyReport report;
  for (const auto& id : record_ids()) {
    BrokenEntry broken{.id = id};
    {
      auto in_use = use_entry(id);  // not cleaned away while it is read
      if (!in_use) return std::move(in_use).error();
      auto record = find(id);
      if (!record) return std::move(record).error();
      if (!*record) continue;
      ++report.entries;
      broken.package = (*record)->package;
      broken.component = (*record)->component;
      for (const auto& file : (*record)->files) {
        if (file.type == archive::EntryType::file) ++report.files;
        if (const auto how = hashed_difference(entry_dir(id) / file.path, file))
          broken.problems.push_back(fmt::format("{} ({})", file.path, *how));
      }
    }
    if (broken.problems.empty()) continue;
    if (repair) {
      if (const auto locks = claim_for_removal(id)) {
        discard_entry(id);
        std::error_code ignored;
        fs::remove(build_log(id), ignored);
        broken.removed = true;
      } else {
        ++report.in_use;
      }
    }
    report.broken.push_back(std::move(broken));
  }
  return report;
}

fs::path default_cache_dir(const std::optional<fs::path>& configured) {
  if (configured) return *configured;
  if (auto xdg = env::get(env::kXdgCacheHome); xdg && !xdg->empty())
    return fs::path(*xdg) / "envkit";
  if (auto home = env::get(env::kHome); home && !home->empty())
    return fs::path(*home) / ".cache" / "envkit";
  return fs::temp_directory_path() / "envkit-cache";
}

}  // namespace envkit::store
