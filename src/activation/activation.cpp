#include "envkit/activation/activation.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "envkit/core/env_vars.hpp"
#include "envkit/core/text.hpp"
#include "path_list.hpp"

extern char** environ;

namespace envkit::activation {

namespace fs = std::filesystem;

namespace {

// What execvp searches when PATH is unset (glibc's confstr(_CS_PATH)): the
// prefix's bin/ goes in front of it rather than replacing it, or `envkit run
// sh` would stop working in an environment without PATH.
constexpr std::string_view kDefaultPath = "/bin:/usr/bin";

std::optional<std::string_view> lookup(const Environment& environment, const env::Variable& name) {
  const auto found = environment.find(std::string(name.name));
  if (found == environment.end()) return std::nullopt;
  return found->second;
}

// A list variable: the prefix's folder `sub` first, then what was inherited,
// less the folder of a previously activated prefix (ENVKIT_PREFIX), so
// activating one environment inside another never mixes two CUDAs.
Assignment list(const env::Variable& variable, const fs::path& prefix,
                const std::optional<fs::path>& previous, const fs::path& sub,
                std::optional<std::string_view> inherited) {
  const std::vector<std::string> first = {(prefix / sub).string()};
  std::vector<std::string> drop;
  if (previous) drop.push_back((*previous / sub).string());
  return {.name = std::string(variable.name),
          .value = prepend_list(first, inherited, drop),
          .list = true};
}

Assignment scalar(const env::Variable& variable, std::string value) {
  return {.name = std::string(variable.name), .value = std::move(value)};
}

}  // namespace

PrefixFacts probe(const fs::path& prefix) {
  std::error_code ignored;
  return {.has_python = fs::exists(prefix / "bin" / "python3", ignored)};
}

std::string prepend_list(std::span<const std::string> first,
                         std::optional<std::string_view> existing,
                         std::span<const std::string> drop) {
  std::vector<std::string> seen;
  std::vector<std::string> out;
  const auto add = [&](std::string_view element) {
    if (element.empty()) return;
    auto key = normal_dir(element);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) return;
    seen.push_back(std::move(key));
    out.emplace_back(element);
  };
  for (const auto& element : first)
    add(element);
  for (const auto& element : drop)
    seen.push_back(normal_dir(element));
  if (existing) {
    for (const auto element : text::split(*existing, ':'))
      add(element);
  }
  return text::join(out, ":");
}

std::vector<Assignment> assignments(const fs::path& prefix, const PrefixFacts& facts,
                                    const Environment& inherited) {
  std::optional<fs::path> previous;
  if (auto named = lookup(inherited, env::kEnvkitPrefix); named && !named->empty()) {
    previous = fs::path(*named);
  }
  const auto path = lookup(inherited, env::kPath).value_or(kDefaultPath);
  const auto root = prefix.string();
  std::vector<Assignment> out = {
      scalar(env::kEnvkitPrefix, root),
      list(env::kPath, prefix, previous, "bin", path),
      list(env::kLdLibraryPath, prefix, previous, "lib", lookup(inherited, env::kLdLibraryPath)),
      list(env::kCpath, prefix, previous, "include", lookup(inherited, env::kCpath)),
      list(env::kLibraryPath, prefix, previous, "lib", lookup(inherited, env::kLibraryPath)),
      list(env::kPkgConfigPath, prefix, previous, fs::path("lib") / "pkgconfig",
           lookup(inherited, env::kPkgConfigPath)),
      scalar(env::kCudaHome, root),
      scalar(env::kCudaPath, root),
      scalar(env::kCudaToolkitRoot, root),
  };
  // PYTHONHOME points a Python at another standard library: the prefix's own
  // Python (relocatable, python-build-standalone) must find its own.
  if (facts.has_python) out.push_back({.name = std::string(env::kPythonHome.name)});
  return out;
}

Environment with_changes(Environment environment, std::span<const Assignment> changes) {
  for (const auto& change : changes) {
    if (change.value) {
      environment[change.name] = *change.value;
    } else {
      environment.erase(change.name);
    }
  }
  return environment;
}

Environment current_environment() {
  Environment out;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const auto eq = text.find('=');
    if (eq == std::string_view::npos) continue;
    out.emplace(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
  }
  return out;
}

std::vector<std::string> replaced_values(std::span<const Assignment> changes,
                                         const Environment& inherited) {
  std::vector<std::string> out;
  for (const auto& change : changes) {
    if (change.list) continue;  // lists are extended, not replaced
    const auto found = inherited.find(change.name);
    if (found == inherited.end()) continue;
    if (!change.value) {
      out.push_back(fmt::format("{} ({}) is unset in the environment", change.name,
                                text::quoted(found->second)));
    } else if (normal_dir(found->second) != normal_dir(*change.value)) {
      out.push_back(fmt::format("{} was {}; the environment sets {}", change.name,
                                text::quoted(found->second), text::quoted(*change.value)));
    }
  }
  return out;
}

}  // namespace envkit::activation
