#include "envkit/gpu/host_probe.hpp"

#include <fmt/format.h>

#include "envkit/core/text.hpp"
#include "envkit/sys/fs.hpp"

namespace envkit::gpu {

namespace fs = std::filesystem;

namespace {

using Kind = Provenance::Kind;

constexpr std::string_view kNvidiaSmi = "nvidia-smi";
// nvidia-smi answers in well under a second; a wedged driver can make it hang.
constexpr std::chrono::seconds kNvidiaSmiTimeout{5};

// Which facts are settled; the rest are left to later sources.
struct Settled {
  bool driver = false;
  bool driver_cuda = false;
  bool gpus = false;
};

Result<Settled> apply_overrides(const ProbeSources& sources, HostFacts& facts) {
  Settled settled;
  if (auto text = sources.variable(env::kOverrideDriver)) {
    auto driver = parse_driver_override(*text);
    if (!driver) return std::move(driver).error();
    facts.driver = std::move(driver).value();
    facts.driver_source = {Kind::override_variable, std::string(env::kOverrideDriver.name)};
    settled.driver = true;
    // The machine's libcuda speaks for the machine's driver, not for the one assumed.
    facts.driver_cuda_source = facts.driver_source;
    settled.driver_cuda = true;
    // A machine without a driver shows no GPU, unless the arch override says otherwise.
    if (!facts.driver) {
      facts.gpus_source = facts.driver_source;
      settled.gpus = true;
    }
  }
  if (auto text = sources.variable(env::kOverrideCudaArch)) {
    auto capabilities = parse_cuda_arch_override(*text);
    if (!capabilities) return std::move(capabilities).error();
    facts.gpus.clear();
    for (const auto& capability : *capabilities)
      facts.gpus.push_back({std::nullopt, capability});
    facts.gpus_source = {Kind::override_variable, std::string(env::kOverrideCudaArch.name)};
    settled.gpus = true;
  }
  return settled;
}

// The driver version from one of the kernel module's files, /sys or /proc.
bool read_driver_file(const ProbeSources& sources, const fs::path& path,
                      Result<specs::Version> (*parse)(std::string_view), Kind kind,
                      HostFacts& facts) {
  const auto content = sources.read_file(path);
  if (!content) return false;  // no kernel module loaded: the usual GPU-less machine
  auto driver = parse(*content);
  if (!driver) {
    facts.notes.push_back(fmt::format("{}: {}", path.string(), driver.error().message()));
    return false;
  }
  facts.driver = std::move(driver).value();
  facts.driver_source = {kind, path.string()};
  return true;
}

// libcuda's answers for the facts not yet settled; its problems become notes.
void apply_libcuda(const ProbeSources& sources, Settled& settled, HostFacts& facts) {
  if (!sources.query_libcuda) return;
  auto report = sources.query_libcuda();
  if (!report) return;  // not installed: not an error
  // The library that answered: libcuda.so.1, or the path it was found at (WSL's).
  const auto library = report->library.empty() ? std::string(kLibcuda) : report->library;
  for (const auto& problem : report->problems)
    facts.notes.push_back(fmt::format("{}: {}", library, problem));
  const Provenance source{Kind::libcuda, library};
  if (!settled.driver_cuda && report->driver_cuda) {
    facts.driver_cuda = std::move(report->driver_cuda);
    facts.driver_cuda_source = source;
    settled.driver_cuda = true;
  }
  if (!settled.gpus && report->gpus) {
    facts.gpus = std::move(*report->gpus);
    facts.gpus_source = source;
    settled.gpus = true;
  }
}

std::string first_line(std::string_view text) {
  return std::string(text::trim(text::split(text::trim(text), '\n').front()));
}

// nvidia-smi's GPUs, or nullopt (with a note saying why) when it gave none.
std::optional<std::vector<SmiGpu>> ask_nvidia_smi(const ProbeSources& sources, HostFacts& facts) {
  const auto run = sources.query_nvidia_smi();
  if (!run) return std::nullopt;  // not installed: not an error
  if (run->timed_out) {
    facts.notes.push_back(
        fmt::format("{} did not answer within {} s", kNvidiaSmi, kNvidiaSmiTimeout.count()));
    return std::nullopt;
  }
  if (run->exit_code != 0) {
    // e.g. 9: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"
    facts.notes.push_back(fmt::format("{} exited with {}: {}", kNvidiaSmi, run->exit_code,
                                      first_line(run->out + run->err)));
    return std::nullopt;
  }
  auto gpus = parse_nvidia_smi_query(run->out);
  if (!gpus) {
    facts.notes.push_back(gpus.error().message() + ": " + text::join(gpus.error().causes(), "; "));
    return std::nullopt;
  }
  return std::move(gpus).value();
}

void apply_nvidia_smi(const std::vector<SmiGpu>& reported, Settled& settled, HostFacts& facts) {
  const Provenance source{Kind::nvidia_smi, std::string(kNvidiaSmi)};
  if (!settled.driver && !reported.empty()) {
    facts.driver = reported.front().driver;
    facts.driver_source = source;
    settled.driver = true;
  }
  if (!settled.gpus) {
    for (const auto& gpu : reported)
      facts.gpus.push_back({gpu.name, gpu.compute_capability});
    facts.gpus_source = source;
    settled.gpus = true;
  }
}

// What ENVKIT_LIBCUDA or ENVKIT_NVIDIA_SMI names instead of the machine's own: tests
// (and containers) point the probe away from the real driver. Empty is unset.
std::optional<std::string> replacement(const env::Variable& variable) {
  auto value = env::get(variable);
  if (!value || value->empty()) return std::nullopt;
  return value;
}

// `path` (absolute, as the probe names it) in the tree at `root`.
fs::path under(const fs::path& root, const fs::path& path) {
  return root == "/" ? path : root / path.relative_path();
}

// The nvidia-smi to run: ENVKIT_NVIDIA_SMI's, else PATH's, else WSL's (which
// WSL puts on PATH only in some shells); nullopt when there is none.
std::optional<fs::path> nvidia_smi_program(const fs::path& root) {
  if (const auto program = replacement(env::kNvidiaSmi)) {
    if (!fs::exists(*program)) return std::nullopt;
    return fs::path(*program);
  }
  if (root == "/") {
    if (auto found = sys::find_on_path(kNvidiaSmi)) return *found;
  }
  const auto wsl = under(root, fs::path(kWslLibDir) / kNvidiaSmi);
  std::error_code ec;
  if (fs::is_regular_file(wsl, ec)) return wsl;
  return std::nullopt;
}

// ENVKIT_LIBCUDA's library, else libcuda.so.1 as the loader finds it, else WSL's
// copy (when /usr/lib/wsl/lib is not in the loader's cache).
std::optional<LibcudaReport> ask_libcuda(const fs::path& root) {
  if (const auto library = replacement(env::kLibcuda)) return query_libcuda(*library);
  if (root == "/") {
    if (auto report = query_libcuda(std::string(kLibcuda))) return report;
  }
  const auto wsl = under(root, fs::path(kWslLibDir) / kLibcuda);
  std::error_code ec;
  if (!fs::exists(wsl, ec)) return std::nullopt;
  return query_libcuda(wsl.string());
}

bool names_wsl(std::string_view text) {
  const auto lower = text::to_lower(text);
  return lower.find("microsoft") != std::string::npos || lower.find("wsl") != std::string::npos;
}

}  // namespace

ProbeSources host_sources(const fs::path& root) {
  return {
      .variable = [](const env::Variable& variable) { return env::get(variable); },
      .read_file = [root](const fs::path& path) -> std::optional<std::string> {
        auto content = sys::read_file(under(root, path));
        if (!content) return std::nullopt;
        return std::move(content).value();
      },
      .query_nvidia_smi = [root]() -> std::optional<sys::ProcessOutput> {
        const auto program = nvidia_smi_program(root);
        if (!program) return std::nullopt;
        std::vector<std::string> argv(std::begin(kNvidiaSmiQuery), std::end(kNvidiaSmiQuery));
        argv.front() = program->string();
        sys::ProcessOptions options;
        options.timeout = kNvidiaSmiTimeout;
        auto run = sys::run_process(argv, options);
        if (!run) return std::nullopt;
        return std::move(run).value();
      },
      .query_libcuda = [root] { return ask_libcuda(root); },
      .exists =
          [root](const fs::path& path) {
            std::error_code ec;
            return fs::exists(under(root, path), ec);
          },
  };
}

std::optional<Wsl> detect_wsl(const std::optional<std::string>& proc_version, bool dxg_exists) {
  const bool kernel_says = proc_version && names_wsl(*proc_version);
  if (!kernel_says && !dxg_exists) return std::nullopt;
  return Wsl{.evidence = kernel_says
                             ? fmt::format("{} names Microsoft's WSL kernel", kProcVersionPath)
                             : fmt::format("{} exists", kWslGpuDevice),
             .gpu_device = dxg_exists};
}

Result<HostFacts> probe_host(const ProbeSources& sources) {
  HostFacts facts;
  auto settled = apply_overrides(sources, facts);
  if (!settled) return std::move(settled).error();
  const fs::path proc_file =
      sources.variable(env::kProcDriverVersion).value_or(std::string(kProcDriverVersionPath));
  const fs::path sys_file =
      sources.variable(env::kSysDriverVersion).value_or(std::string(kSysDriverVersionPath));
  if (!settled->driver) {
    settled->driver =
        read_driver_file(sources, sys_file, parse_sys_driver_version, Kind::sys_file, facts) ||
        read_driver_file(sources, proc_file, parse_proc_driver_version, Kind::proc_file, facts);
    // No nvidia kernel module: WSL 2 has none (its driver is Windows'). An assumed
    // driver is an assumed machine, so an override leaves WSL unasked.
    if (!settled->driver) {
      facts.wsl = detect_wsl(sources.read_file(kProcVersionPath),
                             sources.exists && sources.exists(kWslGpuDevice));
    }
  }
  if (!settled->driver_cuda || !settled->gpus) apply_libcuda(sources, *settled, facts);
  if (!settled->driver || !settled->gpus) {
    if (auto reported = ask_nvidia_smi(sources, facts)) {
      apply_nvidia_smi(*reported, *settled, facts);
    }
  }
  if (!settled->driver) {
    facts.driver_source = {Kind::nothing_found, fmt::format("{}, {}, {}", sys_file.string(),
                                                            proc_file.string(), kNvidiaSmi)};
  }
  if (!settled->driver_cuda)
    facts.driver_cuda_source = {Kind::nothing_found, std::string(kLibcuda)};
  if (!settled->gpus) {
    facts.gpus_source = {Kind::nothing_found, fmt::format("{}, {}", kLibcuda, kNvidiaSmi)};
  }
  return facts;
}

}  // namespace envkit::gpu
