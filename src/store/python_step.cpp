#include "python_step.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "envkit/core/text.hpp"
#include "envkit/store/sdist_build.hpp"
#include "envkit/sys/process.hpp"
#include "python_layer.hpp"

namespace envkit::store {

namespace fs = std::filesystem;

namespace {

// pip installs from local files, but a framework's wheels unpack to gigabytes.
constexpr auto kPipTimeout = std::chrono::minutes(30);

bool is_python_packaging(Packaging packaging) {
  return packaging == Packaging::pip || packaging == Packaging::venv;
}

// The machine's Python the lock names: `system` is python3 on PATH; a path is
// the interpreter itself, or a folder with bin/python3 (relative paths start
// at the project).
Result<fs::path> base_interpreter(const std::string& external, const fs::path& project_dir) {
  if (external == "system") {
    if (auto found = sys::find_on_path("python3")) return *found;
    return Error::failed("`external: {python: system}`: no `python3` on PATH")
        .hint("install Python 3 (`apt-get install python3 python3-venv`) or give its path");
  }
  fs::path path = external;
  if (path.is_relative()) path = project_dir / path;
  std::error_code ignored;
  if (fs::is_directory(path, ignored)) path /= fs::path("bin") / "python3";
  if (!fs::exists(path, ignored)) {
    return Error::failed(fmt::format("`external: {{python: {}}}`: {} does not exist", external,
                                     text::quoted(path.string())));
  }
  return path;
}

PackageReceipt receipt_of(const PlannedPackage& package) {
  return PackageReceipt{.name = package.name,
                        .version = package.version,
                        .build = package.build,
                        .packaging = std::string(to_string(package.packaging)),
                        .artifacts = {},
                        .files = {}};
}

Result<void> make_venvs(const PythonStepInput& input) {
  for (const auto& package : input.plan->packages) {
    if (package.packaging != Packaging::venv || package.unchanged) continue;
    auto base = base_interpreter(package.external, input.project_dir);
    if (!base) return std::move(base).error();
    auto files = python::make_venv(*base, input.root, input.prefix);
    if (!files) return std::move(files).error();
    auto receipt = receipt_of(package);
    receipt.files = *std::move(files);
    (*input.receipts)[package.name] = std::move(receipt);
  }
  return {};
}

// A closure package locked as its source distribution (`kind: sdist`).
bool is_sdist(const PlannedPackage& package) {
  return !package.artifacts.empty() &&
         package.artifacts.front().kind == specs::ArtifactKind::source;
}

// A fresh closure package's verified download in the cache.
python::WheelFile downloaded(const PythonStepInput& input, const PlannedPackage& package) {
  const auto& entry = input.entries->at(package.name).front();
  return {.name = package.name,
          .version = package.version,
          .sha256 = entry.sha256,
          .file = input.cache->entry_dir(entry.id) / entry.files.front().path};
}

// The closure's package names.
std::set<std::string> closure_names(const InstallPlan& plan) {
  std::set<std::string> names;
  for (const auto& package : plan.packages) {
    if (package.packaging == Packaging::pip) names.insert(package.name);
  }
  return names;
}

// The version a wheel's file name carries: `{name}-{version}-{tags}.whl`.
std::string wheel_version(const fs::path& file) {
  const auto name = file.filename().string();
  const auto parts = text::split(name, '-');
  return parts.size() > 1 ? std::string(parts[1]) : std::string();
}

// The wheels of `sdists`, from the cache or built there by the environment's
// Python (which has the closure's wheels by now), `wheels` as --find-links.
Result<std::vector<python::WheelFile>> wheels_of_sdists(
    const PythonStepInput& input, const SdistContext& context,
    const std::vector<const PlannedPackage*>& sdists) {
  std::vector<python::WheelFile> built;
  for (const auto* package : sdists) {
    const auto& sdist = input.entries->at(package->name).front();
    if (input.note)
      input.note(fmt::format("{} {}: a wheel from its source distribution (cached once built)",
                             package->name, package->version));
    auto entry = sdist_wheel_entry(*input.cache, package->name, package->version, sdist, context);
    if (!entry) return std::move(entry).error();
    const auto file = input.cache->entry_dir(entry->id) / entry->files.front().path;
    built.push_back({.name = package->name,
                     .version = wheel_version(file),
                     .sha256 = entry->sha256,
                     .file = file});
  }
  return built;
}

// The wheels of the fresh `sdists`, with the fresh `wheels` linked for --find-links.
Result<std::vector<python::WheelFile>> build_sdists(
    const PythonStepInput& input, const python::InterpreterCheck& check,
    const std::vector<const PlannedPackage*>& sdists,
    const std::vector<python::WheelFile>& wheels) {
  if (sdists.empty()) return std::vector<python::WheelFile>{};
  const fs::path links = input.root / ".envkit" / "build-links";
  if (auto linked = python::link_wheel_files(links, wheels); !linked)
    return std::move(linked).error();
  auto built = wheels_of_sdists(input,
                                {.python = python::interpreter(input.root),
                                 .python_version = check.version,
                                 .find_links = links,
                                 .closure = closure_names(*input.plan)},
                                sdists);
  std::error_code ignored;
  fs::remove_all(links, ignored);
  return built;
}

// The closure's new packages: wheels installed by the prefix's pip, then
// sdists built into wheels (which may need the closure's setuptools) and
// installed the same way.
Result<void> install_wheels(const PythonStepInput& input, const python::InterpreterCheck& check) {
  std::vector<const PlannedPackage*> fresh;
  std::vector<const PlannedPackage*> sdists;
  std::vector<python::WheelFile> wheels;
  for (const auto& package : input.plan->packages) {
    if (package.packaging != Packaging::pip || package.unchanged) continue;
    fresh.push_back(&package);
    if (is_sdist(package)) {
      sdists.push_back(&package);
    } else {
      wheels.push_back(downloaded(input, package));
    }
  }
  if (auto installed = python::pip_install(input.root, wheels, kPipTimeout, input.note); !installed)
    return installed;
  auto built = build_sdists(input, check, sdists, wheels);
  if (!built) return std::move(built).error();
  if (auto installed = python::pip_install(input.root, *built, kPipTimeout, input.note); !installed)
    return installed;
  // A built wheel's metadata spells its version as the build wrote it.
  std::map<std::string, std::string> versions;
  for (const auto& wheel : *built)
    versions[wheel.name] = wheel.version;
  for (const auto* package : fresh) {
    const auto version =
        versions.contains(package->name) ? versions[package->name] : package->version;
    auto files = python::installed_files(input.root, check.site_packages, package->name, version);
    if (!files) return std::move(files).error();
    const auto& entry = input.entries->at(package->name).front();
    auto receipt = receipt_of(*package);
    receipt.artifacts.push_back(
        {.component = package->name, .sha256 = entry.sha256, .url = entry.url, .entry = entry.id});
    receipt.files = *std::move(files);
    (*input.receipts)[package->name] = std::move(receipt);
  }
  return {};
}

Result<void> link_provided(const PythonStepInput& input, const std::string& site_packages) {
  for (const auto& package : input.plan->packages) {
    if (package.provided.empty() || package.unchanged) continue;
    auto& receipt = (*input.receipts)[package.name];
    if (receipt.name.empty()) receipt = receipt_of(package);
    for (const auto& provided : package.provided) {
      const auto wheel = input.receipts->find(provided.wheel);
      if (wheel == input.receipts->end()) {
        return Error::internal(fmt::format("{} is linked to {}, which was not installed",
                                           package.name, provided.wheel));
      }
      const auto& artifact = provided.artifact;
      auto view = python::link_prefix_view(
          input.root, site_packages, wheel->second.files,
          {.layout = specs::Layout::nvidia_wheel,
           .package = package.name,
           .component = artifact.component.empty() ? package.name : artifact.component,
           .wheel_root = artifact.wheel_root});
      if (!view) return std::move(view).error();
      receipt.files.insert(receipt.files.end(), view->begin(), view->end());
      receipt.artifacts.push_back({.component = artifact.component,
                                   .sha256 = artifact.sha256,
                                   .url = artifact.url,
                                   .entry = "pip:" + provided.wheel});
    }
    std::sort(receipt.files.begin(), receipt.files.end(),
              [](const FileRecord& a, const FileRecord& b) { return a.path < b.path; });
  }
  return {};
}

}  // namespace

bool needs_python_step(const InstallPlan& plan) {
  return std::any_of(plan.packages.begin(), plan.packages.end(), [](const PlannedPackage& p) {
    return p.name == "python" || is_python_packaging(p.packaging) || !p.provided.empty();
  });
}

Result<PythonStepOutcome> run_python_step(const PythonStepInput& input) {
  PythonStepOutcome outcome;
  if (auto made = make_venvs(input); !made) return std::move(made).error();
  const auto& packages = input.plan->packages;
  if (std::none_of(packages.begin(), packages.end(),
                   [](const PlannedPackage& p) { return p.name == "python"; }))
    return outcome;
  auto check = python::check_interpreter(input.root);
  if (!check) return std::move(check).error();
  if (!check->failed_imports.empty()) {
    outcome.warnings.push_back(fmt::format("the prefix's Python {} cannot import {}",
                                           check->version,
                                           text::join(check->failed_imports, ", ")));
  }
  if (auto installed = install_wheels(input, *check); !installed)
    return std::move(installed).error();
  if (auto linked = link_provided(input, check->site_packages); !linked)
    return std::move(linked).error();
  return outcome;
}

}  // namespace envkit::store
