#include "envkit/locking/inputs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "envkit/core/env_vars.hpp"
#include "envkit/locking/machine.hpp"
#include "envkit/locking/requirement_constraints.hpp"
#include "envkit/project/external.hpp"

namespace envkit::locking {

namespace fs = std::filesystem;

namespace {

bool has_system_section(const manifest::SystemSection& system) {
  return system.driver || !system.cuda_arch.empty() || system.glibc;
}

Result<void> settle_facts(LockInputs& inputs, const gpu::ProbeSources& sources) {
  const auto& system = inputs.manifest.system;
  auto& facts = inputs.facts;
  auto& assumed = inputs.assumptions;
  if (has_system_section(system)) {
    assumed.source = specs::FactSource::manifest;
    facts.source = specs::FactSource::manifest;
    if (system.driver) {
      assumed.driver = system.driver->original().empty() ? system.driver->to_string()
                                                         : system.driver->original();
      facts.driver = system.driver->lowest_admitted();
      facts.driver_written = *assumed.driver;
      if (!facts.driver) {
        inputs.warnings.push_back(fmt::format(
            "envkit.yaml system.driver `{}` sets no lowest driver; locking without a driver "
            "constraint",
            *assumed.driver));
      }
    }
    for (const auto& capability : system.cuda_arch)
      facts.gpus.push_back({capability, ""});
    assumed.cuda_arch = system.cuda_arch;
    if (system.glibc) {
      assumed.glibc = system.glibc->original();
      facts.glibc = system.glibc->lowest_admitted();
      facts.glibc_written = *assumed.glibc;
    }
    return {};
  }
  auto host = gpu::probe_host(sources);
  if (!host) return host.error();
  using Kind = gpu::Provenance::Kind;
  const bool overridden = host->driver_source.kind == Kind::override_variable ||
                          host->gpus_source.kind == Kind::override_variable;
  using specs::FactSource;
  assumed.source =
      overridden ? FactSource::override_variable
                 : (host->driver || !host->gpus.empty() ? FactSource::host : FactSource::none);
  facts.source = assumed.source;
  if (host->driver) {
    facts.driver = host->driver;
    assumed.driver = host->driver->original();
  } else {
    inputs.warnings.push_back(fmt::format(
        "no NVIDIA driver on this machine ({}): the lock has no driver constraint; state the "
        "machines' driver in envkit.yaml, e.g. `system: {{driver: \">=535.54.03\"}}`",
        host->driver_source.to_string()));
  }
  for (const auto& gpu : host->gpus) {
    facts.gpus.push_back({gpu.compute_capability, gpu.name.value_or("")});
    assumed.cuda_arch.push_back(gpu.compute_capability);
  }
  if (const auto glibc = sources.variable(env::kOverrideGlibc); glibc && !glibc->empty()) {
    assumed.glibc = *glibc;
  }
  // The framework's wheels must load here: its glibc is a fact like the driver.
  if (auto glibc = specs::Version::parse(host_glibc(sources))) {
    facts.glibc = *std::move(glibc);
    facts.glibc_written = facts.glibc->original();
  }
  std::sort(assumed.cuda_arch.begin(), assumed.cuda_arch.end());
  assumed.cuda_arch.erase(std::unique(assumed.cuda_arch.begin(), assumed.cuda_arch.end()),
                          assumed.cuda_arch.end());
  return {};
}

}  // namespace

Result<LockInputs> gather_lock_inputs(const fs::path& directory,
                                      const std::vector<specs::Platform>& platforms,
                                      const gpu::ProbeSources& sources) {
  LockInputs inputs;
  inputs.manifest_path = (directory / manifest::kFileName).lexically_normal();
  std::error_code ignored;
  if (!fs::exists(inputs.manifest_path, ignored)) {
    return Error::input(fmt::format("{} does not exist", inputs.manifest_path.string()))
        .hint("run `envkit init` to write one");
  }
  auto loaded = manifest::load(inputs.manifest_path);
  if (!loaded) return loaded.error();
  inputs.manifest = *std::move(loaded);
  inputs.manifest_hash = manifest::content_hash(inputs.manifest);
  inputs.platforms = platforms.empty() ? inputs.manifest.platforms : platforms;
  inputs.only_binary = inputs.manifest.only_binary;
  // Lines of the `python-requirements` files that name a CUDA or cuDNN (`jax[cuda12]`,
  // `torch==2.1.0+cu118`, `cupy-cuda11x`) are requirements of the solve, whether or
  // not the Python closure runs (docs/solver.md, "Requirements that name a CUDA").
  auto named =
      cuda_requirements_of_files(directory, inputs.manifest.python_requirements, inputs.platforms);
  std::move(named.requirements.begin(), named.requirements.end(),
            std::back_inserter(inputs.extra_requirements));
  std::move(named.warnings.begin(), named.warnings.end(), std::back_inserter(inputs.warnings));
  for (const auto& [package, source] : inputs.manifest.external) {
    auto version = project::resolve_external(package, source, directory);
    if (!version) return version.error();
    inputs.external.insert_or_assign(package,
                                     solve::External{version->version, version->description});
  }
  if (auto settled = settle_facts(inputs, sources); !settled) return settled.error();
  return inputs;
}

}  // namespace envkit::locking
