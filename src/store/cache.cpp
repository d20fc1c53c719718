#include "envkit/store/cache.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <set>

#include "envkit/core/env_vars.hpp"
#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/store/prefix.hpp"
#include "envkit/sys/fs.hpp"
#include "fs_error.hpp"

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
  return key;
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
  return fmt::format("{}-wheel-{}", sdist_sha256,
                     core::sha256_hex(fmt::format("python {}", python_version)).substr(0, 8));
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

Result<void> Cache::commit(const fs::path& staging, const EntryRecord& record) const {
  const auto target = entry_dir(record.id);
  remove_tree(target);  // an unfinished entry of a crashed run (we hold its lock)
  std::error_code error;
  fs::create_directories(target.parent_path(), error);
  fs::rename(staging, target, error);
  if (error) return cannot("move into the cache:", staging, error);
  return sys::write_file_atomic(store_ / "entries" / (record.id + ".json"), to_json(record));
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
  return sys::write_file_atomic(file, absolute + "\n");
}

Result<CacheInfo> Cache::info() const {
  CacheInfo info{.root = store_};
  std::error_code error;
  for (fs::directory_iterator it(store_ / "entries", error), end; !error && it != end;
       it.increment(error)) {
    if (it->path().extension() != ".json") continue;
    auto record = find(it->path().stem().string());
    if (!record) return std::move(record).error();
    if (!*record) continue;
    ++info.entries;
    info.bytes += unpacked_bytes(**record);
  }
  for (fs::directory_iterator it(store_ / "prefixes", error), end; !error && it != end;
       it.increment(error)) {
    if (auto text = sys::read_file(it->path()))
      info.prefixes.emplace_back(std::string(text::trim(*text)));
  }
  return info;
}

Result<CleanReport> Cache::remove_entries(
    const std::function<bool(const std::string&)>& keep) const {
  CleanReport report;
  std::set<std::string> ids;
  std::error_code error;
  for (fs::directory_iterator it(store_ / "entries", error), end; !error && it != end;
       it.increment(error)) {
    ids.insert(it->path().extension() == ".json" ? it->path().stem().string()
                                                 : it->path().filename().string());
  }
  for (const auto& id : ids) {
    if (keep(id)) continue;
    auto lock = sys::FileLock::try_acquire(store_ / "locks" / (id + ".lock"),
                                           sys::FileLock::Mode::exclusive);
    if (!lock) {
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
  return report;
}

Result<CleanReport> Cache::clean() const {
  auto report = remove_entries([](const std::string&) { return false; });
  if (!report) return report;
  // Staging left by crashed runs; a running envkit holds its entry's lock.
  std::error_code error;
  for (fs::directory_iterator it(store_ / "tmp", error), end; !error && it != end;
       it.increment(error)) {
    const auto id = it->path().stem().string();
    if (sys::FileLock::try_acquire(store_ / "locks" / (id + ".lock"),
                                   sys::FileLock::Mode::exclusive))
      remove_tree(it->path());
  }
  // Logs of source builds that failed (a finished entry's went with it).
  for (fs::directory_iterator it(store_ / "logs", error), end; !error && it != end;
       it.increment(error)) {
    const auto id = it->path().stem().string();
    std::error_code ignored;
    if (!fs::exists(entry_dir(id), ignored) &&
        sys::FileLock::try_acquire(store_ / "locks" / (id + ".lock"),
                                   sys::FileLock::Mode::exclusive))
      fs::remove(it->path(), ignored);
  }
  return report;
}

Result<CleanReport> Cache::prune() const {
  std::set<std::string> used;
  std::error_code error;
  for (fs::directory_iterator it(store_ / "prefixes", error), end; !error && it != end;
       it.increment(error)) {
    auto text = sys::read_file(it->path());
    if (!text) continue;
    const fs::path prefix_path(std::string(text::trim(*text)));
    auto prefix = Prefix::open(prefix_path);
    std::error_code ignored;
    if (!prefix || !fs::exists(prefix_path, ignored)) {
      fs::remove(it->path(), ignored);  // the prefix is gone
      continue;
    }
    // An install in progress holds this lock; wait for it so its entries count.
    auto lock = sys::FileLock::acquire(prefix->lock_path(), sys::FileLock::Mode::shared);
    if (!lock) return std::move(lock).error();
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

fs::path default_cache_dir(const std::optional<fs::path>& configured) {
  if (configured) return *configured;
  if (auto xdg = env::get(env::kXdgCacheHome); xdg && !xdg->empty())
    return fs::path(*xdg) / "envkit";
  if (auto home = env::get(env::kHome); home && !home->empty())
    return fs::path(*home) / ".cache" / "envkit";
  return fs::temp_directory_path() / "envkit-cache";
}

}  // namespace envkit::store
