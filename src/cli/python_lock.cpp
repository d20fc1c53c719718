#include "python_lock.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "envkit/core/env_vars.hpp"
#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/project/project_files.hpp"
#include "envkit/python/uv.hpp"
#include "envkit/specs/package_name.hpp"
#include "envkit/sys/fs.hpp"
#include "locking.hpp"

namespace envkit::cli {

namespace fs = std::filesystem;

namespace {

// A requirement read from pyproject.toml or environment.yml, as pip reads it.
std::optional<std::string> pip_line(const project::Requirement& requirement) {
  if (specs::canonical_package_name(requirement.name) == "python") return std::nullopt;
  if (requirement.dialect == project::SpecDialect::conda) return std::nullopt;
  if (requirement.dialect == project::SpecDialect::pep440) return requirement.written;
  auto spec = requirement.version_spec();
  if (!spec) return requirement.name;
  std::string line = requirement.name;
  if (!requirement.extras.empty()) line += "[" + text::join(requirement.extras, ",") + "]";
  line += spec->to_string();
  if (!requirement.marker.empty()) line += " ; " + requirement.marker;
  return line;
}

// `python-requirements:` files: requirements.txt goes to pip whole (-r), the
// others are read for their PEP 508 lines. Each file's text goes into `digest`.
Result<void> add_requirement_files(const LockInputs& inputs, python::ResolveRequest& request,
                                   std::string& digest) {
  const auto directory = fs::absolute(inputs.manifest_path).parent_path();
  for (const auto& name : inputs.manifest.python_requirements) {
    const fs::path file = directory / name;
    auto text = sys::read_file(file);
    if (!text) {
      return Error::input(fmt::format("`python-requirements`: cannot read {}", file.string()))
          .because(text.error().message());
    }
    digest += fmt::format("file {}\n{}\n", name, *text);
    const auto filename = file.filename().string();
    Result<project::FileRequirements> parsed = project::FileRequirements{};
    if (filename == "pyproject.toml") {
      parsed = project::parse_pyproject_toml(*text, file.string());
    } else if (filename.ends_with(".yml") || filename.ends_with(".yaml")) {
      parsed = project::parse_environment_yml(*text, file.string());
    } else {
      request.requirement_files.push_back(file);
      continue;
    }
    if (!parsed) return parsed.error();
    for (const auto& requirement : parsed->requirements) {
      if (auto line = pip_line(requirement)) request.requirements.push_back(*line);
    }
    for (const auto& include : parsed->includes)
      request.requirement_files.push_back(file.parent_path() / include.path);
  }
  return {};
}

std::optional<python::UvPlatform> uv_platform(specs::Platform platform) {
  switch (platform) {
    case specs::Platform::linux_x86_64:
      return python::UvPlatform::linux_x86_64;
    case specs::Platform::linux_aarch64:
      return python::UvPlatform::linux_aarch64;
    case specs::Platform::windows_x86_64:
      return python::UvPlatform::windows_x86_64;
  }
  return std::nullopt;
}

// The platform the resolver's interpreter runs on (`linux-x86_64`).
bool runs_on(const python::Interpreter& interpreter, specs::Platform platform) {
  return interpreter.platform_tag == specs::to_string(platform) ||
         (platform == specs::Platform::linux_aarch64 &&
          interpreter.platform_tag == "linux-aarch64") ||
         (platform == specs::Platform::windows_x86_64 && interpreter.platform_tag == "win-amd64");
}

const lock::LockedPackage* find_package(const lock::PlatformLock& locked, std::string_view name) {
  const auto it = std::find_if(locked.packages.begin(), locked.packages.end(),
                               [&](const lock::LockedPackage& p) { return p.name == name; });
  return it == locked.packages.end() ? nullptr : &*it;
}

// The recipe package an NVIDIA wheel of the closure is, by its project name:
// nvidia-cudnn-cu12 is cuDNN; nvidia-cuda-runtime-cu12, nvidia-cublas-cu12, ...
// are components of CUDA.
std::optional<std::string> nvidia_package(std::string_view wheel) {
  if (wheel.starts_with("nvidia-cudnn-")) return "cudnn";
  if (wheel.starts_with("nvidia-")) return "cuda";
  return std::nullopt;
}

// Marks the closure's NVIDIA wheels that are also artifacts of the lock's
// CUDA or cuDNN (the same file), and makes such a package install from wheels
// only: the framework's copy is the prefix's copy.
void link_nvidia_wheels(lock::PlatformLock& locked) {
  std::map<std::string, lock::PythonWheel*> by_file;
  for (auto& wheel : locked.python->packages)
    by_file[url::file_name(wheel.url)] = &wheel;
  for (auto& package : locked.packages) {
    bool provided = false;
    for (auto& artifact : package.artifacts) {
      if (artifact.kind != recipes::ArtifactKind::wheel) continue;
      const auto it = by_file.find(url::file_name(artifact.url));
      if (it == by_file.end()) continue;
      it->second->provides = package.name;
      // The index the closure came from is where install fetches it.
      artifact.url = it->second->url;
      artifact.sha256 = it->second->sha256;
      if (it->second->size) artifact.size = it->second->size;
      provided = true;
    }
    if (!provided) continue;
    std::erase_if(package.artifacts, [](const recipes::Artifact& artifact) {
      return artifact.kind != recipes::ArtifactKind::wheel;
    });
  }
}

// cuDNN pinned by the framework's wheels but another version in the lock: the
// constraint that makes the solver agree.
std::optional<std::tuple<std::string, std::string, std::string>> cudnn_disagreement(
    const lock::PlatformLock& locked) {
  for (const auto& wheel : locked.python->packages) {
    if (nvidia_package(wheel.name) != "cudnn" || !wheel.provides.empty()) continue;
    const auto* cudnn = find_package(locked, "cudnn");
    if (cudnn && cudnn->external) continue;
    if (cudnn && cudnn->version.original() == wheel.version) continue;
    return std::tuple{std::string("cudnn"), "==" + wheel.version,
                      fmt::format("the framework's wheels pin {}=={}", wheel.name, wheel.version)};
  }
  return std::nullopt;
}

lock::PythonClosure closure_of(const python::Closure& resolved, const PythonRequest& request,
                               const std::string& python_version) {
  lock::PythonClosure closure{.inputs = request.inputs_hash,
                              .resolver = resolved.resolver,
                              .python = python_version,
                              .packages = {}};
  for (const auto& wheel : resolved.wheels) {
    closure.packages.push_back({.name = wheel.name,
                                .version = wheel.version,
                                .url = wheel.url,
                                .sha256 = wheel.sha256,
                                .size = wheel.size,
                                .provides = {}});
  }
  return closure;
}

const lock::PlatformLock* platform_of(const lock::Lockfile* lockfile, specs::Platform platform) {
  if (!lockfile) return nullptr;
  for (const auto& locked : lockfile->platforms) {
    if (locked.platform == platform) return &locked;
  }
  return nullptr;
}

// The framework build the solver chose, as a pip requirement.
std::optional<std::string> framework_pin(const lock::PlatformLock& locked) {
  for (const auto& package : locked.packages) {
    if (specs::is_framework(package.name))
      return fmt::format("{}=={}", package.name, package.version.original());
  }
  return std::nullopt;
}

}  // namespace

std::string closure_inputs_hash(const PythonRequest& request, const lock::PlatformLock& locked) {
  const auto* python = find_package(locked, "python");
  return "sha256:" +
         core::sha256_hex(fmt::format("{}\nframework {}\npython {}", request.inputs_hash,
                                      framework_pin(locked).value_or(""),
                                      python ? python->version.original() : ""));
}

std::vector<std::string> python_staleness(const PythonRequest& request,
                                          const lock::Lockfile& lockfile) {
  std::vector<std::string> reasons;
  for (const auto& locked : lockfile.platforms) {
    if (locked.python && locked.python->inputs != closure_inputs_hash(request, locked)) {
      reasons.push_back(fmt::format(
          "the Python requirements of {} changed (`python-requirements` files or `indexes`)",
          specs::to_string(locked.platform)));
    }
  }
  return reasons;
}

Result<std::optional<PythonRequest>> python_request(const LockInputs& inputs,
                                                    const std::vector<fs::path>& preferred) {
  const auto& manifest = inputs.manifest;
  if (!manifest.framework && manifest.python_requirements.empty())
    return std::optional<PythonRequest>();
  if (env::get(env::kNoPython) == "1") return std::optional<PythonRequest>();
  PythonRequest request;
  std::string digest;
  if (auto added = add_requirement_files(inputs, request.resolve, digest); !added)
    return added.error();
  request.resolve.index_urls = manifest.indexes;
  request.resolve.cwd = fs::absolute(inputs.manifest_path).parent_path();
  for (const auto& index : manifest.indexes)
    digest += "index " + index + "\n";
  auto resolver = python::find_resolver(preferred);
  if (resolver) {
    request.resolver = *std::move(resolver);
  } else {
    request.no_resolver = resolver.error();
  }
  request.inputs_hash = "sha256:" + core::sha256_hex(digest);
  return std::optional<PythonRequest>(std::move(request));
}

Result<PythonPins> add_python_closures(const PythonRequest& base, lock::Lockfile& lockfile,
                                       const lock::Lockfile* previous,
                                       std::vector<std::string>& warnings) {
  PythonPins pins;
  for (auto& locked : lockfile.platforms) {
    PythonRequest request = base;
    if (auto framework = framework_pin(locked))
      request.resolve.requirements.insert(request.resolve.requirements.begin(), *framework);
    const auto* python = find_package(locked, "python");
    const std::string python_version = python ? python->version.original() : "";
    request.inputs_hash = closure_inputs_hash(base, locked);
    const auto* before = platform_of(previous, locked.platform);
    if (before && before->python && before->python->inputs == request.inputs_hash) {
      locked.python = before->python;
    } else if (base.resolver && runs_on(*base.resolver, locked.platform)) {
      auto resolved = python::resolve_with_pip(*base.resolver, request.resolve);
      if (!resolved) {
        Error error = resolved.error();
        return error.hint(fmt::format(
            "envkit asked pip for {} (with the project's `python-requirements`) on {}",
            text::join(request.resolve.requirements, ", "), specs::to_string(locked.platform)));
      }
      locked.python = closure_of(*resolved, request, base.resolver->version.original());
    } else if (auto uv = python::find_uv(); uv && python && uv_platform(locked.platform)) {
      auto resolved = python::resolve_with_uv(*uv, request.resolve, *uv_platform(locked.platform),
                                              python->version);
      if (!resolved) return std::move(resolved).error();
      locked.python = closure_of(*resolved, request, python_version);
    } else {
      const auto why = base.no_resolver
                           ? base.no_resolver->message()
                           : fmt::format(
                                 "pip resolves only for the machine it runs on ({}), and "
                                 "no `uv` was found to resolve for another",
                                 base.resolver->platform_tag);
      warnings.push_back(
          fmt::format("{} has no Python closure: {}", specs::to_string(locked.platform), why));
      continue;
    }
    link_nvidia_wheels(locked);
    if (auto constraint = cudnn_disagreement(locked)) pins.constraints.push_back(*constraint);
  }
  return pins;
}

}  // namespace envkit::cli
