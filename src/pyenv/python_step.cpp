#include "envkit/pyenv/python_step.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "envkit/build/sdist_build.hpp"
#include "envkit/core/text.hpp"
#include "envkit/pyenv/python_layer.hpp"
#include "envkit/pyenv/wheel_install.hpp"
#include "envkit/store/wheel_entry.hpp"
#include "envkit/sys/process.hpp"

namespace envkit::pyenv {

// This module builds on the store: its cache, records, links and generations.
using namespace store;

namespace fs = std::filesystem;

namespace {

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

// The plan's new venvs made, each from its prepared interpreter, with a receipt.
Result<void> make_venvs(const PythonStepInput& input) {
  for (const auto& venv : *input.venvs) {
    auto files = make_venv(venv.base, input.root, input.prefix);
    if (!files) return std::move(files).error();
    const auto package =
        std::find_if(input.plan->packages.begin(), input.plan->packages.end(),
                     [&](const PlannedPackage& planned) { return planned.name == venv.package; });
    if (package == input.plan->packages.end())
      return Error::internal(fmt::format("the venv of {} is not in the plan", venv.package));
    auto receipt = receipt_of(*package);
    receipt.files = *std::move(files);
    (*input.receipts)[venv.package] = std::move(receipt);
  }
  return {};
}

// The closure's package names.
std::set<std::string> closure_names(const InstallPlan& plan) {
  std::set<std::string> names;
  for (const auto& package : plan.packages) {
    if (package.packaging == Packaging::pip) names.insert(package.name);
  }
  return names;
}

// What `venv` with pip would have installed, by envkit from the cache:
// ensurepip's wheels, each unpacked once (prepare_venvs).
Result<void> install_venv_wheels(const PythonStepInput& input, const InterpreterCheck& check) {
  for (const auto& venv : *input.venvs) {
    auto& receipt = input.receipts->at(venv.package);
    for (const auto& wheel : venv.wheels) {
      auto placed = place_wheel(*input.builder, check,
                                {.name = wheel.name,
                                 .dir = input.cache->entry_dir(wheel.entry.id),
                                 .files = &wheel.entry.files});
      if (!placed) return std::move(placed).error();
      if (auto written = write_record(*input.builder, *placed); !written) return written;
      receipt.files.insert(receipt.files.end(), placed->files.begin(), placed->files.end());
    }
    std::sort(receipt.files.begin(), receipt.files.end(),
              [](const FileRecord& a, const FileRecord& b) { return a.path < b.path; });
  }
  return {};
}

// A closure package locked as its source distribution (`kind: sdist`).
bool is_sdist(const PlannedPackage& package) {
  return !package.artifacts.empty() &&
         package.artifacts.front().kind == specs::ArtifactKind::source;
}

// The wheels of `sdists`, from the cache or built there by the environment's
// Python (which has the closure's wheels placed by now), each unpacked.
Result<std::vector<EntryRecord>> wheels_of_sdists(
    const PythonStepInput& input, const InterpreterCheck& check,
    const std::vector<const PlannedPackage*>& sdists) {
  const build::SdistContext context{.python = interpreter(input.root),
                                    .python_version = check.version,
                                    .closure = closure_names(*input.plan)};
  std::vector<EntryRecord> built;
  for (const auto* package : sdists) {
    const auto& sdist = input.entries->at(package->name).front();
    if (input.note)
      input.note(fmt::format("{} {}: a wheel from its source distribution (cached once built)",
                             package->name, package->version));
    auto entry =
        build::sdist_wheel_entry(*input.cache, package->name, package->version, sdist, context);
    if (!entry) return std::move(entry).error();
    built.push_back(*std::move(entry));
  }
  return built;
}

// Places `package`'s unpacked wheel (cache entry `entry`).
Result<PlacedWheel> place_one(const PythonStepInput& input, const InterpreterCheck& check,
                              const PlannedPackage& package, const EntryRecord& entry) {
  return place_wheel(
      *input.builder, check,
      {.name = package.name, .dir = input.cache->entry_dir(entry.id), .files = &entry.files});
}

// The closure's new packages, installed by envkit from their unpacked wheels:
// wheels first, then sdists built into wheels (their build may need the
// closure's setuptools, placed by then); then bytecode, if asked; then each RECORD.
Result<void> install_wheels(const PythonStepInput& input, const InterpreterCheck& check) {
  std::vector<const PlannedPackage*> fresh;
  std::vector<const PlannedPackage*> sdists;
  std::vector<PlacedWheel> placed;
  for (const auto& package : input.plan->packages) {
    if (package.packaging != Packaging::pip || package.unchanged) continue;
    fresh.push_back(&package);
    // The venv's own pip or setuptools gives way to the closure's, as pip would replace it.
    for (const auto& lib_dir : {check.scheme.purelib, check.scheme.platlib}) {
      auto removed =
          remove_installed(input.root, lib_dir, package.name, *input.receipts, *input.builder);
      if (!removed) return std::move(removed).error();
    }
    if (is_sdist(package)) {
      sdists.push_back(&package);
      continue;
    }
    auto wheel = place_one(input, check, package, input.entries->at(package.name).front());
    if (!wheel) return std::move(wheel).error();
    placed.push_back(*std::move(wheel));
  }
  auto built = wheels_of_sdists(input, check, sdists);
  if (!built) return std::move(built).error();
  for (std::size_t i = 0; i < sdists.size(); ++i) {
    auto wheel = place_one(input, check, *sdists[i], (*built)[i]);
    if (!wheel) return std::move(wheel).error();
    placed.push_back(*std::move(wheel));
  }
  if (input.compile_bytecode && !placed.empty()) {
    if (input.note)
      input.note(fmt::format("compiling the bytecode of {} Python packages", placed.size()));
    if (auto compiled = compile_bytecode(input.root, check, placed); !compiled) return compiled;
  }
  std::map<std::string, PlacedWheel*> by_name;
  for (auto& wheel : placed) {
    if (auto written = write_record(*input.builder, wheel); !written) return written;
    by_name[wheel.name] = &wheel;
  }
  for (const auto* package : fresh) {
    const auto& entry = input.entries->at(package->name).front();
    auto receipt = receipt_of(*package);
    receipt.artifacts.push_back(
        {.component = package->name, .sha256 = entry.sha256, .url = entry.url, .entry = entry.id});
    receipt.files = std::move(by_name.at(package->name)->files);
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
      auto view = link_prefix_view(
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

VenvRequest venv_request(const InstallPlan& plan, const fs::path& project_dir) {
  VenvRequest request{.venvs = {}, .closure = closure_names(plan), .project_dir = project_dir};
  for (const auto& package : plan.packages) {
    if (package.packaging == Packaging::venv && !package.unchanged)
      request.venvs.emplace_back(package.name, package.external);
  }
  return request;
}

Result<std::vector<PreparedVenv>> prepare_venvs(const VenvRequest& request, const Cache& cache) {
  std::vector<PreparedVenv> prepared;
  for (const auto& [package, external] : request.venvs) {
    auto base = base_interpreter(external, request.project_dir);
    if (!base) return std::move(base).error();
    auto wheels = ensurepip_wheels(*base);
    if (!wheels) return std::move(wheels).error();
    PreparedVenv venv{.package = package, .base = *std::move(base), .wheels = {}};
    for (const auto& wheel : *wheels) {
      auto name = std::string(text::split(wheel.filename().string(), '-').front());
      if (request.closure.contains(name)) continue;
      auto entry = local_wheel_entry(cache, wheel, name);
      if (!entry) return std::move(entry).error();
      venv.wheels.push_back({.name = std::move(name), .entry = *std::move(entry)});
    }
    prepared.push_back(std::move(venv));
  }
  return prepared;
}

Result<PythonStepOutcome> run_python_step(const PythonStepInput& input) {
  PythonStepOutcome outcome;
  if (auto made = make_venvs(input); !made) return std::move(made).error();
  const auto& packages = input.plan->packages;
  if (std::none_of(packages.begin(), packages.end(),
                   [](const PlannedPackage& p) { return p.name == "python"; }))
    return outcome;
  auto check = check_interpreter(input.root);
  if (!check) return std::move(check).error();
  if (!check->failed_imports.empty()) {
    outcome.warnings.push_back(fmt::format("the prefix's Python {} cannot import {}",
                                           check->version,
                                           text::join(check->failed_imports, ", ")));
  }
  if (auto installed = install_venv_wheels(input, *check); !installed)
    return std::move(installed).error();
  if (auto installed = install_wheels(input, *check); !installed)
    return std::move(installed).error();
  if (auto linked = link_provided(input, check->site_packages); !linked)
    return std::move(linked).error();
  return outcome;
}

}  // namespace envkit::pyenv
