// Kernel coverage by artifact sha256: <cache>/kernels/<sha256>.json, as
//   {"format": 1, "sass": ["7.5", "9.0a"], "ptx": ["9.0", "10.0f"], "newest_ptx_isa": "9.0"}
// A capability with "a" stands in the coverage's *_arch_specific list, with "f"
// in ptx_family_specific (docs/doctor.md, "Kernel coverage").
#include "envkit/store/kernel_cache.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <system_error>

#include "envkit/sys/fs.hpp"

namespace envkit::store {

namespace fs = std::filesystem;

namespace {

constexpr int kFormat = 1;
constexpr std::size_t kMaxRecordBytes = std::size_t{1} << 20;

bool is_sha256(std::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

fs::path record_path(const fs::path& cache_dir, std::string_view sha256) {
  return cache_dir / "kernels" / (std::string(sha256) + ".json");
}

bool listed(const std::vector<elf::Arch>& archs, elf::Arch arch) {
  return std::find(archs.begin(), archs.end(), arch) != archs.end();
}

nlohmann::json texts(const std::vector<elf::Arch>& archs, const std::vector<elf::Arch>& specific,
                     const std::vector<elf::Arch>& family) {
  auto out = nlohmann::json::array();
  for (const elf::Arch arch : archs) {
    const char* suffix = listed(specific, arch) ? "a" : listed(family, arch) ? "f" : "";
    out.push_back(elf::capability_text(arch) + suffix);
  }
  return out;
}

// Reads a list back; false on anything that is not a capability with an optional suffix.
bool read_archs(const nlohmann::json& list, std::vector<elf::Arch>& archs,
                std::vector<elf::Arch>& specific, std::vector<elf::Arch>* family) {
  if (!list.is_array()) return false;
  for (const auto& item : list) {
    if (!item.is_string()) return false;
    std::string_view text = item.get_ref<const std::string&>();
    std::vector<elf::Arch>* also = nullptr;
    if (text.ends_with('a')) {
      also = &specific;
    } else if (text.ends_with('f') && family != nullptr) {
      also = family;
    }
    if (also != nullptr) text.remove_suffix(1);
    const auto arch = elf::parse_capability(text);
    if (!arch || listed(archs, *arch)) return false;
    archs.push_back(*arch);
    if (also != nullptr) also->push_back(*arch);
  }
  return std::is_sorted(archs.begin(), archs.end());
}

}  // namespace

std::optional<elf::KernelCoverage> cached_coverage(const fs::path& cache_dir,
                                                   std::string_view artifact_sha256) {
  if (!is_sha256(artifact_sha256)) return std::nullopt;
  std::error_code ignored;
  const fs::path path = record_path(cache_dir, artifact_sha256);
  if (!fs::is_regular_file(path, ignored)) return std::nullopt;
  auto text = sys::read_file(path, kMaxRecordBytes);
  if (!text) return std::nullopt;
  const auto record = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!record.is_object() || record.value("format", 0) != kFormat || !record.contains("sass") ||
      !record.contains("ptx") || !record.contains("newest_ptx_isa") ||
      !record["newest_ptx_isa"].is_string()) {
    return std::nullopt;
  }
  elf::KernelCoverage coverage;
  if (!read_archs(record["sass"], coverage.sass, coverage.sass_arch_specific, nullptr) ||
      !read_archs(record["ptx"], coverage.ptx, coverage.ptx_arch_specific,
                  &coverage.ptx_family_specific)) {
    return std::nullopt;
  }
  coverage.newest_ptx_isa = record["newest_ptx_isa"].get<std::string>();
  if (coverage.ptx.empty() != coverage.newest_ptx_isa.empty()) return std::nullopt;
  return coverage;
}

Result<void> remember_coverage(const fs::path& cache_dir, std::string_view artifact_sha256,
                               const elf::KernelCoverage& coverage) {
  if (!is_sha256(artifact_sha256)) {
    return Error::internal(
        fmt::format("`{}` is not a sha256 to record kernel coverage by", artifact_sha256));
  }
  const fs::path path = record_path(cache_dir, artifact_sha256);
  std::error_code error;
  fs::create_directories(path.parent_path(), error);
  if (error) {
    return Error::failed(fmt::format("cannot create {}", path.parent_path().string()))
        .because(error.message());
  }
  const nlohmann::json record = {
      {"format", kFormat},
      {"sass", texts(coverage.sass, coverage.sass_arch_specific, {})},
      {"ptx", texts(coverage.ptx, coverage.ptx_arch_specific, coverage.ptx_family_specific)},
      {"newest_ptx_isa", coverage.newest_ptx_isa}};
  // A cache: checked when read, so a crash that loses it costs a re-read only.
  return sys::write_file_atomic(path, record.dump() + "\n", sys::Durability::unsynced);
}

}  // namespace envkit::store
