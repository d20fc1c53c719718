// `envkit doctor`: checks the host and the installed prefix and prints each
// finding with a fix (docs/doctor.md). The checks are the doctor module's;
// this file gathers what they look at.
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "envkit/activation/activation.hpp"
#include "envkit/doctor/framework_checks.hpp"
#include "envkit/doctor/host_checks.hpp"
#include "envkit/doctor/prefix_checks.hpp"
#include "envkit/elf/dependency_check.hpp"
#include "envkit/elf/loader.hpp"
#include "envkit/gpu/host_probe.hpp"
#include "envkit/recipes/database.hpp"
#include "envkit/smoke/verified.hpp"
#include "envkit/store/prefix.hpp"
#include "envkit/sys/process.hpp"
#include "kernel_coverage.hpp"
#include "prefix_option.hpp"
#include "settings.hpp"

namespace envkit::cli {

namespace {

namespace fs = std::filesystem;
using doctor::Findings;

struct DoctorFlags {
  std::optional<fs::path> prefix;
};

// The frameworks whose builds name the GPUs they have kernels for.
constexpr std::string_view kFrameworks[] = {"torch", "tensorflow", "tensorflow-gpu", "jax"};

// nullopt when the project has no lock; an unreadable lock is an error.
Result<std::optional<lock::PlatformLock>> platform_lock(const Context& context) {
  const auto path = (context.options.directory / lock::kFileName).lexically_normal();
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::optional<lock::PlatformLock>();
  auto lockfile = lock::load(path);
  if (!lockfile) return std::move(lockfile).error();
  for (auto& platform : lockfile->platforms) {
    if (platform.platform == specs::host_platform()) {
      return std::optional<lock::PlatformLock>(std::move(platform));
    }
  }
  return std::optional<lock::PlatformLock>();
}

// What the locked CUDA and frameworks need of the machine, from the recipes.
doctor::StackNeeds stack_needs(const Context& context, const lock::PlatformLock& locked) {
  doctor::StackNeeds needs;
  auto database = recipes::Database::open(recipes::default_database_dir(context.options.recipes));
  const auto platform = specs::host_platform();
  for (const auto& package : locked.packages) {
    const recipes::Build* build = database ? locked_build(*database, package) : nullptr;
    if (package.name == "cuda") {
      needs.cuda = package.version;
      if (build == nullptr) continue;
      if (auto it = build->min_driver.find(platform); it != build->min_driver.end())
        needs.min_driver = it->second;
      if (auto it = build->min_driver_compat.find(platform); it != build->min_driver_compat.end())
        needs.min_driver_compat = it->second;
      needs.cuda_arch = build->cuda_arch;
    } else if (build != nullptr && std::find(std::begin(kFrameworks), std::end(kFrameworks),
                                             package.name) != std::end(kFrameworks)) {
      needs.frameworks.push_back(
          {fmt::format("{} {}{}", package.name, package.version.original(),
                       package.build.empty() ? "" : " (" + package.build + ")"),
           build->cuda_arch});
    }
  }
  return needs;
}

// The libraries the lock promises in lib/ (the stems of their file names).
std::vector<std::string> expected_libraries(const lock::PlatformLock& locked) {
  std::vector<std::string> expected;
  const auto has_component = [](const lock::LockedPackage& package, std::string_view component) {
    return std::any_of(
        package.artifacts.begin(), package.artifacts.end(),
        [&](const recipes::Artifact& a) { return specs::holds_component(a, component); });
  };
  for (const auto& package : locked.packages) {
    if (package.name == "cuda") {
      if (has_component(package, "cuda_cudart")) expected.emplace_back("libcudart.so");
      if (has_component(package, "libcublas")) expected.emplace_back("libcublas.so");
    } else if (package.name == "cudnn") {
      expected.emplace_back("libcudnn.so");
    }
  }
  return expected;
}

// The lock's external CUDA and cuDNN, each with what this machine's tree holds (looked
// for as lock and install do, never in the prefix itself).
std::vector<doctor::ExternalStack> external_stacks(const Context& context,
                                                   const lock::PlatformLock& locked,
                                                   const fs::path& prefix) {
  std::vector<doctor::ExternalStack> out;
  std::optional<fs::path> cuda_named;
  for (const std::string_view package : {"cuda", "cudnn"}) {
    const auto found = std::find_if(locked.packages.begin(), locked.packages.end(),
                                    [&](const auto& p) { return p.name == package; });
    if (found == locked.packages.end() || !found->external) continue;
    auto search = project::TreeSearch::from_host();
    search.named = project::named_tree(package, *found->external, context.options.directory);
    if (package == "cuda") cuda_named = search.named;
    if (package == "cudnn") search.beside = cuda_named;
    search.exclude.push_back(prefix);
    out.push_back({std::string(package), found->version, project::find_stack(package, search)});
  }
  return out;
}

std::optional<std::string> nvcc_version(const fs::path& nvcc) {
  sys::ProcessOptions options;
  options.timeout = std::chrono::seconds(30);
  auto run = sys::run_process({nvcc.string(), "--version"}, options);
  if (!run || run->exit_code != 0) return std::nullopt;
  return run->out;
}

void append(Findings& to, Findings from) {
  for (auto& finding : from)
    to.push_back(std::move(finding));
}

// The record of the last passing GPU smoke test (smoke/verified.hpp), against today's lock.
Findings verified_findings(const Context& context, const fs::path& prefix) {
  auto verified = smoke::read_verified(prefix);
  if (!verified) {
    return {doctor::warn("smoke", verified.error().headline(),
                         "delete it; `envkit smoke` on a GPU writes it again")};
  }
  if (!*verified) {
    return {doctor::ok("smoke",
                       "no GPU smoke test has passed with this prefix yet (`envkit smoke` "
                       "on a GPU machine records one)")};
  }
  const auto lock = smoke::lock_sha256(context.options.directory / lock::kFileName);
  if ((*verified)->lock_sha256 != lock) {
    return {doctor::warn("smoke",
                         "the last passing GPU smoke test was for another envkit.lock: " +
                             smoke::describe(**verified),
                         "run `envkit smoke` on a GPU machine to verify this lock")};
  }
  return {doctor::ok("smoke", "GPU smoke test " + smoke::describe(**verified))};
}

Result<Findings> prefix_findings(const Context& context, const DoctorFlags& flags,
                                 const std::optional<lock::PlatformLock>& locked,
                                 const gpu::HostFacts& host) {
  auto prefix = store::Prefix::open(prefix_path(context, flags.prefix));
  if (!prefix) return std::move(prefix).error();
  const auto& path = prefix->path();
  auto state = prefix->state();
  if (!state) return std::move(state).error();
  Findings findings = doctor::check_prefix(path, *state, locked);
  if (!*state) return findings;  // nothing installed: nothing more to look at
  auto settings = load_settings(context);
  if (!settings) return std::move(settings).error();
  append(findings, doctor::check_cache_entries(**state, store::Cache(cache_dir_of(*settings))));
  const auto inherited = activation::current_environment();
  const auto ld_library_path =
      inherited.contains("LD_LIBRARY_PATH") ? inherited.at("LD_LIBRARY_PATH") : std::string();
  auto report = elf::check_dependencies({.root = path, .library_dirs = {path / "lib"}},
                                        elf::system_search_context(ld_library_path));
  if (!report) return std::move(report).error();
  const auto expected = locked ? expected_libraries(*locked) : std::vector<std::string>();
  const auto externals =
      locked ? external_stacks(context, *locked, path) : std::vector<doctor::ExternalStack>();
  append(findings, doctor::check_libraries(path, *report, expected, externals));
  append(findings, doctor::check_shadowing(path, inherited));
  append(findings, doctor::check_toolkit(path, inherited, nvcc_version));
  append(findings, doctor::check_duplicate_libraries(path));
  append(findings, kernel_findings(context, host, path, **state));
  append(findings, doctor::check_framework(path, smoke::locked_stack(*state, locked), inherited));
  append(findings, verified_findings(context, path));
  return findings;
}

void print(const Context& context, const Findings& findings) {
  if (context.options.json) {
    auto list = nlohmann::json::array();
    for (const auto& finding : findings) {
      list.push_back({{"id", finding.id},
                      {"severity", doctor::to_string(finding.severity)},
                      {"message", finding.message},
                      {"fix", finding.fix}});
    }
    std::cout << nlohmann::json{{"findings", list}}.dump() << '\n';
    return;
  }
  // The report itself goes to stdout (`envkit doctor > report.txt`); the
  // summary and errors to stderr, as elsewhere.
  for (const auto& finding : findings) {
    std::cout << fmt::format("{:<5} {:<9} {}\n", doctor::to_string(finding.severity), finding.id,
                             finding.message);
    if (!finding.fix.empty()) std::cout << fmt::format("{:16}fix: {}\n", "", finding.fix);
  }
  std::cout.flush();
}

int run_doctor(Context& context, const DoctorFlags& flags) {
  auto locked = platform_lock(context);
  if (!locked) return report(context, locked.error());
  auto host = gpu::probe_host();
  if (!host) return report(context, host.error());
  const auto needs = *locked ? stack_needs(context, **locked) : doctor::StackNeeds{};
  Findings findings = doctor::check_driver(*host, needs);
  append(findings, doctor::check_gpu_arch(*host, needs));
  auto from_prefix = prefix_findings(context, flags, *locked, *host);
  if (!from_prefix) return report(context, from_prefix.error());
  append(findings, *std::move(from_prefix));
  print(context, findings);
  const auto errors = std::count_if(findings.begin(), findings.end(), [](const auto& finding) {
    return finding.severity == doctor::Severity::error;
  });
  if (!context.options.json) {
    context.console.info(errors == 0 ? "no problems found"
                                     : fmt::format("{} problem(s) found", errors));
  }
  return errors == 0 ? 0 : 1;
}

}  // namespace

void register_doctor(CLI::App& root, Commands& out) {
  auto flags = std::make_shared<DoctorFlags>();
  auto* doctor = root.add_subcommand(
      "doctor", "Check the host and the environment; print each finding with a fix");
  add_prefix_option(*doctor, flags->prefix);
  out.push_back({doctor, [flags](Context& context) { return run_doctor(context, *flags); }});
}

}  // namespace envkit::cli
