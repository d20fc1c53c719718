#include "envkit/store/wheel_entry.hpp"

#include <fmt/format.h>

#include "entry_files.hpp"
#include "envkit/archive/extract.hpp"
#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"

namespace envkit::store {

namespace fs = std::filesystem;

Result<EntryRecord> commit_unpacked_wheel(const Cache& cache, const fs::path& wheel,
                                          EntryRecord record) {
  auto staging = cache.fresh_staging(record.id);
  if (!staging) return std::move(staging).error();
  const auto discard = [&] {
    std::error_code ignored;
    fs::remove_all(*staging, ignored);
  };
  if (record.sha256.empty()) {
    auto sha256 = core::sha256_file(wheel);
    if (!sha256) {
      discard();
      return Error::failed(fmt::format("cannot read the wheel {}", text::quoted(wheel.string())));
    }
    record.sha256 = *std::move(sha256);
  }
  // Each file's sha256 is taken as it is written, or a large one's from
  // RECORD (ExtractOptions::trust_record): the wheel's own sha256 is the record's.
  auto unpacked =
      archive::extract_file(wheel, *staging, {.hash_files = true, .trust_record = true});
  if (!unpacked) {
    discard();
    return std::move(unpacked).error();
  }
  record.files = records_of(unpacked->entries);
  make_read_only(*staging, record.files);
  if (auto committed = cache.commit(*staging, record); !committed) {
    discard();
    return std::move(committed).error();
  }
  return record;
}

Result<EntryRecord> local_wheel_entry(const Cache& cache, const fs::path& wheel,
                                      const std::string& name) {
  const auto sha256 = core::sha256_file(wheel);
  if (!sha256) {
    return Error::failed(fmt::format("cannot read the wheel {}", text::quoted(wheel.string())));
  }
  ArtifactTarget target{.package = name};
  target.artifact.kind = specs::ArtifactKind::wheel;
  target.artifact.layout = specs::Layout::none;
  target.artifact.sha256 = *sha256;
  target.artifact.url = "file://" + fs::absolute(wheel).lexically_normal().string();
  const auto id = Cache::entry_id(target);
  auto found = cache.find(id);
  if (!found) return std::move(found).error();
  if (*found) return **std::move(found);
  auto lock = cache.lock_entry(id);  // another envkit may be unpacking it
  if (!lock) return std::move(lock).error();
  found = cache.find(id);
  if (!found) return std::move(found).error();
  if (*found) return **std::move(found);
  return commit_unpacked_wheel(
      cache, wheel,
      {.id = id, .url = target.artifact.url, .package = name, .component = name, .layout = "none"});
}

}  // namespace envkit::store
