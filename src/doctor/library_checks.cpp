#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "envkit/doctor/prefix_checks.hpp"

namespace envkit::doctor {

namespace {

namespace fs = std::filesystem;

// The driver brings these; a GPU-less machine lacks them and check 1 says so.
bool from_the_driver(std::string_view name) {
  return name.starts_with("libcuda.so") || name.starts_with("libnvidia-ml.so");
}

std::string fix_for_missing(std::string_view name) {
  if (name.starts_with("libz.so")) {
    return "install zlib (cuDNN >= 8.3 loads it): add `zlib` to envkit.yaml and `envkit "
           "install`, or install the system's (`apt-get install zlib1g`)";
  }
  if (from_the_driver(name))
    return "install the NVIDIA driver (it provides " + std::string(name) + ")";
  return "run `envkit install`; if it stays missing, add the CUDA component that provides it to "
         "envkit.yaml (`cuda: {components: [...]}`) and lock again";
}

std::string shown_path(const fs::path& prefix, const fs::path& file) {
  return file.lexically_relative(prefix).generic_string();
}

// The stack's own libraries, which must come from the prefix, not the system.
bool stack_library(std::string_view name) {
  for (const auto* stem : {"libcudart.so", "libcudnn", "libcublas", "libcufft", "libcurand",
                           "libcusolver", "libcusparse", "libnvrtc", "libnvJitLink"}) {
    if (name.starts_with(stem)) return true;
  }
  return false;
}

bool has_library(const fs::path& lib, std::string_view stem) {
  std::error_code error;
  for (const auto& item : fs::directory_iterator(lib, error)) {
    if (item.path().filename().string().starts_with(stem)) return true;
  }
  return false;
}

// The package a CUDA library of the stack belongs to: cudnn or cuda; empty for others.
std::string_view package_of_library(std::string_view name) {
  if (name.starts_with("libcudnn")) return "cudnn";
  return stack_library(name) ? "cuda" : "";
}

const ExternalStack* external_of(std::span<const ExternalStack> externals,
                                 std::string_view library) {
  const auto package = package_of_library(library);
  for (const auto& stack : externals) {
    if (!package.empty() && stack.package == package) return &stack;
  }
  return nullptr;
}

// `envkit install` leaves an external package alone: the fixes are the machine's tree, or
// envkit installing the package instead.
std::string stop_external(const ExternalStack& stack) {
  return fmt::format(
      "remove `{}` from `external:` in envkit.yaml so that `envkit install` locks again and "
      "installs it into the prefix",
      stack.package);
}

std::string external_fix(const ExternalStack& stack) {
  return fmt::format(
      "install {} {} on this machine and name its folder in envkit.yaml (`external: {{{}: "
      "/path/to/it}}`), or {}",
      project::stack_display_name(stack.package), stack.locked.original(), stack.package,
      stop_external(stack));
}

// What the machine's tree lacks of an external stack, in words; nullopt when it holds it.
std::optional<std::string> external_problem(const ExternalStack& stack) {
  const auto name = project::stack_display_name(stack.package);
  const auto& lookup = stack.lookup;
  if (!lookup.root) {
    return fmt::format("this machine has no {} (looked in {})", name,
                       fmt::join(lookup.looked, "; "));
  }
  if (auto against = project::contradiction(stack.locked, lookup.versions)) {
    return fmt::format("the {} at {} is {} ({} says `{}`)", name, lookup.root->string(),
                       against->version.original(), against->file.string(), against->says);
  }
  const bool has_library = std::any_of(lookup.versions.begin(), lookup.versions.end(),
                                       [](const auto& evidence) { return evidence.library; });
  if (stack.package == "cudnn" && !has_library) {
    return fmt::format("{} has cuDNN's headers but no libcudnn.so.* in its library folders",
                       lookup.root->string());
  }
  return std::nullopt;
}

// One finding per external stack: an error naming the tree and what it lacks, or ok.
Findings check_external(std::span<const ExternalStack> externals) {
  Findings findings;
  for (const auto& stack : externals) {
    const auto head = fmt::format(
        "{} {} is external (envkit.lock: the machine provides it, not "
        "the prefix)",
        stack.package, stack.locked.original());
    if (auto problem = external_problem(stack)) {
      findings.push_back(
          error("libraries", fmt::format("{}, but {}", head, *problem), external_fix(stack)));
    } else {
      findings.push_back(ok(
          "libraries", fmt::format("{}: {} at {}", head, project::stack_display_name(stack.package),
                                   stack.lookup.root->string())));
    }
  }
  return findings;
}

// The fix of a library of an external stack the loader cannot find.
std::string fix_for_missing_external(std::string_view name, const ExternalStack& stack) {
  if (auto problem = external_problem(stack))
    return fmt::format("{} is the machine's, but {}: {}", name, *problem, external_fix(stack));
  return fmt::format(
      "{} is the machine's {} ({}): put its library folder where the loader looks "
      "(`LD_LIBRARY_PATH`, or a file in /etc/ld.so.conf.d and `ldconfig`), or {}",
      name, project::stack_display_name(stack.package), stack.lookup.root->string(),
      stop_external(stack));
}

}  // namespace

Findings check_libraries(const fs::path& prefix, const elf::DependencyReport& report,
                         std::span<const std::string> expected,
                         std::span<const ExternalStack> externals) {
  Findings findings;
  const auto lib = prefix / "lib";
  for (const auto& stem : expected) {
    // An external package's library is the machine's tree's (check_external below).
    if (external_of(externals, stem) != nullptr) continue;
    if (!has_library(lib, stem)) {
      findings.push_back(error("libraries",
                               fmt::format("the prefix has no {}* in lib/, though the lock "
                                           "installs it",
                                           stem),
                               "run `envkit install` to repair the prefix"));
    }
  }
  // Missing dependencies, grouped by name: who needs it says where it hurts.
  std::map<std::string, std::vector<std::string>> missing;
  std::map<std::string, std::pair<std::string, std::string>> outside;  // name -> (needed by, path)
  std::set<std::string> from_system;
  for (const auto& dependency : report.dependencies) {
    if (!dependency.resolution.found()) {
      missing[dependency.name].push_back(shown_path(prefix, dependency.needed_by));
    } else if (!dependency.from_prefix) {
      from_system.insert(dependency.name);
      // An external package's libraries come from the machine by design.
      if (stack_library(dependency.name) && external_of(externals, dependency.name) == nullptr) {
        outside.emplace(dependency.name, std::pair{shown_path(prefix, dependency.needed_by),
                                                   dependency.resolution.path->string()});
      }
    }
  }
  for (const auto& [name, needers] : missing) {
    const auto who = needers.size() == 1
                         ? needers.front()
                         : fmt::format("{} and {} more", needers.front(), needers.size() - 1);
    const auto message =
        fmt::format("{}, needed by {}, is neither in the prefix nor on the system", name, who);
    const auto* external = external_of(externals, name);
    const auto fix = external ? fix_for_missing_external(name, *external) : fix_for_missing(name);
    findings.push_back(from_the_driver(name) ? warn("libraries", message, fix)
                                             : error("libraries", message, fix));
  }
  for (const auto& [name, where] : outside) {
    findings.push_back(
        warn("libraries",
             fmt::format("{}, needed by {}, is not in the prefix: it comes from {}", name,
                         where.first, where.second),
             "run `envkit install`; if it stays missing, add the component that provides it to "
             "envkit.yaml and lock again"));
  }
  for (const auto& unreadable : report.unreadable) {
    findings.push_back(
        warn("libraries",
             fmt::format("{} cannot be read: {}", shown_path(prefix, unreadable.path),
                         unreadable.error.message()),
             "run `envkit install` to repair the prefix"));
  }
  if (findings.empty()) {
    findings.push_back(ok(
        "libraries", fmt::format("the {} libraries in lib/ find all {} of their dependencies{}",
                                 report.libraries.size(), report.dependencies.size(),
                                 from_system.empty()
                                     ? std::string()
                                     : fmt::format(" ({} from the system: {})", from_system.size(),
                                                   fmt::join(from_system, ", ")))));
  }
  for (auto& finding : check_external(externals))
    findings.push_back(std::move(finding));
  return findings;
}

}  // namespace envkit::doctor
