#include "envkit/locking/machine.hpp"

#include <fmt/format.h>
#include <gnu/libc-version.h>

#include <algorithm>

#include "envkit/core/env_vars.hpp"
#include "envkit/core/text.hpp"
#include "envkit/specs/version_spec.hpp"

namespace envkit::locking {

namespace {

constexpr std::string_view kRelockHint =
    "or run `envkit lock` on this machine to solve for it (that rewrites envkit.lock)";

Result<void> check_driver(const std::string& needed, const gpu::HostFacts& host) {
  auto spec = specs::VersionSpec::parse(needed);
  if (!spec) return {};  // a lock of an older envkit: its driver was the writer's
  if (!host.driver || spec->contains(*host.driver)) return {};
  return Error::failed(
             fmt::format("this machine's NVIDIA driver {} is older than envkit.lock needs",
                         host.driver->original()))
      .because(
          fmt::format("the locked CUDA needs a driver {} (envkit.lock `system.driver`)", needed))
      .hint(fmt::format("upgrade the driver to {} or newer, {}", needed.substr(2), kRelockHint));
}

Result<void> check_gpus(const std::vector<specs::ComputeCapability>& archs,
                        const gpu::HostFacts& host) {
  if (archs.empty()) return {};
  for (const auto& gpu : host.gpus) {
    if (specs::runs_on(archs, gpu.compute_capability)) continue;
    std::vector<std::string> listed;
    for (const auto& code : archs)
      listed.push_back(code.to_string());
    return Error::failed(fmt::format("this machine's GPU {}(compute capability {}) has no code in "
                                     "the stack envkit.lock holds",
                                     gpu.name ? *gpu.name + " " : "",
                                     gpu.compute_capability.to_string()))
        .because(fmt::format("the locked builds have code for compute capabilities {} and newer "
                             "minors of each (envkit.lock `system.cuda-arch`)",
                             text::join(listed, ", ")))
        .hint(
            "run `envkit lock` on this machine so the solver picks builds with code for its GPU "
            "(that rewrites envkit.lock)");
  }
  return {};
}

Result<void> check_glibc(const std::string& needed, const gpu::ProbeSources& sources) {
  auto spec = specs::VersionSpec::parse(needed);
  auto glibc = specs::Version::parse(host_glibc(sources));
  if (!spec || !glibc || spec->contains(*glibc)) return {};
  return Error::failed(fmt::format("this machine's glibc {} is older than envkit.lock needs",
                                   glibc->original()))
      .because(fmt::format("the locked Python wheels are built for glibc {} (envkit.lock "
                           "`system.glibc`, from their manylinux tags)",
                           needed))
      .hint(fmt::format("use a machine with a newer glibc, {}", kRelockHint));
}

}  // namespace

std::string host_glibc(const gpu::ProbeSources& sources) {
  if (const auto given = sources.variable(env::kOverrideGlibc); given && !given->empty())
    return *given;
  return gnu_get_libc_version();
}

Result<void> check_machine(const lock::Lockfile& lockfile, const gpu::ProbeSources& sources) {
  const auto& needed = lockfile.system;
  if (needed.source == specs::FactSource::manifest) return {};
  if (needed.glibc) {
    if (auto fits = check_glibc(*needed.glibc, sources); !fits) return fits;
  }
  if (!needed.driver && needed.cuda_arch.empty()) return {};
  auto host = gpu::probe_host(sources);
  if (!host) return std::move(host).error();
  if (needed.driver) {
    if (auto fits = check_driver(*needed.driver, *host); !fits) return fits;
  }
  return check_gpus(needed.cuda_arch, *host);
}

}  // namespace envkit::locking
