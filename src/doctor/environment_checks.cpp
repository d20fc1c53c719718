// Checks 4 and 5: what the environment around the prefix would load or run
// instead of the prefix's own CUDA.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <regex>

#include "envkit/core/text.hpp"
#include "envkit/doctor/prefix_checks.hpp"
#include "envkit/elf/loader.hpp"

namespace envkit::doctor {

namespace {

namespace fs = std::filesystem;

bool same_place(const fs::path& a, const fs::path& b) {
  std::error_code error;
  return fs::equivalent(a, b, error);
}

// The CUDA libraries whose two copies must never meet in one process.
bool cuda_library(const std::string& name) {
  return (name.starts_with("libcudart.so.") || name.starts_with("libcudnn") ||
          name.starts_with("libcublas")) &&
         name.find(".so.") != std::string::npos;
}

std::vector<std::string> cuda_libraries_in(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& item : fs::directory_iterator(dir, error)) {
    auto name = item.path().filename().string();
    if (cuda_library(name)) names.push_back(std::move(name));
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<std::string> inherited(const activation::Environment& environment,
                                     const std::string& name) {
  const auto found = environment.find(name);
  if (found == environment.end() || found->second.empty()) return std::nullopt;
  return found->second;
}

// `release 12.4` of the nvcc at `nvcc`, for messages ("" when it does not run).
std::string release_of(const fs::path& nvcc, const NvccVersion& nvcc_version) {
  const auto output = nvcc_version(nvcc);
  if (!output) return "";
  const auto release = parse_nvcc_release(*output);
  return release ? fmt::format(" (release {})", release->original()) : "";
}

std::optional<fs::path> first_nvcc_on(std::string_view path_list) {
  for (const auto& dir : text::split(path_list, ':')) {
    if (dir.empty()) continue;
    const auto candidate = fs::path(dir) / "nvcc";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

// The CUDA runtime's version from its file name (libcudart.so.12.4.127).
std::optional<specs::Version> runtime_version(const fs::path& lib) {
  std::optional<specs::Version> newest;
  std::error_code error;
  const std::string stem = "libcudart.so.";
  for (const auto& item : fs::directory_iterator(lib, error)) {
    const auto name = item.path().filename().string();
    if (!name.starts_with(stem)) continue;
    auto version = specs::Version::parse(name.substr(stem.size()));
    if (version && version->release().size() >= 2 && (!newest || *newest < *version)) {
      newest = *version;
    }
  }
  return newest;
}

bool same_release(const specs::Version& a, const specs::Version& b) {
  return a.major() == b.major() && a.minor() == b.minor();
}

}  // namespace

std::optional<specs::Version> parse_nvcc_release(std::string_view output) {
  static const std::regex kRelease(R"(release (\d+\.\d+), V(\d+(\.\d+)+))");
  std::match_results<std::string_view::const_iterator> match;
  if (!std::regex_search(output.begin(), output.end(), match, kRelease)) return std::nullopt;
  auto version = specs::Version::parse(match[2].str());
  if (!version) return std::nullopt;
  return *version;
}

Findings check_shadowing(const fs::path& prefix, const activation::Environment& environment) {
  Findings findings;
  const auto lib = prefix / "lib";
  const auto ours = cuda_libraries_in(lib);
  bool prefix_listed = false;
  if (const auto list = inherited(environment, "LD_LIBRARY_PATH")) {
    for (const auto& dir : elf::split_ld_library_path(*list)) {
      if (same_place(dir, lib)) {
        prefix_listed = true;
        break;  // what comes after is behind the prefix's
      }
      for (const auto& name : cuda_libraries_in(dir)) {
        if (!std::binary_search(ours.begin(), ours.end(), name)) continue;
        findings.push_back(
            warn("shadowing",
                 fmt::format("LD_LIBRARY_PATH has {} before the prefix's lib/: programs started "
                             "outside `envkit run` load {} instead of the prefix's",
                             dir.string(), (dir / name).string()),
                 fmt::format("start programs with `envkit run` or `envkit shell`, or take {} off "
                             "LD_LIBRARY_PATH",
                             dir.string())));
        break;  // one finding per folder
      }
    }
  }
  // What activation itself would warn of (LD_PRELOAD, sonames the prefix lacks).
  const auto activated = activation::with_changes(
      environment, activation::assignments(prefix, activation::probe(prefix), environment));
  for (const auto& warning : activation::shadowing_warnings(prefix, activated)) {
    findings.push_back(warn("shadowing", warning,
                            "remove it from LD_PRELOAD or LD_LIBRARY_PATH, or install the "
                            "library into the prefix (envkit.yaml, `envkit install`)"));
  }
  if (findings.empty()) {
    findings.push_back(ok("shadowing", prefix_listed
                                           ? "no other libcudart, libcudnn or libcublas comes "
                                             "before the prefix's on LD_LIBRARY_PATH"
                                           : "no other libcudart, libcudnn or libcublas on "
                                             "LD_LIBRARY_PATH or LD_PRELOAD"));
  }
  return findings;
}

Findings check_toolkit(const fs::path& prefix, const activation::Environment& environment,
                       const NvccVersion& nvcc_version) {
  Findings findings;
  const auto nvcc = prefix / "bin" / "nvcc";
  const auto runtime = runtime_version(prefix / "lib");
  std::error_code ec;
  if (fs::exists(nvcc, ec)) {
    const auto output = nvcc_version(nvcc);
    const auto release = output ? parse_nvcc_release(*output) : std::nullopt;
    if (!release) {
      findings.push_back(error("toolkit",
                               fmt::format("the prefix's nvcc ({}) does not run or does not say "
                                           "its release",
                                           nvcc.string()),
                               "run `envkit install` to repair the prefix"));
    } else if (runtime && !same_release(*release, *runtime)) {
      findings.push_back(error(
          "toolkit",
          fmt::format("the prefix's nvcc is release {} but its CUDA runtime (libcudart) is {}: "
                      "programs built here would not match the runtime they load",
                      release->original(), runtime->original()),
          "run `envkit install` (nvcc and libcudart come from one CUDA release)"));
    } else {
      findings.push_back(
          ok("toolkit", fmt::format("nvcc {}{}", release->original(),
                                    runtime ? fmt::format(" and libcudart {} are one release",
                                                          runtime->original())
                                            : std::string())));
    }
  }
  for (const auto* variable : {"CUDA_HOME", "CUDA_PATH"}) {
    const auto value = inherited(environment, variable);
    if (!value || same_place(*value, prefix)) continue;
    findings.push_back(warn(
        "toolkit",
        fmt::format("{}={} points at another CUDA{}: builds started outside `envkit run` "
                    "(CMake, setup.py, torch extensions) use it",
                    variable, *value, release_of(fs::path(*value) / "bin" / "nvcc", nvcc_version)),
        fmt::format("use `envkit run` or `envkit shell` (they set {} to the prefix), or unset it",
                    variable)));
  }
  if (const auto path = inherited(environment, "PATH")) {
    const auto found = first_nvcc_on(*path);
    if (found && !same_place(*found, nvcc)) {
      findings.push_back(
          warn("toolkit",
               fmt::format("PATH finds nvcc at {}{}, not the prefix's: builds started outside "
                           "`envkit run` compile with it",
                           found->string(), release_of(*found, nvcc_version)),
               "use `envkit run` or `envkit shell` (they put the prefix's bin/ first on PATH)"));
    }
  }
  if (findings.empty()) {
    findings.push_back(ok("toolkit",
                          "the prefix has no nvcc, and no other CUDA is on PATH or "
                          "in CUDA_HOME"));
  }
  return findings;
}

}  // namespace envkit::doctor
