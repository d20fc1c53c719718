#include "envkit/store/kernel_scan.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <set>

#include "envkit/core/text.hpp"
#include "envkit/sys/unique_fd.hpp"

namespace envkit::store {

namespace fs = std::filesystem;

namespace {

// The sections that say a file has kernels the CUDA runtime loads: nvcc's
// `.nv_fatbin` (the fatbinaries) and `.nvFatBinSegment` (the wrappers the
// runtime registers, also in files whose fatbinaries sit in other sections:
// cuFFT's .ldata). `__nv_relfatbin` alone (device code for nvlink) runs nothing.
constexpr std::array<std::string_view, 2> kFatbinSections = {".nv_fatbin", ".nvFatBinSegment"};
// Far above any real file's section names (torch's are under 1 KiB): a larger
// table is not a library's.
constexpr std::uint64_t kMaxSectionNames = 1 << 20;
constexpr std::uint64_t kMaxSections = 1 << 16;
constexpr std::uint64_t kMaxSectionHeader = 256;  // 64 bytes in every ELF64 file

// Exactly `size` bytes at `offset`, or nothing.
std::optional<std::string> read_at(int fd, std::uint64_t offset, std::uint64_t size) {
  std::string bytes(size, '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    const auto got =
        ::pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return std::nullopt;
    done += static_cast<std::size_t>(got);
  }
  return bytes;
}

// An unsigned integer of `size` bytes at `at`, in the file's byte order.
std::uint64_t field(std::string_view bytes, std::size_t at, std::size_t size, bool little) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < size; ++i) {
    const auto index = little ? at + size - 1 - i : at + i;
    value = (value << 8) | static_cast<unsigned char>(bytes[index]);
  }
  return value;
}

// The name at `offset` in a section name table.
std::string_view name_at(std::string_view names, std::uint64_t offset) {
  if (offset >= names.size()) return {};
  const auto rest = names.substr(static_cast<std::size_t>(offset));
  return rest.substr(0, rest.find('\0'));
}

bool is_shared_object_name(std::string_view name) {
  return name.ends_with(".so") || name.find(".so.") != std::string_view::npos;
}

bool contains(const std::vector<elf::Arch>& archs, elf::Arch arch) {
  return std::find(archs.begin(), archs.end(), arch) != archs.end();
}

// "sm_90a" -> 90, 'a'; nullopt for anything else.
std::optional<std::pair<elf::Arch, char>> parse_target(std::string_view name,
                                                       std::string_view prefix) {
  if (!name.starts_with(prefix)) return std::nullopt;
  name.remove_prefix(prefix.size());
  char suffix = 0;
  if (name.ends_with('a') || name.ends_with('f')) {
    suffix = name.back();
    name.remove_suffix(1);
  }
  elf::Arch arch = 0;
  const auto* end = name.data() + name.size();
  const auto [stop, error] = std::from_chars(name.data(), end, arch);
  if (name.empty() || error != std::errc() || stop != end || arch == 0) return std::nullopt;
  return std::pair{arch, suffix};
}

std::string gpu_text(elf::Arch gpu) {
  return fmt::format("compute capability {}", elf::capability_text(gpu));
}

}  // namespace

bool may_hold_kernels(const FileRecord& file) {
  if (file.type != archive::EntryType::file) return false;
  const auto name = std::string_view(file.path).substr(file.path.rfind('/') + 1);
  if (is_shared_object_name(name)) return true;
  return file.executable && file.path.starts_with("bin/");
}

bool has_fatbin_section(const fs::path& path) {
  const sys::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return false;
  const auto header = read_at(fd.get(), 0, 64);
  if (!header || !header->starts_with("\177ELF")) return false;
  const bool elf64 = (*header)[4] == 2;
  const bool little = (*header)[5] == 1;
  const auto get = [&](std::string_view bytes, std::size_t at, std::size_t size) {
    return field(bytes, at, size, little);
  };
  const std::size_t word = elf64 ? 8 : 4;
  const auto shoff = get(*header, elf64 ? 0x28 : 0x20, word);
  const auto entry_size = get(*header, elf64 ? 0x3a : 0x2e, 2);
  const auto count = get(*header, elf64 ? 0x3c : 0x30, 2);
  const auto names_index = get(*header, elf64 ? 0x3e : 0x32, 2);
  const std::size_t min_entry = elf64 ? 64 : 40;
  if (shoff == 0 || count == 0 || count > kMaxSections || entry_size < min_entry ||
      entry_size > kMaxSectionHeader || names_index >= count)
    return false;
  const auto sections = read_at(fd.get(), shoff, count * entry_size);
  if (!sections) return false;
  // sh_name at 0; sh_offset and sh_size after sh_type, sh_flags and sh_addr.
  const std::size_t offset_at = elf64 ? 0x18 : 0x10;
  const auto section = std::string_view(*sections).substr(names_index * entry_size, entry_size);
  const auto names_offset = get(section, offset_at, word);
  const auto names_size = get(section, offset_at + word, word);
  if (names_size == 0 || names_size > kMaxSectionNames) return false;
  const auto names = read_at(fd.get(), names_offset, names_size);
  if (!names) return false;
  for (std::uint64_t i = 0; i < count; ++i) {
    const auto name = name_at(*names, get(*sections, i * entry_size, 4));
    if (std::find(kFatbinSections.begin(), kFatbinSections.end(), name) != kFatbinSections.end())
      return true;
  }
  return false;
}

std::optional<KernelFile> scan_kernel_file(const fs::path& root, const FileRecord& file) {
  if (!may_hold_kernels(file)) return std::nullopt;
  const auto path = root / file.path;
  if (!has_fatbin_section(path)) return std::nullopt;
  auto fatbins = elf::read_fatbins(path);
  if (!fatbins)
    return KernelFile{.path = file.path, .coverage = {}, .error = fatbins.error().message()};
  if (fatbins->empty()) return std::nullopt;
  return KernelFile{.path = file.path, .coverage = elf::coverage_of(*fatbins), .error = {}};
}

PackageKernels package_kernels(std::vector<KernelFile> files) {
  PackageKernels kernels{.coverage = {}, .files = std::move(files)};
  std::sort(kernels.files.begin(), kernels.files.end(),
            [](const KernelFile& a, const KernelFile& b) { return a.path < b.path; });
  for (const auto& file : kernels.files)
    kernels.coverage.merge(file.coverage);
  return kernels;
}

PackageKernels scan_kernels(const fs::path& root, std::span<const FileRecord> files) {
  std::vector<KernelFile> found;
  for (const auto& file : files) {
    if (auto kernels = scan_kernel_file(root, file)) found.push_back(*std::move(kernels));
  }
  return package_kernels(std::move(found));
}

elf::KernelCoverage coverage_among(const PackageKernels& kernels,
                                   std::span<const FileRecord> paths) {
  std::set<std::string_view> wanted;
  for (const auto& file : paths)
    wanted.insert(file.path);
  elf::KernelCoverage coverage;
  for (const auto& file : kernels.files) {
    if (wanted.contains(file.path)) coverage.merge(file.coverage);
  }
  return coverage;
}

std::string driver_ptx_isa(const specs::Version& driver_cuda) {
  // NVIDIA's PTX ISA release history (docs.nvidia.com/cuda/parallel-thread-execution,
  // "Release Notes"), as NVIDIA's cuda-python encodes it (cuda/bindings/utils/_ptx_utils.py):
  // the first CUDA release of each PTX ISA. A driver JITs the PTX of its own CUDA and older.
  struct Release {
    unsigned major, minor;
    std::string_view isa;
  };
  static constexpr Release kReleases[] = {
      {9, 0, "6.0"},  {9, 1, "6.1"},  {9, 2, "6.2"},  {10, 0, "6.3"}, {10, 1, "6.4"},
      {10, 2, "6.5"}, {11, 0, "7.0"}, {11, 1, "7.1"}, {11, 2, "7.2"}, {11, 3, "7.3"},
      {11, 4, "7.4"}, {11, 5, "7.5"}, {11, 6, "7.6"}, {11, 7, "7.7"}, {11, 8, "7.8"},
      {12, 0, "8.0"}, {12, 1, "8.1"}, {12, 2, "8.2"}, {12, 3, "8.3"}, {12, 4, "8.4"},
      {12, 5, "8.5"}, {12, 7, "8.6"}, {12, 8, "8.7"}, {12, 9, "8.8"}, {13, 0, "9.0"},
      {13, 1, "9.1"}};
  const auto major = driver_cuda.major();
  const auto minor = driver_cuda.minor();
  const auto& newest = std::end(kReleases)[-1];
  if (major > newest.major || (major == newest.major && minor > newest.minor)) return {};
  std::string isa;
  for (const auto& release : kReleases) {
    if (release.major < major || (release.major == major && release.minor <= minor))
      isa = release.isa;
  }
  return isa;
}

std::string package_label(const PackageReceipt& receipt) {
  auto label = fmt::format("{} {}", receipt.name, receipt.version);
  if (!receipt.build.empty() && receipt.packaging != "venv" && receipt.packaging != "machine")
    label += fmt::format(" ({})", receipt.build);
  return label;
}

std::vector<KernelVerdict> judge_kernels(std::span<const PackageReceipt> packages,
                                         const KernelTargets& targets) {
  std::vector<KernelVerdict> verdicts;
  for (const auto& package : packages) {
    if (!package.kernels || package.kernels->coverage.empty()) continue;
    for (const auto gpu : targets.gpus) {
      const auto runs = elf::runs_on(package.kernels->coverage, gpu, targets.driver_ptx_isa);
      KernelVerdict verdict{
          .name = package.name, .package = package_label(package), .gpu = gpu, .runs = runs};
      // None of its files has a kernel for the GPU: each is named with what it holds.
      if (runs == elf::Runs::ptx_too_new || runs == elf::Runs::no_kernel) {
        for (const auto& file : package.kernels->files) {
          if (file.error.empty() && !file.coverage.empty()) verdict.lacking.push_back(file);
        }
      }
      verdicts.push_back(std::move(verdict));
    }
  }
  return verdicts;
}

std::vector<std::string> sass_targets(const elf::KernelCoverage& coverage) {
  std::vector<std::string> names;
  for (const auto arch : coverage.sass) {
    names.push_back(
        fmt::format("sm_{}{}", arch, contains(coverage.sass_arch_specific, arch) ? "a" : ""));
  }
  return names;
}

std::vector<std::string> ptx_targets(const elf::KernelCoverage& coverage) {
  std::vector<std::string> names;
  for (const auto arch : coverage.ptx) {
    const auto* suffix = contains(coverage.ptx_arch_specific, arch)     ? "a"
                         : contains(coverage.ptx_family_specific, arch) ? "f"
                                                                        : "";
    names.push_back(fmt::format("compute_{}{}", arch, suffix));
  }
  return names;
}

std::optional<elf::KernelCoverage> coverage_of_targets(std::span<const std::string> sass,
                                                       std::span<const std::string> ptx,
                                                       std::string ptx_isa) {
  elf::KernelCoverage coverage{.newest_ptx_isa = std::move(ptx_isa)};
  for (const auto& name : sass) {
    const auto target = parse_target(name, "sm_");
    if (!target || target->second == 'f') return std::nullopt;
    coverage.sass.push_back(target->first);
    if (target->second == 'a') coverage.sass_arch_specific.push_back(target->first);
  }
  for (const auto& name : ptx) {
    const auto target = parse_target(name, "compute_");
    if (!target) return std::nullopt;
    coverage.ptx.push_back(target->first);
    if (target->second == 'a') coverage.ptx_arch_specific.push_back(target->first);
    if (target->second == 'f') coverage.ptx_family_specific.push_back(target->first);
  }
  return coverage;
}

std::string describe(const elf::KernelCoverage& coverage) {
  std::vector<std::string> parts;
  if (!coverage.sass.empty()) parts.push_back(text::join(sass_targets(coverage), " "));
  if (coverage.ptx.empty()) {
    parts.emplace_back(coverage.sass.empty() ? "nothing" : "no PTX");
  } else {
    parts.push_back(fmt::format(
        "PTX {}{}", text::join(ptx_targets(coverage), " "),
        coverage.newest_ptx_isa.empty() ? "" : fmt::format(" (ISA {})", coverage.newest_ptx_isa)));
  }
  return text::join(parts, ", ");
}

std::string what_covers(elf::Arch gpu) {
  // SASS runs on its major's later minors; PTX on any later GPU.
  const auto major = gpu / 10;
  std::vector<std::string> sass;
  for (auto arch = major * 10; arch <= gpu; ++arch)
    sass.push_back(fmt::format("sm_{}", arch));
  const auto sass_text =
      sass.size() == 1
          ? sass.front()
          : fmt::format("{} or {}",
                        text::join(std::vector<std::string>(sass.begin(), sass.end() - 1), ", "),
                        sass.back());
  return fmt::format("SASS for {}, or PTX for compute_{} or older", sass_text, gpu);
}

std::string describe_gap(const KernelVerdict& verdict, std::string_view driver_ptx_isa) {
  std::vector<std::string> files;
  for (const auto& file : verdict.lacking)
    files.push_back(fmt::format("{} holds {}", file.path, describe(file.coverage)));
  if (verdict.runs == elf::Runs::ptx_too_new) {
    return fmt::format(
        "{} has no kernel the driver can run on a GPU of {}: {}; its PTX is newer than the "
        "driver JIT-compiles (PTX ISA {} or older)",
        verdict.package, gpu_text(verdict.gpu), text::join(files, "; "), driver_ptx_isa);
  }
  return fmt::format(
      "{} has no kernel for a GPU of {} (\"no kernel image is available for execution on the "
      "device\"): {}",
      verdict.package, gpu_text(verdict.gpu), text::join(files, "; "));
}

}  // namespace envkit::store
