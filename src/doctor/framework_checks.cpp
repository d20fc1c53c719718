// Check 8: what the framework really loads. The prefix's files can all be
// right while `import torch` still takes libcublas from /usr/local/cuda (an
// LD_LIBRARY_PATH, an RPATH, a library the prefix lacks): only the process
// itself knows, so the probe imports the framework and reads its maps.
#include "envkit/doctor/framework_checks.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "envkit/core/text.hpp"
#include "envkit/elf/loader.hpp"
#include "envkit/smoke/build.hpp"

namespace envkit::doctor {

namespace {

namespace fs = std::filesystem;
using Kind = smoke::LibraryProblem::Kind;

constexpr std::string_view kFrameworkId = "framework";
constexpr std::string_view kImportedFrameworks[] = {"torch", "tensorflow", "jax"};

std::optional<std::string> inherited_value(const activation::Environment& environment,
                                           const std::string& name) {
  const auto found = environment.find(name);
  if (found == environment.end() || found->second.empty()) return std::nullopt;
  return found->second;
}

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code error;
  return fs::equivalent(a, b, error);
}

bool on_list(const activation::Environment& environment, const std::string& name,
             const fs::path& dir) {
  const auto list = inherited_value(environment, name);
  if (!list) return false;
  const auto dirs = elf::split_ld_library_path(*list);
  return std::any_of(dirs.begin(), dirs.end(),
                     [&](const fs::path& listed) { return same_file(listed, dir); });
}

bool preloaded(const activation::Environment& environment, const fs::path& file) {
  const auto list = inherited_value(environment, "LD_PRELOAD");
  if (!list) return false;
  for (auto item : text::split(*list, ':')) {
    for (auto word : text::split(item, ' ')) {
      if (!word.empty() && (same_file(fs::path(word), file) || fs::path(word) == file.filename()))
        return true;
    }
  }
  return false;
}

// A library the framework took from outside the prefix: what put it there,
// and what to change so the prefix's is loaded.
std::string outside_fix(const fs::path& file, const fs::path& prefix,
                        const activation::Environment& environment) {
  const auto dir = file.parent_path();
  const auto name = file.filename().string();
  if (preloaded(environment, file)) return fmt::format("remove {} from LD_PRELOAD", name);
  std::error_code ec;
  const bool prefix_has_it = fs::exists(prefix / "lib" / name, ec);
  if (on_list(environment, "LD_LIBRARY_PATH", dir)) {
    return prefix_has_it
               ? fmt::format("take {} off LD_LIBRARY_PATH", dir.string())
               : fmt::format(
                     "the prefix has no lib/{0}, so {1}'s (on LD_LIBRARY_PATH) was "
                     "loaded: lock a stack that brings {0} (`envkit lock`, with the "
                     "framework's CUDA in envkit.yaml) and `envkit install`, and take {1} "
                     "off LD_LIBRARY_PATH",
                     name, dir.string());
  }
  if (!prefix_has_it) {
    return fmt::format(
        "the prefix has no lib/{}, so the loader took the machine's: lock a stack "
        "that brings it (`envkit lock`, with the framework's CUDA in envkit.yaml) "
        "and `envkit install`",
        name);
  }
  return fmt::format(
      "something names {0} ahead of the prefix (an RPATH, CUDA_HOME in a "
      "script, /etc/ld.so.conf.d): find it with `LD_DEBUG=libs envkit run python3 "
      "-c 'import <framework>' 2>&1 | grep {1}` and take {0} out of it",
      dir.string(), name);
}

// Whether the report has `path` as a library loaded from the prefix.
bool loaded_from_prefix(const smoke::LibraryReport& report, const fs::path& path) {
  return std::any_of(report.libraries.begin(), report.libraries.end(),
                     [&](const smoke::LoadedLibrary& library) {
                       return library.path == path && library.in_prefix;
                     });
}

std::string fix_for(const smoke::LibraryProblem& problem, const smoke::FrameworkResult& result,
                    const fs::path& prefix, const activation::Environment& environment) {
  const auto& framework = result.framework;
  switch (problem.kind) {
    case Kind::outside_prefix:
      return outside_fix(problem.path, prefix, environment);
    case Kind::duplicate:  // the path is the copy from outside, if one is
      if (!loaded_from_prefix(result.libraries, problem.path)) {
        return outside_fix(problem.path, prefix, environment);
      }
      return "keep one copy: doctor's cuda-duplicate-library finding names the package each "
             "comes from; take the other out of envkit.yaml and `envkit install`";
    case Kind::version:
      return "lock the framework and CUDA together again (`envkit lock`, then `envkit install`): "
             "the lock takes the CUDA and cuDNN the framework's build needs";
    case Kind::driver_stub:
      return fmt::format(
          "take {} off LD_LIBRARY_PATH (the stub is for linking only); the real "
          "libcuda.so.1 comes with the NVIDIA driver",
          problem.path.parent_path().string());
    case Kind::framework_outside:
      if (inherited_value(environment, "PYTHONPATH")) {
        return fmt::format("unset PYTHONPATH, which puts {}'s folder ahead of the prefix",
                           problem.path.parent_path().parent_path().string());
      }
      return fmt::format(
          "set PYTHONNOUSERSITE=1, or `pip uninstall --user {}` (a user "
          "site-packages comes before the prefix's)",
          framework);
  }
  return {};
}

// `import X` failed: a library it needs is missing, or something else.
Finding import_failed(const smoke::FrameworkResult& result) {
  const auto& reason = result.reason;
  const auto what = result.framework.empty() ? std::string("the framework") : result.framework;
  if (reason.find("cannot open shared object file") != std::string::npos) {
    return error(std::string(kFrameworkId),
                 fmt::format("importing {} with the prefix's Python fails: {}", what, reason),
                 "the prefix lacks a library the framework was built against: lock the "
                 "framework with its CUDA (`envkit lock`, which takes the CUDA and cuDNN its "
                 "build needs) and `envkit install`");
  }
  return error(std::string(kFrameworkId),
               fmt::format("importing {} with the prefix's Python fails: {}", what, reason),
               "`envkit smoke --framework -v` shows the whole error; `envkit install` again "
               "if the prefix was changed by hand");
}

}  // namespace

std::optional<std::string> installed_framework(const fs::path& prefix) {
  std::error_code error;
  for (fs::directory_iterator it(prefix / "lib", error), end; !error && it != end;
       it.increment(error)) {
    if (!it->path().filename().string().starts_with("python")) continue;
    for (const auto name : kImportedFrameworks) {
      std::error_code ec;
      if (fs::is_directory(it->path() / "site-packages" / name, ec)) return std::string(name);
    }
  }
  return std::nullopt;
}

Findings framework_findings(const smoke::FrameworkResult& result, const fs::path& prefix,
                            const activation::Environment& environment) {
  const auto& problems = result.libraries.problems;
  if (result.status == "fail" && problems.empty()) return {import_failed(result)};
  if (result.framework.empty()) {
    return {ok(std::string(kFrameworkId),
               "the framework's libraries were not checked: " + result.reason)};
  }
  Findings findings;
  for (const auto& problem : problems) {
    findings.push_back(
        error(std::string(kFrameworkId),
              fmt::format("{} in the prefix's environment: {}", result.framework, problem.message),
              fix_for(problem, result, prefix, environment)));
  }
  if (findings.empty()) {
    findings.push_back(ok(std::string(kFrameworkId),
                          fmt::format("{} loads {} CUDA libraries, each the prefix's (libcuda the "
                                      "driver's), one copy each",
                                      result.framework, result.libraries.libraries.size())));
  }
  return findings;
}

Findings check_framework(const fs::path& prefix, const smoke::LockedStack& locked,
                         const activation::Environment& environment, std::chrono::seconds timeout) {
  const auto framework = installed_framework(prefix);
  if (!framework) return {};
  std::error_code ec;
  if (!fs::exists(prefix / "bin" / "python3", ec)) {
    return {ok(std::string(kFrameworkId),
               fmt::format("{} is in the prefix, but the prefix has no Python of its own to "
                           "import it with: its CUDA libraries were not checked",
                           *framework))};
  }
  std::map<std::string, std::optional<std::string>> changes;
  for (auto& change : activation::assignments(prefix, activation::probe(prefix), environment)) {
    changes[change.name] = change.value;
  }
  const auto result =
      smoke::run_framework_smoke({.prefix = prefix,
                                  .script = smoke::sources_dir() / "framework_smoke.py",
                                  .libraries_only = true,
                                  .locked = locked,
                                  .environment = changes,
                                  .timeout = timeout});
  return framework_findings(result, prefix, environment);
}

}  // namespace envkit::doctor
