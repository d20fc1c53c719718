#include "envkit/locking/python_closure.hpp"

#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>

#include "envkit/core/env_vars.hpp"
#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/locking/era.hpp"
#include "envkit/locking/inputs.hpp"
#include "envkit/net/reachability.hpp"
#include "envkit/net/transport.hpp"
#include "envkit/project/project_files.hpp"
#include "envkit/python/uv.hpp"
#include "envkit/python/wheel_filename.hpp"
#include "envkit/recipes/import_pypi_torch.hpp"
#include "envkit/specs/package_name.hpp"
#include "envkit/sys/fs.hpp"

namespace envkit::locking {

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
// others (pyproject.toml, a conda environment, setup.py, setup.cfg) are read
// for their PEP 508 lines. Each file's text goes into `digest`.
Result<void> add_requirement_files(const LockInputs& inputs, python::ResolveRequest& request,
                                   std::string& digest) {
  const auto directory = fs::absolute(inputs.manifest_path).parent_path();
  for (const auto& name : inputs.manifest.python_requirements) {
    const fs::path file = directory / name;
    auto text = sys::read_file(file, project::kMaxProjectFileBytes);
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
    } else if (filename == "setup.py") {
      parsed = project::parse_setup_py(*text, file.string());
    } else if (filename == "setup.cfg") {
      parsed = project::parse_setup_cfg(*text, file.string());
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

python::UvPlatform uv_platform(specs::Platform platform) {
  switch (platform) {
    case specs::Platform::linux_aarch64:
      return python::UvPlatform::linux_aarch64;
    case specs::Platform::windows_x86_64:
      return python::UvPlatform::windows_x86_64;
    case specs::Platform::linux_x86_64:
      break;
  }
  return python::UvPlatform::linux_x86_64;
}

const lock::LockedPackage* find_package(const lock::PlatformLock& locked, std::string_view name) {
  const auto it = std::find_if(locked.packages.begin(), locked.packages.end(),
                               [&](const lock::LockedPackage& p) { return p.name == name; });
  return it == locked.packages.end() ? nullptr : &*it;
}

const lock::LockedPackage* framework_of(const lock::PlatformLock& locked) {
  for (const auto& package : locked.packages) {
    if (specs::is_framework(package.name)) return &package;
  }
  return nullptr;
}

std::string trimmed_url(std::string_view url) {
  while (url.ends_with('/'))
    url.remove_suffix(1);
  return std::string(url);
}

// The CUDA variant a build id names, without the platform the database split it by:
// `cu130-aarch64` and `cu130-windows` are PyPI's and PyTorch's `cu130`.
std::string_view variant_of(std::string_view build) {
  return build.substr(0, build.find('-'));
}

// PyTorch names each build's index after it: https://download.pytorch.org/whl/cu124
// serves `torch==2.4.1+cu124`. The configured index that does, if any.
std::optional<std::string> index_named_after(const std::vector<std::string>& indexes,
                                             std::string_view build) {
  if (build.empty()) return std::nullopt;
  for (const auto& index : indexes) {
    const auto url = trimmed_url(index);
    if (url.ends_with("/" + std::string(variant_of(build)))) return url;
  }
  return std::nullopt;
}

// jax's CUDA builds are extras of one release on PyPI (recipes/pypi/jax.yaml):
// the build `cuda12` is `jax[cuda12]`, which brings jax-cuda12-plugin.
bool build_is_extra(const lock::LockedPackage& framework) {
  return framework.name == "jax" && framework.build.starts_with("cuda");
}

// The build of jax a closure holds: the CUDA plugin it brings (`jax-cuda12-plugin`: cuda12).
std::optional<std::pair<std::string, std::string>> jax_plugin_build(
    const lock::PythonClosure& closure) {
  static const std::regex plugin("jax-(cuda[0-9]+)-plugin");
  for (const auto& wheel : closure.packages) {
    std::smatch match;
    if (std::regex_match(wheel.name, match, plugin)) {
      return std::pair(match[1].str(), fmt::format("it brings {} {}", wheel.name, wheel.version));
    }
  }
  return std::nullopt;
}

// The framework build as a requirement: `torch==2.4.1+cu124` when a configured
// index is that build's own, `jax[cuda12]==0.4.26` for a jax build, else the plain release.
std::string framework_pin(const lock::LockedPackage& framework,
                          const std::vector<std::string>& indexes) {
  const auto& version = framework.version.original();
  if (build_is_extra(framework))
    return fmt::format("{}[{}]=={}", framework.name, framework.build, version);
  if (index_named_after(indexes, framework.build))
    return fmt::format("{}=={}+{}", framework.name, version, variant_of(framework.build));
  return fmt::format("{}=={}", framework.name, version);
}

// The machines' oldest glibc minor: envkit.yaml's `system.glibc`, else manylinux_2_28.
unsigned glibc_minor(const LockInputs& inputs) {
  const auto& glibc = inputs.manifest.system.glibc;
  if (glibc) {
    for (const auto& clause : glibc->specifiers()) {
      if (clause.version() && clause.version()->release().size() >= 2)
        return static_cast<unsigned>(clause.version()->release()[1]);
    }
  }
  return python::ResolveTarget::kDefaultGlibcMinor;
}

std::optional<python::ResolveTarget> target_of(const LockInputs& inputs,
                                               const lock::PlatformLock& locked) {
  const auto* python = find_package(locked, "python");
  if (python == nullptr) return std::nullopt;
  return python::ResolveTarget{.python = python->version,
                               .platform = uv_platform(locked.platform),
                               .glibc_minor = glibc_minor(inputs)};
}

// `nvidia-cuda-runtime-cu12` -> `cuda_cudart`: the distributions of the wheel
// artifacts a lock package has, by the component they are.
// Copies, not pointers: replacing a component changes `package.artifacts`.
std::map<std::string, recipes::Artifact> wheel_components(const lock::LockedPackage& package) {
  std::map<std::string, recipes::Artifact> components;
  for (const auto& artifact : package.artifacts) {
    if (artifact.kind != recipes::ArtifactKind::wheel) continue;
    auto parsed = python::parse_wheel_filename(url::file_name(artifact.url));
    if (parsed) components.emplace(parsed->distribution, artifact);
  }
  return components;
}

// The closure's wheels that are components of `package` (CUDA, cuDNN) replace
// those components' artifacts: one copy, installed by pip and linked into lib/.
void provide_from_closure(lock::LockedPackage& package, lock::PythonClosure& closure) {
  const auto components = wheel_components(package);
  for (auto& wheel : closure.packages) {
    const auto it = components.find(wheel.name);
    if (it == components.end()) continue;
    recipes::Artifact replacement = it->second;
    replacement.url = wheel.url;
    replacement.sha256 = wheel.sha256;
    replacement.size = wheel.size;
    std::erase_if(package.artifacts, [&](const recipes::Artifact& artifact) {
      return artifact.component == replacement.component;
    });
    package.artifacts.push_back(std::move(replacement));
    wheel.provides = package.name;
  }
}

const lock::PythonWheel* closure_wheel(const lock::PythonClosure& closure, std::string_view stem) {
  for (const auto& wheel : closure.packages) {
    if (wheel.name == stem) return &wheel;
    if (wheel.name.starts_with(stem) && wheel.name.size() > stem.size() + 3 &&
        std::string_view(wheel.name).substr(stem.size()).starts_with("-cu"))
      return &wheel;
  }
  return nullptr;
}

// "12.1.105" -> "==12.1.*"
std::optional<specs::VersionSpec> series_of(std::string_view version) {
  const auto parsed = specs::Version::parse(version);
  if (!parsed || parsed->release().size() < 2) return std::nullopt;
  auto spec = specs::VersionSpec::parse(fmt::format("=={}.{}.*", parsed->major(), parsed->minor()));
  if (!spec) return std::nullopt;
  return *std::move(spec);
}

// A requirement the closure's NVIDIA wheel states: the solver names the wheel, not
// envkit.yaml, which does not have it (`nvidia-cudnn-cu12==9.28.0.42` in the resolved
// Python closure requires cudnn ==9.28.0.42).
solve::Requirement closure_pin(std::string package, specs::VersionSpec spec,
                               const lock::PythonWheel& wheel) {
  solve::Requirement requirement{
      .package = std::move(package), .spec = std::move(spec), .origin = "wheels"};
  requirement.written_at =
      solve::WrittenAt{.location = "the resolved Python closure",
                       .text = fmt::format("{}=={}", wheel.name, wheel.version)};
  return requirement;
}

// What the closure's NVIDIA wheels pin that the lock's cuda and cudnn do not hold.
void nvidia_pins(const lock::PlatformLock& locked, ClosureFindings& findings) {
  const auto& closure = *locked.python;
  if (const auto* cudnn_wheel = closure_wheel(closure, "nvidia-cudnn")) {
    const auto* cudnn = find_package(locked, "cudnn");
    if (!cudnn || (!cudnn->external && cudnn->version.original() != cudnn_wheel->version)) {
      auto spec = specs::VersionSpec::parse("==" + cudnn_wheel->version);
      if (spec) {
        findings.constraints.push_back(closure_pin("cudnn", *spec, *cudnn_wheel));
        findings.notes.push_back(fmt::format("cudnn =={}: the framework's wheels pin {} {}",
                                             cudnn_wheel->version, cudnn_wheel->name,
                                             cudnn_wheel->version));
      }
    }
  }
  if (const auto* runtime = closure_wheel(closure, "nvidia-cuda-runtime")) {
    const auto* cuda = find_package(locked, "cuda");
    const auto series = series_of(runtime->version);
    if (series && (!cuda || (!cuda->external && !series->contains(cuda->version)))) {
      findings.constraints.push_back(closure_pin("cuda", *series, *runtime));
      findings.notes.push_back(fmt::format("cuda {}: the framework's wheels pin {} {}",
                                           series->to_string(), runtime->name, runtime->version));
    }
  }
}

// Which build a resolved framework wheel is: its local label (`+cu124`), else
// the CUDA runtime its closure pins (nvidia-cuda-runtime-cu12 12.1.105: cu121).
std::optional<std::pair<std::string, std::string>> resolved_build(
    const lock::PythonClosure& closure, const lock::LockedPackage& framework) {
  const auto* wheel = closure_wheel(closure, framework.name);
  if (wheel == nullptr) return std::nullopt;
  if (build_is_extra(framework)) return jax_plugin_build(closure);
  if (const auto plus = wheel->version.find('+'); plus != std::string::npos) {
    return std::pair(wheel->version.substr(plus + 1),
                     fmt::format("its wheel is {} {}", wheel->name, wheel->version));
  }
  const auto* runtime = closure_wheel(closure, "nvidia-cuda-runtime");
  if (runtime == nullptr) return std::nullopt;
  auto id = recipes::cuda_build_id(runtime->version);
  if (!id) return std::nullopt;
  return std::pair(*id, fmt::format("its wheel pins {} {}", runtime->name, runtime->version));
}

std::string index_hint(std::string_view package, std::string_view build) {
  if (package != "torch" || !build.starts_with("cu")) return {};
  return fmt::format(
      "to use torch's {} build, add its index to envkit.yaml: `indexes: [{}, "
      "https://download.pytorch.org/whl/{}]`",
      variant_of(build), recipes::kPypiIndex, variant_of(build));
}

// The framework wheel the indexes served is another build than the lock names:
// that build becomes unavailable; returns whether it did.
bool framework_build_check(const LockInputs& inputs, const lock::PlatformLock& locked,
                           ClosureFindings& findings) {
  const auto* framework = framework_of(locked);
  if (framework == nullptr || framework->build.empty()) return false;
  const auto served = resolved_build(*locked.python, *framework);
  // Builds for other platforms carry a suffix: `cu130-aarch64` is the cu130 build.
  if (!served || framework->build == served->first ||
      framework->build.starts_with(served->first + "-"))
    return false;
  const auto indexes = effective_indexes(inputs);
  findings.unavailable.push_back(
      {.package = framework->name,
       .version = framework->version.original(),
       .build = framework->build,
       .reason = fmt::format("the configured indexes ({}) serve {} {} as its {} build ({})",
                             text::join(indexes, ", "), framework->name,
                             framework->version.original(), served->first, served->second),
       .hint = index_hint(framework->name, framework->build)});
  findings.notes.push_back(
      fmt::format("{} {} ({}) is not what the indexes serve: {} {} is the {} build there ({})",
                  framework->name, framework->version.original(), framework->build, framework->name,
                  framework->version.original(), served->first, served->second));
  return true;
}

// Whether the framework release itself has no file for the target on the
// indexes (a closure failed: the framework's fault or a requirement's?). If
// so, every build of that release becomes unavailable; if not, the closure's
// own error names the requirement. Asked only after a failure.
Result<bool> framework_unserved(const lock::PlatformLock& locked,
                                const python::ResolveRequest& base,
                                const python::ResolveTarget& target, const ClosureResolver& resolve,
                                ClosureFindings& findings) {
  const auto* framework = framework_of(locked);
  if (framework == nullptr) return false;
  python::ResolveRequest alone{.requirements = {framework_pin(*framework, base.index_urls)},
                               .requirement_files = {},
                               .index_urls = base.index_urls,
                               .cwd = base.cwd,
                               .timeout = base.timeout,
                               .only_binary = base.only_binary,
                               .no_deps = true,
                               .refresh = base.refresh};
  auto served = resolve(alone, target);
  if (served) return false;
  // An index that cannot be read says nothing about what it serves.
  if (served.error().message() != python::kUnresolvable) return std::move(served).error();
  const auto& version = framework->version.original();
  findings.unavailable.push_back(
      {.package = framework->name,
       .version = version,
       .build = {},
       .reason = fmt::format("the configured indexes ({}) have no {} {} for {}",
                             text::join(base.index_urls, ", "), framework->name, version,
                             target.description()),
       .hint = {}});
  findings.notes.push_back(fmt::format("{} {} is not on the indexes for {}", framework->name,
                                       version, target.description()));
  return true;
}

lock::PythonClosure closure_of(const python::Closure& resolved, std::string inputs_hash,
                               const std::string& python_version) {
  lock::PythonClosure closure{.inputs = std::move(inputs_hash),
                              .resolver = resolved.resolver,
                              .python = python_version,
                              .packages = {},
                              .build_as_of = resolved.build_as_of,
                              .built_with_framework = resolved.built_with_framework};
  for (const auto& wheel : resolved.wheels) {
    closure.packages.push_back({.name = wheel.name,
                                .version = wheel.version,
                                .kind = wheel.kind == python::Distribution::sdist
                                            ? lock::Distribution::sdist
                                            : lock::Distribution::wheel,
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

// https://HOST/PATH as the mirror has it, and back.
std::string through_mirror(const std::optional<std::string>& mirror, const std::string& url) {
  return mirror ? net::mirror_url(*mirror, url) : url;
}

std::string from_mirror(const std::optional<std::string>& mirror, const std::string& url) {
  return mirror ? net::origin_url(*mirror, url) : url;
}

}  // namespace

std::vector<std::string> effective_indexes(const LockInputs& inputs) {
  if (!inputs.manifest.indexes.empty()) return inputs.manifest.indexes;
  if (!inputs.default_index.empty()) return {inputs.default_index};
  return {std::string(recipes::kPypiIndex)};
}

std::string closure_inputs_hash(const PythonRequest& request, const lock::PlatformLock& locked) {
  const auto* python = find_package(locked, "python");
  const auto* framework = framework_of(locked);
  return "sha256:" +
         core::sha256_hex(fmt::format(
             "{}\nframework {}\npython {}\nplatform {}", request.inputs_hash,
             framework ? framework_pin(*framework, request.resolve.index_urls) : "",
             python ? python->version.original() : "", specs::to_string(locked.platform)));
}

std::vector<std::string> python_staleness(const PythonRequest& request,
                                          const lock::Lockfile& lockfile) {
  std::vector<std::string> reasons;
  for (const auto& locked : lockfile.platforms) {
    if (!locked.python) {
      reasons.push_back(
          fmt::format("{} has no Python closure (`python-requirements` or the framework need one)",
                      specs::to_string(locked.platform)));
    } else if (locked.python->inputs != closure_inputs_hash(request, locked)) {
      reasons.push_back(fmt::format(
          "the Python requirements of {} changed (`python-requirements` files or `indexes`)",
          specs::to_string(locked.platform)));
    }
  }
  return reasons;
}

Result<std::optional<PythonRequest>> python_request(const LockInputs& inputs) {
  const auto& manifest = inputs.manifest;
  if (!manifest.framework && manifest.python_requirements.empty())
    return std::optional<PythonRequest>();
  if (env::get(env::kNoPython) == "1") return std::optional<PythonRequest>();
  PythonRequest request;
  std::string digest;
  if (auto added = add_requirement_files(inputs, request.resolve, digest); !added)
    return added.error();
  request.resolve.index_urls = effective_indexes(inputs);
  request.resolve.cwd = fs::absolute(inputs.manifest_path).parent_path();
  request.resolve.timeout = inputs.resolve_timeout;
  request.resolve.only_binary = inputs.only_binary;
  request.resolve.refresh = inputs.live_index_read_now;
  for (const auto& index : request.resolve.index_urls)
    digest += "index " + index + "\n";
  if (inputs.only_binary) digest += "only-binary\n";
  add_build_options(inputs, request.resolve, digest);  // era.hpp: how sdists are built
  request.inputs_hash = "sha256:" + core::sha256_hex(digest);
  request.lines = located_requirements(*request.resolve.cwd, manifest.python_requirements);
  request.indexes = std::make_shared<RequirementIndexes>(request.resolve.requirement_files,
                                                         *request.resolve.cwd, inputs.reach);
  return std::optional<PythonRequest>(std::move(request));
}

RequirementIndexes::RequirementIndexes(std::vector<fs::path> files, fs::path project, Reach reach)
    : files_(std::move(files)), project_(std::move(project)), reach_(std::move(reach)) {}

RequirementIndexes::~RequirementIndexes() {
  if (scratch_.empty()) return;
  std::error_code ignored;
  fs::remove_all(scratch_, ignored);
}

Result<void> RequirementIndexes::check() {
  checked_ = true;
  if (!reach_) return {};
  const auto lines = index_lines_of_files(project_, files_);
  if (lines.empty()) return {};
  std::vector<std::string> urls;
  for (const auto& line : lines)
    urls.push_back(line.url);
  const auto answers = reach_(urls);
  std::vector<IndexLine> dropped;
  for (const auto& line : lines) {
    const auto answer = answers.find(net::reachability_host(line.url));
    if (answer == answers.end() || answer->second.reachable) continue;
    unreachable_.push_back({.line = line, .reason = answer->second.reason});
    dropped.push_back(line);
  }
  if (dropped.empty()) return {};
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      ((tmp && *tmp ? fs::path(tmp) : fs::path("/tmp")) / "envkit-requirements-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    return Error::failed("cannot make a temporary folder for the requirement files")
        .because(std::string(pattern));
  }
  scratch_ = pattern;
  auto paths = requirement_files_without(files_, dropped, scratch_);
  if (!paths) return std::move(paths).error();
  for (std::size_t i = 0; i < files_.size(); ++i) {
    if ((*paths)[i] != files_[i]) copies_.emplace_back(files_[i], (*paths)[i]);
  }
  return {};
}

Result<python::ResolveRequest> RequirementIndexes::for_uv(python::ResolveRequest request) {
  const std::scoped_lock lock(mutex_);
  if (!checked_) {
    if (auto checked = check(); !checked) return std::move(checked).error();
  }
  for (auto& file : request.requirement_files) {
    for (const auto& [original, copy] : copies_) {
      if (file == original) file = copy;
    }
  }
  return request;
}

namespace {

bool package_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
}

// The package names a uv refusal writes: `torchdata==0.9.0`, `jax[cuda12]`, `numpy>=1.26.0`,
// `` `torchdata` ``, "all versions of libtpu-nightly", "you require six", "Because X was not
// found". Only names the project requires count (culprits_of), so an English word of uv's
// sentence is never taken for one.
std::set<std::string> named_packages(std::string_view text) {
  std::set<std::string> names;
  std::size_t i = 0;
  while (i < text.size()) {
    if (!std::isalnum(static_cast<unsigned char>(text[i])) ||
        (i > 0 && package_char(text[i - 1]))) {
      ++i;
      continue;
    }
    auto end = i;
    while (end < text.size() && package_char(text[end]))
      ++end;
    auto token = text.substr(i, end - i);
    while (!token.empty() && (token.back() == '.' || token.back() == '-' || token.back() == '_'))
      token.remove_suffix(1);
    const auto after = i + token.size();
    const char next = after < text.size() ? text[after] : '\0';
    const bool pinned =
        next != '\0' && std::string_view("=<>!~[").find(next) != std::string_view::npos;
    const bool quoted = i > 0 && text[i - 1] == '`' && next == '`';
    // uv's sentences: "Because X was not found", "you require X", "all versions of X",
    // "and X depends on".
    const auto before = text.substr(0, i);
    const auto rest = text.substr(after);
    const bool placed = before.ends_with("Because ") || before.ends_with("require ") ||
                        before.ends_with("of ") || before.ends_with("and ") ||
                        before.ends_with("depends on ") || rest.starts_with(" was not found") ||
                        rest.starts_with(" depends on");
    if (!token.empty() && (pinned || quoted || placed))
      names.insert(specs::canonical_package_name(token));
    i = end;
  }
  return names;
}

// The package a requirement line names, normalized.
std::string name_of_requirement(std::string_view line) {
  line = text::trim(line);
  std::size_t end = 0;
  while (end < line.size() && package_char(line[end]))
    ++end;
  return specs::canonical_package_name(line.substr(0, end));
}

}  // namespace

std::vector<Culprit> culprits_of(const Error& refusal, const PythonRequest& request,
                                 const python::ResolveRequest& asked) {
  std::string said;
  for (const auto* lines : {&refusal.causes(), &refusal.hints()}) {
    for (const auto& line : *lines) {
      if (line.starts_with("uv:")) said += line + "\n";
    }
  }
  const auto names = named_packages(said);
  std::vector<Culprit> culprits;
  const auto add = [&](Culprit culprit) {
    if (std::find(culprits.begin(), culprits.end(), culprit) == culprits.end())
      culprits.push_back(std::move(culprit));
  };
  for (const auto& line : request.lines) {
    if (names.contains(line.name)) add({.location = line.location, .text = line.text});
  }
  if (!culprits.empty()) return culprits;
  for (const auto& requirement : asked.requirements) {
    if (names.contains(name_of_requirement(requirement)))
      add({.location = "the resolved Python closure", .text = requirement});
  }
  return culprits;
}

ClosureResolver resolver_with_uv(python::Uv uv, std::optional<std::string> mirror) {
  return [uv = std::move(uv), mirror = std::move(mirror)](
             const python::ResolveRequest& request,
             const python::ResolveTarget& target) -> Result<python::Closure> {
    python::ResolveRequest asked = request;
    for (auto& index : asked.index_urls)
      index = through_mirror(mirror, index);
    auto closure = python::resolve_with_uv(uv, asked, target);
    if (!closure) return closure;
    for (auto& wheel : closure->wheels)
      wheel.url = from_mirror(mirror, wheel.url);
    return closure;
  };
}

Result<ClosureFindings> add_python_closures(const LockInputs& inputs, const PythonRequest& base,
                                            lock::Lockfile& lockfile,
                                            const lock::Lockfile* previous,
                                            const ClosureResolver& resolve) {
  ClosureFindings findings;
  for (auto& locked : lockfile.platforms) {
    const auto target = target_of(inputs, locked);
    if (!target) {
      return Error::failed(fmt::format("the lock for {} holds no Python to resolve the Python "
                                       "requirements for",
                                       specs::to_string(locked.platform)))
          .hint("state the Python in envkit.yaml: `requires: {python: \"3.11.*\"}`");
    }
    const std::string inputs_hash = closure_inputs_hash(base, locked);
    const auto* before = platform_of(previous, locked.platform);
    if (before && before->python && before->python->inputs == inputs_hash) {
      locked.python = before->python;
    } else {
      python::ResolveRequest request = base.resolve;
      if (const auto* framework = framework_of(locked)) {
        request.requirements.insert(request.requirements.begin(),
                                    framework_pin(*framework, request.index_urls));
      }
      auto resolved = resolve(request, *target);
      if (!resolved) {
        Error error = resolved.error();
        error.hint(
            fmt::format("envkit asked for {} (with the project's `python-requirements`) for {} "
                        "from {}",
                        request.requirements.empty() ? std::string("the requirement files")
                                                     : text::join(request.requirements, ", "),
                        target->description(), text::join(request.index_urls, ", ")));
        if (error.message() != python::kUnresolvable) return error;
        auto unserved = framework_unserved(locked, base.resolve, *target, resolve, findings);
        if (!unserved) return std::move(unserved).error();
        if (*unserved) continue;
        // The framework is served: whether an older Python resolves is the pipeline's to ask.
        findings.failures.push_back({.platform = locked.platform,
                                     .python = target->python,
                                     .error = std::move(error),
                                     .request = std::move(request)});
        continue;
      }
      locked.python = closure_of(*resolved, inputs_hash, target->python.original());
    }
    // The pins of a build the lock will not keep say nothing about the next solve.
    if (framework_build_check(inputs, locked, findings)) continue;
    nvidia_pins(locked, findings);
    for (auto& package : locked.packages) {
      if ((package.name == "cuda" || package.name == "cudnn") && !package.external)
        provide_from_closure(package, *locked.python);
    }
  }
  return findings;
}

Result<std::vector<solve::UnavailableBuild>> unavailable_builds(const recipes::Database& database,
                                                                const LockInputs& inputs) {
  std::vector<solve::UnavailableBuild> unavailable;
  const auto& framework = inputs.manifest.framework;
  if (!framework || !database.contains(framework->name)) return unavailable;
  auto recipe = database.facts(framework->name);
  if (!recipe) return std::move(recipe).error();
  const auto indexes = effective_indexes(inputs);
  for (const auto& version : (*recipe)->versions) {
    const auto on_pypi =
        std::find_if(version.builds.begin(), version.builds.end(),
                     [](const recipes::Build& b) { return !b.wheel_index.empty(); });
    if (on_pypi == version.builds.end()) continue;
    for (const auto& build : version.builds) {
      // jax has one build per CUDA major on PyPI itself (extras `cuda12`, `cuda13`).
      if (!build.wheel_index.empty() || index_named_after(indexes, build.id)) continue;
      unavailable.push_back(
          {.package = (*recipe)->name,
           .version = version.version.original(),
           .build = build.id,
           .reason = fmt::format("{} {} on {} is the {} build; the {} build is on its own index, "
                                 "which envkit.yaml's `indexes:` does not list",
                                 (*recipe)->name, version.version.original(), on_pypi->wheel_index,
                                 on_pypi->id, build.id),
           .hint = index_hint((*recipe)->name, build.id)});
    }
  }
  return unavailable;
}

}  // namespace envkit::locking
