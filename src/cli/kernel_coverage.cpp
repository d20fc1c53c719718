#include "kernel_coverage.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ranges>

#include "envkit/recipes/database.hpp"

namespace envkit::cli {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kMachineGpus = "this machine's GPUs";
constexpr std::string_view kLockGpus = "the GPUs envkit.lock states (`system.cuda-arch`)";

std::vector<elf::Arch> archs_of(const std::vector<specs::ComputeCapability>& capabilities) {
  std::vector<elf::Arch> archs;
  for (const auto& capability : capabilities)
    archs.push_back(elf::arch_of(capability.major, capability.minor));
  std::sort(archs.begin(), archs.end());
  archs.erase(std::unique(archs.begin(), archs.end()), archs.end());
  return archs;
}

std::vector<elf::Arch> machine_gpus(const gpu::HostFacts& host) {
  std::vector<specs::ComputeCapability> capabilities;
  for (const auto& gpu : host.gpus)
    capabilities.push_back(gpu.compute_capability);
  return archs_of(capabilities);
}

std::optional<recipes::Database> open_database(const Context& context) {
  auto database = recipes::Database::open(recipes::default_database_dir(context.options.recipes));
  if (!database) return std::nullopt;
  return *std::move(database);
}

// The newest CUDA the driver runs: libcuda's answer, else (a driver given by
// ENVKIT_OVERRIDE_DRIVER) the newest release in the recipe database whose
// minimum driver it meets.
std::optional<specs::Version> driver_cuda(const gpu::HostFacts& host,
                                          const recipes::Database* database) {
  if (host.driver_cuda) return host.driver_cuda;
  if (!host.driver || database == nullptr) return std::nullopt;
  auto cuda = database->facts("cuda");
  if (!cuda) return std::nullopt;
  const auto platform = specs::host_platform();
  for (const auto& version : std::ranges::reverse_view((*cuda)->versions)) {
    for (const auto& build : version.builds) {
      const auto minimum = build.min_driver.find(platform);
      if (minimum != build.min_driver.end() && minimum->second <= *host.driver)
        return version.version;
    }
  }
  return std::nullopt;
}

std::string ptx_isa_of(const gpu::HostFacts& host, const recipes::Database* database) {
  const auto cuda = driver_cuda(host, database);
  return cuda ? store::driver_ptx_isa(*cuda) : std::string();
}

std::optional<lock::Lockfile> project_lock(const Context& context) {
  const auto path = (context.options.directory / lock::kFileName).lexically_normal();
  std::error_code ignored;
  if (!fs::exists(path, ignored)) return std::nullopt;
  auto lockfile = lock::load(path);
  if (!lockfile) return std::nullopt;  // doctor's own lock reading reports it
  return *std::move(lockfile);
}

// The recipe database's architecture list of each build the lock holds for this platform.
std::map<std::string, std::vector<specs::ComputeCapability>> declared_archs(
    const recipes::Database& database, const lock::Lockfile& lockfile) {
  std::map<std::string, std::vector<specs::ComputeCapability>> declared;
  for (const auto& platform : lockfile.platforms) {
    if (platform.platform != specs::host_platform()) continue;
    for (const auto& package : platform.packages) {
      const auto* build = locked_build(database, package);
      if (build != nullptr && !build->cuda_arch.empty()) declared[package.name] = build->cuda_arch;
    }
  }
  return declared;
}

// The newest build the recipe database says has kernels for `gpu`: "torch 2.3.1 (cu121)".
std::optional<std::string> covering_build(const recipes::Database& database,
                                          const std::string& package, elf::Arch gpu) {
  auto recipe = database.facts(package);
  if (!recipe) return std::nullopt;
  const specs::ComputeCapability capability{gpu / 10, gpu % 10};
  const auto platform = specs::host_platform();
  for (const auto& version : std::ranges::reverse_view((*recipe)->versions)) {
    for (const auto& build : version.builds) {
      const bool here = build.platforms.empty() ||
                        std::find(build.platforms.begin(), build.platforms.end(), platform) !=
                            build.platforms.end();
      if (!here || (build.cuda_arch.empty() && build.cuda_ptx.empty()) ||
          !recipes::has_kernels_for(build, capability))
        continue;
      return fmt::format("{} {}{}", package, version.version.original(),
                         build.id.empty() ? "" : " (" + build.id + ")");
    }
  }
  return std::nullopt;
}

}  // namespace

store::KernelTargets install_kernel_targets(const Context& context, const gpu::HostFacts& host,
                                            const lock::Lockfile& lockfile) {
  auto gpus = machine_gpus(host);
  std::string source(kMachineGpus);
  if (gpus.empty() && lockfile.system.source == specs::FactSource::manifest) {
    gpus = archs_of(lockfile.system.cuda_arch);
    source = kLockGpus;
  }
  if (gpus.empty()) return {};
  const auto database = open_database(context);
  return {.gpus = std::move(gpus),
          .driver_ptx_isa = ptx_isa_of(host, database ? &*database : nullptr),
          .source = std::move(source)};
}

doctor::Findings kernel_findings(const Context& context, const gpu::HostFacts& host,
                                 const fs::path& prefix, store::PrefixState state) {
  for (auto& package : state.packages) {
    if (!package.kernels) package.kernels = store::scan_kernels(prefix, package.files);
  }
  const auto database = open_database(context);
  const auto* db = database ? &*database : nullptr;
  const auto lockfile = project_lock(context);
  doctor::KernelFacts facts{.targets = {.gpus = machine_gpus(host),
                                        .driver_ptx_isa = ptx_isa_of(host, db),
                                        .source = std::string(kMachineGpus)}};
  if (facts.targets.gpus.empty() && lockfile) {
    facts.targets.gpus = archs_of(lockfile->system.cuda_arch);
    facts.targets.source = kLockGpus;
    facts.from_lock = true;
    facts.lock_states_machines = lockfile->system.source == specs::FactSource::manifest;
  }
  if (db != nullptr) {
    facts.covering_build = [db](const std::string& package, elf::Arch gpu) {
      return covering_build(*db, package, gpu);
    };
    if (lockfile) facts.declared = declared_archs(*db, *lockfile);
  }
  return doctor::check_kernel_coverage(state, facts);
}

const recipes::Build* locked_build(const recipes::Database& database,
                                   const lock::LockedPackage& package) {
  auto recipe = database.facts(package.name);
  if (!recipe) return nullptr;
  const auto* version = (*recipe)->find(package.version);
  if (version == nullptr) return nullptr;
  const auto found =
      std::find_if(version->builds.begin(), version->builds.end(),
                   [&](const recipes::Build& build) { return build.id == package.build; });
  return found == version->builds.end() ? nullptr : &*found;
}

}  // namespace envkit::cli
