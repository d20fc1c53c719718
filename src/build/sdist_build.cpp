#include "envkit/build/sdist_build.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "envkit/archive/extract.hpp"
#include "envkit/build/source_build.hpp"
#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/store/fs_error.hpp"
#include "envkit/store/wheel_entry.hpp"

namespace envkit::build {

// This module builds on the store: its cache, records, links and generations.
using namespace store;

namespace fs = std::filesystem;

namespace {

// What pip prints when a build lacks a package the closure should bring.
struct MissingBuildPackage {
  std::string_view printed;
  std::string_view package;
};
constexpr MissingBuildPackage kMissingBuildPackages[] = {
    {"No module named 'setuptools'", "setuptools"},
    {"invalid command 'bdist_wheel'", "wheel"},  // setuptools before 70.1 without `wheel`
    {"No module named 'wheel'", "wheel"},
};

// setuptools 82 dropped `pkg_resources`, which old setup.py files import (albumentations
// 0.4.3, mmcv 2.2.0): the environment's setuptools is newer than the project's era.
constexpr std::string_view kNoPkgResources = "No module named 'pkg_resources'";

// A build that imports the framework (mmcv's setup.py imports torch) where the environment
// has none; the closure's framework is installed before its sdists are built.
constexpr std::string_view kFrameworkModules[] = {"torch", "tensorflow", "jax"};

// Says which build package the environment lacked, when pip's output shows it.
Error name_missing_package(Error error, std::string_view log, const SdistContext& context) {
  if (log.find(kNoPkgResources) != std::string_view::npos) {
    error.because(fmt::format(
        "the build imports `pkg_resources`, which setuptools 82 and later no longer have{}",
        context.closure.contains("setuptools") ? ": the lock's Python closure has such a setuptools"
                                               : ""));
    return error.hint(
        "add `setuptools<82` to the project's Python requirements (`python-requirements:`), "
        "then run `envkit lock` and `envkit install`");
  }
  for (const auto module : kFrameworkModules) {
    if (log.find(fmt::format("No module named '{}'", module)) == std::string_view::npos) continue;
    const bool in_closure = context.closure.contains(std::string(module));
    error.because(fmt::format(
        "the build imports {}, which the environment's Python cannot "
        "import{}",
        text::quoted(module), in_closure ? "" : ": the lock's Python closure does not have it"));
    return error.hint(
        fmt::format("build it with the framework: add {} to the project's Python requirements (or "
                    "`framework:` in envkit.yaml), then run `envkit lock` and `envkit install`",
                    text::quoted(module)));
  }
  for (const auto& [printed, package] : kMissingBuildPackages) {
    if (log.find(printed) == std::string_view::npos) continue;
    const bool in_closure = context.closure.contains(std::string(package));
    error.because(fmt::format("the build needs {}, which the environment's Python cannot import{}",
                              text::quoted(package),
                              in_closure ? "" : ": the lock's Python closure does not have it"));
    return error.hint(fmt::format(
        "add {} to the project's Python requirements (`python-requirements:`), then run "
        "`envkit lock` and `envkit install`",
        text::quoted(package)));
  }
  return error;
}

// The one wheel pip wrote into `folder`.
Result<fs::path> written_wheel(const fs::path& folder, const SdistBuild& build) {
  std::vector<fs::path> wheels;
  std::error_code error;
  for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    if (it->path().extension() == ".whl") wheels.push_back(it->path());
  }
  if (wheels.size() == 1) return wheels.front();
  return Error::failed(fmt::format("cannot build {} from source: `pip wheel` wrote {} wheels",
                                   build.label, wheels.size()))
      .hint(fmt::format("the whole log: {}", build.log.string()));
}

}  // namespace

Result<fs::path> build_sdist(const SdistBuild& build) {
  const auto& context = build.context;
  BuildLog log{.path = build.log, .text = {}};
  auto started = start_build_log(
      log, fmt::format("# envkit: building a wheel of {} from its source distribution\n"
                       "# sdist: {}\n# python: {} ({})\n",
                       build.label, build.sdist.string(), context.python.string(),
                       context.python_version));
  if (!started) return std::move(started).error();
  std::error_code error;
  fs::create_directories(build.out, error);
  if (error) return cannot("create", build.out, error);
  const BuildStep step{.name = "pip wheel",
                       .argv = {context.python.string(), "-I", "-m", "pip", "wheel", "--no-deps",
                                "--no-build-isolation", "--no-index", "--no-cache-dir",
                                "--disable-pip-version-check", "--no-input", "-w",
                                build.out.string(), build.sdist.string()},
                       .cwd = build.out,
                       // pip's configuration files could send it elsewhere (an index, --user).
                       .env = {{"PIP_CONFIG_FILE", "/dev/null"}}};
  if (auto ran = run_build_step(step, build.label, build.timeout, log); !ran) {
    return name_missing_package(std::move(ran).error(), log.text, context)
        .hint("the prefix keeps its previous generation");
  }
  return written_wheel(build.out, build);
}

Result<EntryRecord> sdist_wheel_entry(const Cache& cache, const std::string& name,
                                      const std::string& version, const EntryRecord& sdist,
                                      const SdistContext& context) {
  const auto id = Cache::sdist_wheel_id(sdist.sha256, context.python_version);
  auto found = cache.find(id);
  if (!found) return std::move(found).error();
  if (*found) return **std::move(found);
  // Another envkit may be building the same wheel: wait for it, then look again.
  auto lock = cache.lock_entry(id);
  if (!lock) return std::move(lock).error();
  found = cache.find(id);
  if (!found) return std::move(found).error();
  if (*found) return **std::move(found);

  // Beside the entry's staging folder (the cache's tmp/: leftovers are cleaned).
  auto staging = cache.fresh_staging(id);
  if (!staging) return std::move(staging).error();
  const fs::path out = staging->string() + ".wheel";
  const auto discard_out = [&] {
    std::error_code ignored;
    fs::remove_all(out, ignored);
  };
  discard_out();
  auto wheel = build_sdist({.label = fmt::format("{} {}", name, version),
                            .sdist = cache.entry_dir(sdist.id) / sdist.files.front().path,
                            .out = out,
                            .log = cache.build_log(id),
                            .context = context});
  if (!wheel) {
    discard_out();
    return std::move(wheel).error();
  }
  // Unpacked as a downloaded wheel is: the install places its files.
  auto record = commit_unpacked_wheel(
      cache, *wheel,
      {.id = id, .url = sdist.url, .package = name, .component = name, .layout = "none"});
  discard_out();
  return record;
}

}  // namespace envkit::build
