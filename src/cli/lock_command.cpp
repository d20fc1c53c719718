// `envkit lock`: solves envkit.yaml against the recipe database and the
// machines' facts and writes envkit.lock; `--check` says whether it is current.
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "envkit/core/text.hpp"
#include "envkit/sys/fs.hpp"
#include "locking.hpp"

namespace envkit::cli {

namespace {

namespace fs = std::filesystem;

struct LockOptions {
  std::vector<std::string> platforms;
  bool check = false;
  IndexFlags index;
};

nlohmann::json lock_json(const lock::Lockfile& lockfile) {
  nlohmann::json platforms = nlohmann::json::array();
  nlohmann::json packages = nlohmann::json::array();
  for (const auto& platform : lockfile.platforms) {
    platforms.push_back(specs::to_string(platform.platform));
    for (const auto& package : platform.packages) {
      nlohmann::json artifacts = nlohmann::json::array();
      for (const auto& artifact : package.artifacts) {
        nlohmann::json item = {
            {"url", artifact.url},
            {"sha256", artifact.sha256},
            {"size", artifact.size ? nlohmann::json(*artifact.size) : nlohmann::json()},
            {"component", artifact.component},
            {"kind", recipes::to_string(artifact.kind)}};
        if (!artifact.also_at.empty()) item["also_at"] = artifact.also_at;
        artifacts.push_back(std::move(item));
      }
      nlohmann::json entry = {{"name", package.name},
                              {"version", package.version.original()},
                              {"platform", specs::to_string(platform.platform)},
                              {"build", package.build},
                              {"artifacts", artifacts}};
      if (package.external) entry["external"] = *package.external;
      packages.push_back(std::move(entry));
    }
  }
  return {{"platforms", platforms}, {"packages", packages}};
}

// "cuda 12.1.1, cudnn 9.1.0.70 (cuda12), python 3.12.14, ...; 23 Python packages, resolved by uv
// ..."
std::string summary(const lock::PlatformLock& platform) {
  std::vector<std::string> parts;
  for (const auto& package : platform.packages) {
    auto part = fmt::format("{} {}", package.name, package.version.original());
    if (!package.build.empty()) part += fmt::format(" ({})", package.build);
    if (package.external) part += " (provided by the machine)";
    parts.push_back(std::move(part));
  }
  auto line = parts.empty() ? std::string("no packages (envkit.yaml requires none)")
                            : text::join(parts, ", ");
  if (const auto& closure = platform.python) {
    std::size_t sdists = 0;
    for (const auto& package : closure->packages)
      sdists += package.kind == lock::Distribution::sdist ? 1 : 0;
    line += fmt::format("; {} Python packages{}, resolved by {}", closure->packages.size(),
                        sdists > 0 ? fmt::format(" ({} sdists to build)", sdists) : "",
                        closure->resolver);
    // What decided the source builds (python.md, "Source builds in the project's era").
    if (!closure->build_as_of.empty())
      line += fmt::format("; build tools as of {}", closure->build_as_of);
    if (!closure->built_with_framework.empty()) {
      line += fmt::format("; {} built with the framework in the build environment",
                          text::join(closure->built_with_framework, ", "));
    }
  }
  return line;
}

// Re-solving the current inputs must give the lock's exact bytes.
std::vector<std::string> differences(const lock::Lockfile& before, const lock::Lockfile& after) {
  std::vector<std::string> out;
  const auto index = [](const lock::Lockfile& lockfile) {
    std::map<std::pair<std::string, std::string>, std::string> versions;
    for (const auto& platform : lockfile.platforms) {
      for (const auto& package : platform.packages) {
        versions[{std::string(specs::to_string(platform.platform)), package.name}] =
            package.version.original() + (package.build.empty() ? "" : " (" + package.build + ")");
      }
    }
    return versions;
  };
  const auto old_versions = index(before);
  const auto new_versions = index(after);
  for (const auto& [key, version] : new_versions) {
    const auto it = old_versions.find(key);
    if (it == old_versions.end()) {
      out.push_back(fmt::format("{} on {} would be added ({})", key.second, key.first, version));
    } else if (it->second != version) {
      out.push_back(fmt::format("{} on {} would change from {} to {}", key.second, key.first,
                                it->second, version));
    }
  }
  for (const auto& [key, version] : old_versions) {
    if (!new_versions.contains(key)) {
      out.push_back(fmt::format("{} on {} would be removed", key.second, key.first));
    }
  }
  if (out.empty()) out.push_back("re-solving writes different bytes (artifacts or facts changed)");
  return out;
}

int up_to_date(const Context& context, const fs::path& lock_path) {
  context.console.info(fmt::format("{} is up to date", lock_path.string()));
  if (context.options.json) std::cout << nlohmann::json{{"up_to_date", true}}.dump() << '\n';
  return 0;
}

int run_lock(Context& context, const LockOptions& options) {
  auto platforms = parse_platform_flags(options.platforms);
  if (!platforms) return report(context, platforms.error());
  auto project = open_project(context, *platforms, options.index);
  if (!project) return report(context, project.error());
  const auto& database = project->database;
  const auto& inputs = project->inputs;
  for (const auto& warning : inputs.warnings)
    context.console.warn(warning);
  const auto lock_path = (context.options.directory / lock::kFileName).lexically_normal();

  auto existing = locking::read_lock(lock_path);
  if (!existing) return report(context, existing.error());
  if (options.check) {
    if (!*existing) {
      return report(context, Error::failed(fmt::format("{} does not exist", lock_path.string()))
                                 .hint("run `envkit lock` to write it"));
    }
    auto staleness = locking::lock_staleness(database, inputs, **existing);
    if (!staleness) return report(context, staleness.error());
    if (staleness->stale()) {
      return report(context, locking::out_of_date(lock_path, staleness->reasons)
                                 .hint("run `envkit lock` to update it"));
    }
    // Solved with a machine's facts: another machine would solve differently,
    // yet the lock is current wherever its inputs are (install checks the machine).
    if ((*existing)->system.source != specs::FactSource::manifest)
      return up_to_date(context, lock_path);
  }

  // The previous lock lends its Python closures where their inputs did not change.
  const auto* previous = *existing ? &**existing : nullptr;
  const auto resolver = closure_resolver(context, inputs);
  auto attempt = options.check ? locking::solve_lock(database, inputs, previous, resolver)
                               : locking::relock(database, inputs, previous, resolver, lock_path);
  if (!attempt) return report(context, attempt.error());
  if (attempt->failure) {
    return report_unsolvable(context, attempt->failure->first, attempt->failure->second);
  }
  for (const auto& warning : attempt->warnings)
    context.console.warn(warning);
  for (const auto& note : attempt->notes)
    context.console.info("note: " + note);
  const auto& lockfile = attempt->lockfile;
  // What the lock took from this machine because it cannot download it, and why.
  if (!options.check && lockfile) {
    for (const auto& note : locking::obtainable_notes(inputs, *lockfile))
      context.console.info("note: " + note);
  }

  if (options.check) {
    if (lock::write(**existing) != lock::write(*lockfile)) {
      return report(context, locking::out_of_date(lock_path, differences(**existing, *lockfile))
                                 .hint("run `envkit lock` to update it"));
    }
    return up_to_date(context, lock_path);
  }
  for (const auto& platform : lockfile->platforms) {
    context.console.info(
        fmt::format("locked {}: {}", specs::to_string(platform.platform), summary(platform)));
  }
  // After choosing: what `envkit install` could not download here, with the fixes.
  if (auto unreachable = locking::unreachable_sources(*lockfile, project->machine))
    context.console.warn(*unreachable);
  if (context.options.json) std::cout << lock_json(*lockfile).dump() << '\n';
  return 0;
}

}  // namespace

void register_lock(CLI::App& root, Commands& out) {
  auto options = std::make_shared<LockOptions>();
  auto* command = root.add_subcommand(
      "lock",
      "Solve envkit.yaml against the recipe database and the machines' facts, and write "
      "envkit.lock");
  command
      ->add_option("--platform", options->platforms,
                   "Lock for this platform (repeatable; default: the manifest's platforms)")
      ->option_text("P");
  command->add_flag("--check", options->check,
                    "Write nothing; exit 1 if envkit.lock is missing or out of date");
  add_index_flags(*command, options->index);
  out.push_back({command, [options](Context& context) { return run_lock(context, *options); }});
}

}  // namespace envkit::cli
