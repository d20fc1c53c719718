#include "envkit/store/kernel_scan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>

#include "envkit/core/text.hpp"

namespace envkit::store {

namespace fs = std::filesystem;

namespace {

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

// Which sections say so, and why those, is elf::has_fatbin_sections's to know.
bool has_fatbin_section(const fs::path& path) {
  return elf::has_fatbin_sections(path);
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
