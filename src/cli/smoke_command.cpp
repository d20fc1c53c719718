// `envkit smoke`: builds the GPU smoke-training program with the prefix's own
// nvcc, cuDNN and cuBLAS, runs it in the prefix's environment and reports
// (docs/smoke.md).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "envkit/activation/activation.hpp"
#include "envkit/core/text.hpp"
#include "envkit/gpu/host_probe.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/manifest/manifest.hpp"
#include "envkit/smoke/build.hpp"
#include "envkit/smoke/framework.hpp"
#include "envkit/smoke/host_gpus.hpp"
#include "envkit/smoke/program.hpp"
#include "envkit/smoke/runtime_stack.hpp"
#include "envkit/smoke/verified.hpp"
#include "envkit/store/records.hpp"
#include "prefix_option.hpp"
#include "settings.hpp"

namespace envkit::cli {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// The program's own bounds on --steps (smoke.cu).
constexpr long kMaxSteps = 1000000;

// The program's fields (share/envkit/smoke/README.md), in its order; all null
// where envkit stopped before the program ran.
constexpr std::string_view kProgramFields[] = {
    "status",      "reason",       "gpu",      "compute_capability",
    "driver",      "cuda_runtime", "cudnn",    "steps",
    "loss_first",  "loss_last",    "accuracy", "max_reference_error",
    "gpu_seconds", "cpu_seconds"};

struct SmokeFlags {
  std::optional<fs::path> prefix;
  std::optional<long> steps;
  std::optional<unsigned long long> seed;
  bool cpu_only = false;
  bool framework = false;
};

// `--json` output when the program did not run: its fields, null, with a status.
Json empty_report(std::string_view status, std::string_view reason) {
  Json out = Json::object();
  for (auto field : kProgramFields)
    out[std::string(field)] = nullptr;
  out["status"] = status;
  out["reason"] = reason;
  out["binary_reused"] = nullptr;
  out["speedup"] = nullptr;
  return out;
}

// The GPU test cannot run here: exit 77, nothing built.
int skipped(const Context& context, const std::string& why) {
  context.console.info("skipped: " + why);
  if (context.options.json) std::cout << empty_report("skip", why).dump() << '\n';
  return smoke::kExitSkip;
}

// An error before or around the program. With --json an actionable failure
// keeps the smoke shape (status fail), with the error's parts beside it.
int failed(const Context& context, const Error& error) {
  if (error.code() != ErrorCode::failed || !context.options.json) return report(context, error);
  context.console.error(error);
  auto out = empty_report("fail", error.headline());
  out["error"] = error.headline();
  if (!error.causes().empty()) out["causes"] = error.causes();
  if (!error.hints().empty()) out["hints"] = error.hints();
  std::cout << out.dump() << '\n';
  return error.exit_code();
}

// The prefix's environment (what `envkit run` sets) as changes to ours, for
// the processes envkit starts.
std::map<std::string, std::optional<std::string>> as_process_env(
    const std::vector<activation::Assignment>& changes) {
  std::map<std::string, std::optional<std::string>> environment;
  for (const auto& change : changes)
    environment[change.name] = change.value;
  return environment;
}

// Each artifact installed in the prefix by its sha256 (from the receipts), one
// line each: the part of the smoke binary's cache key that the prefix decides.
Result<std::string> installed_packages(const fs::path& prefix) {
  auto state = store::read_state(prefix);
  if (!state) return std::move(state).error();
  std::string out;
  if (!*state) return out;
  for (const auto& package : (*state)->packages) {
    for (const auto& artifact : package.artifacts) {
      out += fmt::format("{} {} {} {} {}\n", package.name, package.version, package.build,
                         artifact.component, artifact.sha256);
    }
  }
  return out;
}

// --steps, else the manifest's `smoke: {steps: N}`, else the program's default.
Result<std::optional<long>> steps_to_run(const Context& context, const SmokeFlags& flags) {
  if (flags.steps) return flags.steps;
  const auto path = context.options.directory / manifest::kFileName;
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::optional<long>{};
  auto manifest = manifest::load(path);
  if (!manifest) return std::move(manifest).error();
  if (manifest->smoke.steps > kMaxSteps) {
    return Error::input(fmt::format("{}: `smoke.steps` is {}; the smoke program runs at most {}",
                                    path.string(), manifest->smoke.steps, kMaxSteps));
  }
  return std::optional<long>{manifest->smoke.steps};
}

// The framework half (--framework), folded into the result. Where the CUDA
// smoke test skipped (no GPU), the framework is imported and its libraries
// checked, without training.
void add_framework(const Context& context, const fs::path& prefix, const SmokeFlags& flags,
                   const std::map<std::string, std::optional<std::string>>& environment, Json& out,
                   int& exit_code) {
  const bool libraries_only = exit_code == smoke::kExitSkip;
  auto locked = smoke::locked_stack_of(prefix, context.options.directory / lock::kFileName);
  if (!locked) context.console.warn(locked.error().headline() + "; the versions go unchecked");
  context.console.info(
      libraries_only ? "framework: importing it with the prefix's Python (no GPU: no training)"
                     : "framework: training with the prefix's Python");
  const auto result =
      smoke::run_framework_smoke({.prefix = prefix,
                                  .script = smoke::sources_dir() / "framework_smoke.py",
                                  .cpu_only = flags.cpu_only,
                                  .libraries_only = libraries_only,
                                  .skip_reason = libraries_only ? out.value("reason", "") : "",
                                  .locked = locked ? *locked : smoke::LockedStack{},
                                  .environment = environment});
  out["framework"] = Json::parse(result.json);
  for (const auto& library : result.libraries.libraries) {
    context.console.detail(fmt::format("framework:     loaded {} {} ({})", library.name,
                                       library.path.string(),
                                       library.in_prefix ? "the prefix's" : "outside the prefix"));
  }
  if (result.status == "pass") {
    const auto& f = out["framework"];
    context.console.info(fmt::format("framework:     {} {} on {}: loss {:.4g} -> {:.4g}, PASS",
                                     f.value("framework", "?"), f.value("version", "?"),
                                     f.value("device", "?"), f.value("loss_first", 0.0),
                                     f.value("loss_last", 0.0)));
  } else if (result.status == "skip") {
    if (!result.framework.empty()) {
      context.console.info(
          fmt::format("framework:     {} loaded {} CUDA libraries, all the "
                      "prefix's (or the driver's)",
                      result.framework, result.libraries.libraries.size()));
    }
    context.console.info("framework:     skipped: " + result.reason);
  } else {
    context.console.info("framework:     FAIL: " + result.reason);
    exit_code = smoke::kExitFail;
    out["status"] = "fail";
    const std::string reason = out["reason"].get<std::string>();
    out["reason"] = (reason.empty() ? "" : reason + "; ") + "framework: " + result.reason;
  }
}

// No GPU on the nvcc path: with --framework the framework is still imported
// and its libraries checked (a problem fails); otherwise a plain skip.
int skipped_without_gpu(Context& context, const SmokeFlags& flags, const fs::path& prefix,
                        const std::map<std::string, std::optional<std::string>>& environment,
                        const std::string& why) {
  if (!flags.framework) return skipped(context, why);
  context.console.info("skipped: " + why);
  Json out = empty_report("skip", why);
  int exit_code = smoke::kExitSkip;
  add_framework(context, prefix, flags, environment, out, exit_code);
  if (context.options.json) std::cout << out.dump() << '\n';
  return exit_code;
}

// The installed version of package `name` from the prefix's receipts ("" when none is).
std::string installed_version(const fs::path& prefix, std::string_view name) {
  auto state = store::read_state(prefix);
  if (!state || !*state) return "";
  for (const auto& package : (*state)->packages)
    if (package.name == name) return package.version;
  return "";
}

// The GPUs the lock was solved for (envkit.lock's `system: cuda_arch`), none without a lock.
std::vector<specs::ComputeCapability> locked_capabilities(const Context& context) {
  const auto path = context.options.directory / lock::kFileName;
  std::error_code ec;
  if (!fs::exists(path, ec)) return {};
  auto lockfile = lock::load(path);
  if (!lockfile) return {};
  return lockfile->system.cuda_arch;
}

// What the probe found: the GPUs' capabilities, or why there is no GPU test here.
struct HostGpus {
  std::vector<specs::ComputeCapability> capabilities;
  std::optional<std::string> none;
};

// A passing run on a GPU: .envkit/verified.json beside the prefix (docs/smoke.md).
void record_verified(const Context& context, const fs::path& prefix,
                     const smoke::ProgramReport& report) {
  const auto lock = smoke::lock_sha256(context.options.directory / lock::kFileName);
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc);
  const auto written = smoke::write_verified(prefix, smoke::verified_from(report, lock, when));
  if (!written) {
    context.console.warn("could not record the passing run: " + written.error().headline());
    return;
  }
  context.console.info("recorded:      " + smoke::verified_path(prefix).string());
}

// Prints the program's summary and the result; the framework half where asked.
int finish(Context& context, const SmokeFlags& flags, const fs::path& prefix,
           const std::map<std::string, std::optional<std::string>>& environment,
           const smoke::ProgramRun& ran, Json out) {
  context.console.detail(text::trim(ran.progress));
  for (const auto& line : smoke::summary_lines(ran.report))
    context.console.info(line);
  int exit_code = ran.exit_code;
  if (const auto speedup = smoke::speedup(ran.report)) {
    out["speedup"] = *speedup;
  } else {
    out["speedup"] = nullptr;
  }
  if (flags.framework) add_framework(context, prefix, flags, environment, out, exit_code);
  if (exit_code == smoke::kExitPass && ran.report.gpu && !flags.cpu_only)
    record_verified(context, prefix, ran.report);
  if (context.options.json) std::cout << out.dump() << '\n';
  return exit_code;
}

// The NVRTC path (runtime_stack.hpp): nothing to build; GPU-less machines check up to the launch.
int run_runtime_smoke(Context& context, const SmokeFlags& flags, const HostGpus& host,
                      const fs::path& prefix, const smoke::RuntimeStack& stack,
                      std::optional<long> steps,
                      const std::map<std::string, std::optional<std::string>>& environment) {
  auto runner = smoke::runner_path();
  if (!runner) return failed(context, runner.error());
  auto capabilities = host.capabilities;
  for (const auto& capability : locked_capabilities(context))
    capabilities.push_back(capability);
  std::sort(capabilities.begin(), capabilities.end());
  capabilities.erase(std::unique(capabilities.begin(), capabilities.end()), capabilities.end());
  const smoke::RunnerRequest request{.prefix = prefix,
                                     .kernels = smoke::sources_dir() / "kernels.cuh",
                                     .stack = stack,
                                     .capabilities = capabilities,
                                     .expect_cuda = installed_version(prefix, "cuda"),
                                     .expect_cudnn = installed_version(prefix, "cudnn"),
                                     .no_gpu = host.none};
  context.console.info(fmt::format("running {} with the prefix's NVRTC, cuDNN and cuBLAS",
                                   runner->filename().string()));
  auto ran = smoke::run_program(*runner, {.arguments = smoke::runner_arguments(request),
                                          .steps = steps,
                                          .seed = flags.seed,
                                          .cpu_only = flags.cpu_only,
                                          .environment = environment});
  if (!ran) return failed(context, ran.error());
  Json out = Json::parse(ran->json);
  out["binary_reused"] = nullptr;
  out["binary"] = runner->string();
  out["host_compiler"] = nullptr;
  return finish(context, flags, prefix, environment, *ran, std::move(out));
}

// The nvcc path: stacks whose NVRTC is older than 11.2 (build.hpp).
int run_compiled_smoke(Context& context, const SmokeFlags& flags, const HostGpus& host,
                       const fs::path& prefix, std::optional<long> steps,
                       const std::map<std::string, std::optional<std::string>>& environment) {
  if (host.none) return skipped_without_gpu(context, flags, prefix, environment, *host.none);
  auto toolchain = smoke::check_prefix(prefix);
  if (!toolchain) return failed(context, toolchain.error());
  auto settings = load_settings(context);
  if (!settings) return report(context, settings.error());
  auto packages = installed_packages(prefix);
  if (!packages) return failed(context, packages.error());
  auto built = smoke::build({.toolchain = *toolchain,
                             .sources = smoke::sources_dir(),
                             .gencode = smoke::gencode_flags(host.capabilities),
                             .prefix_packages = *packages,
                             .cache_dir = fs::absolute(cache_dir_of(*settings)),
                             .environment = environment,
                             .say = [&](std::string_view text) { context.console.info(text); }});
  if (!built) return failed(context, built.error());
  context.console.info(
      fmt::format("{} {}", built->reused ? "reusing" : "built", built->binary.string()));
  auto ran = smoke::run_program(
      built->binary,
      {.steps = steps, .seed = flags.seed, .cpu_only = flags.cpu_only, .environment = environment});
  if (!ran) return failed(context, ran.error());
  Json out = Json::parse(ran->json);
  out["binary_reused"] = built->reused;
  out["binary"] = built->binary.string();
  out["host_compiler"] = built->host_compiler;
  return finish(context, flags, prefix, environment, *ran, std::move(out));
}

int run_smoke(Context& context, const SmokeFlags& flags) {
  // First: is there a GPU to test? Without one, the NVRTC path still checks everything up to
  // the kernel launch; the nvcc path skips before building.
  HostGpus host;
  if (!flags.cpu_only) {
    auto facts = gpu::probe_host();
    if (!facts) return report(context, facts.error());
    for (const auto& note : facts->notes)
      context.console.detail(note);
    host.none = smoke::skip_reason(*facts);
    if (!host.none) host.capabilities = smoke::distinct_capabilities(*facts);
  }
  auto steps = steps_to_run(context, flags);
  if (!steps) return report(context, steps.error());
  auto activated = activate_prefix(context, flags.prefix);
  if (!activated) {
    if (host.none && activated.error().code() == ErrorCode::failed)
      return skipped(context, *host.none);
    return failed(context, activated.error());
  }
  const fs::path& prefix = activated->prefix;  // absolute: the programs get paths in it
  const auto environment = as_process_env(activated->changes);
  auto runtime = smoke::find_runtime_stack(prefix);
  if (!runtime) return failed(context, runtime.error());
  if (*runtime)
    return run_runtime_smoke(context, flags, host, prefix, **runtime, *steps, environment);
  return run_compiled_smoke(context, flags, host, prefix, *steps, environment);
}

}  // namespace

void register_smoke(CLI::App& root, Commands& out) {
  auto flags = std::make_shared<SmokeFlags>();
  auto* smoke = root.add_subcommand(
      "smoke",
      "GPU smoke test: train a small network with the prefix's CUDA, cuDNN and cuBLAS, "
      "check it against a CPU reference (exit 0 pass, 1 fail, 77 no GPU)");
  add_prefix_option(*smoke, flags->prefix);
  smoke
      ->add_option("--steps", flags->steps,
                   "Training steps (default: envkit.yaml's smoke.steps, else 200)")
      ->check(CLI::Range(1L, kMaxSteps))
      ->option_text("N");
  smoke->add_option("--seed", flags->seed, "Seed of the data and initial weights (default 1)")
      ->option_text("S");
  smoke->add_flag("--cpu-only", flags->cpu_only,
                  "Train with the CPU reference only (builds and links, no GPU needed)");
  smoke->add_flag("--framework", flags->framework,
                  "Also train with the prefix's PyTorch or TensorFlow (needs its bin/python3)");
  out.push_back({smoke, [flags](Context& context) { return run_smoke(context, *flags); }});
}

}  // namespace envkit::cli
