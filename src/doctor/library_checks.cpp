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

}  // namespace

Findings check_libraries(const fs::path& prefix, const elf::DependencyReport& report,
                         std::span<const std::string> expected) {
  Findings findings;
  const auto lib = prefix / "lib";
  for (const auto& stem : expected) {
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
      if (stack_library(dependency.name)) {
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
    findings.push_back(from_the_driver(name) ? warn("libraries", message, fix_for_missing(name))
                                             : error("libraries", message, fix_for_missing(name)));
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
  return findings;
}

}  // namespace envkit::doctor
