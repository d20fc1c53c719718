#include "envkit/locking/external_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <system_error>

#include "envkit/core/text.hpp"
#include "envkit/locking/lock_pipeline.hpp"
#include "envkit/specs/package_name.hpp"
#include "yaml_source.hpp"

namespace envkit::locking {

namespace fs = std::filesystem;

namespace {

// The stacks `external:` can state that the machine's files can contradict.
constexpr std::string_view kStacks[] = {"cuda", "cudnn"};

std::string version_text(const specs::Version& version) {
  return version.original().empty() ? version.to_string() : version.original();
}

// The version a hint tells the user to write: what the tree's most precise file says.
const project::VersionEvidence& most_precise(const std::vector<project::VersionEvidence>& found) {
  return *std::max_element(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return a.version.release().size() < b.version.release().size();
  });
}

struct Hints {
  const StatedStack& stated;
  const WouldLock& would_lock;

  bool locks(const ManifestChange& change) const { return !would_lock || would_lock(change); }

  // The fixes of a stated version the machine does not hold; `found` is what it holds.
  void add(Error& error, const std::optional<specs::Version>& found) const {
    const auto& package = stated.package;
    const auto name = project::stack_display_name(package);
    const auto stated_text = version_text(stated.version);
    bool any = false;
    if (found && locks({package, *found, std::nullopt})) {
      error.hint(fmt::format(
          "if the project works with the machine's {} {}, state that: `external: {{{}: \"{}\"}}` "
          "in {}",
          name, version_text(*found), package, version_text(*found), stated.file));
      any = true;
    }
    if (locks({package, std::nullopt, stated.version})) {
      error.hint(fmt::format(
          "{}let envkit install {} {} into the prefix: remove `{}` from `external:` in {} and "
          "require it instead (`requires: {{{}: \"{}\"}}`)",
          any ? "or " : "", name, stated_text, package, stated.file, package, stated_text));
      any = true;
    } else if (locks({package, std::nullopt, std::nullopt})) {
      error.hint(fmt::format(
          "{}let envkit install a {} that fits the project into the prefix: remove `{}` from "
          "`external:` in {}",
          any ? "or " : "", name, package, stated.file));
      any = true;
    }
    error.hint(fmt::format(
        "{}install {} {} on this machine and name its folder: `external: {{{}: /path/to/it}}`",
        any ? "or " : "", name, stated_text, package));
  }
};

Error missing_tree(const StatedStack& stated, const project::TreeLookup& lookup,
                   const WouldLock& would_lock) {
  const auto name = project::stack_display_name(stated.package);
  Error error = Error::failed(
      stated.named ? fmt::format("`external.{}` names {}, which holds no {}", stated.package,
                                 text::quoted(stated.named->string()), name)
                   : fmt::format("`external.{}` states {} {}, but this machine has no {}",
                                 stated.package, name, version_text(stated.version), name));
  error.at(stated.written);
  error.because(fmt::format("looked in {}", text::join(lookup.looked, "; ")));
  Hints{stated, would_lock}.add(error, std::nullopt);
  return error;
}

Error mismatch(const StatedStack& stated, const project::TreeLookup& lookup,
               const project::VersionEvidence& evidence, const WouldLock& would_lock) {
  const auto name = project::stack_display_name(stated.package);
  const auto& best = most_precise(lookup.versions);
  Error error = Error::failed(fmt::format("`external.{}` states {} {}, but the {} at {} is {}",
                                          stated.package, name, version_text(stated.version), name,
                                          text::quoted(lookup.root->string()),
                                          version_text(evidence.version)));
  error.at(stated.written);
  error.because(fmt::format("{} says {}", evidence.file.string(), text::quoted(evidence.says)));
  if (lookup.found_by != "envkit.yaml") {
    error.because(fmt::format("envkit found that {} through {}", name, lookup.found_by));
  }
  Hints{stated, would_lock}.add(error, best.version);
  return error;
}

// The first place `file` (a YAML document) gives `external.<package>`'s value.
std::optional<SourceLocation> located_in(const yaml::Source& source, const yaml::Node& root,
                                         std::string_view package) {
  const auto* external = root.find("external");
  if (external == nullptr || !external->is_mapping()) return std::nullopt;
  for (std::size_t i = 0; i < external->size(); ++i) {
    const auto& key = external->key(i);
    if (!key.is_scalar()) continue;
    const auto known = specs::known_package(key.text());
    if (known && *known == package) return source.at(external->value(i));
  }
  return std::nullopt;
}

// Where envkit.lock writes the `external:` of `package` for `platform`.
std::optional<SourceLocation> lock_location(const fs::path& lock_path, std::string_view platform,
                                            std::string_view package) {
  auto text = yaml::read_file(lock_path);
  if (!text) return std::nullopt;
  const yaml::Source source(*text, lock_path.string());
  auto root = yaml::load_document(source);
  if (!root || !root->is_mapping()) return std::nullopt;
  const auto* platforms = root->find("platforms");
  if (platforms == nullptr) return std::nullopt;
  for (const auto& entry : *platforms) {
    const auto* name = entry.find("platform");
    const auto* packages = entry.find("packages");
    if (name == nullptr || name->text() != platform || packages == nullptr) continue;
    for (const auto& locked : *packages) {
      const auto* locked_name = locked.find("name");
      const auto* external = locked.find("external");
      if (locked_name != nullptr && locked_name->text() == package && external != nullptr)
        return source.at(*external);
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<SourceLocation> external_value_location(const fs::path& manifest_path,
                                                      std::string_view package) {
  auto text = yaml::read_file(manifest_path);
  if (!text) return std::nullopt;
  const yaml::Source source(*text, manifest_path.string());
  auto root = yaml::load_document(source);
  if (!root || !root->is_mapping()) return std::nullopt;
  return located_in(source, *root, package);
}

Result<void> check_stated_stacks(std::span<const StatedStack> stated,
                                 const project::TreeSearch& search, const WouldLock& would_lock) {
  const auto cuda = std::find_if(stated.begin(), stated.end(),
                                 [](const StatedStack& s) { return s.package == "cuda"; });
  for (const auto& stack : stated) {
    project::TreeSearch where = search;
    where.named = stack.named;
    if (stack.package == "cudnn" && cuda != stated.end()) where.beside = cuda->named;
    const auto lookup = project::find_stack(stack.package, where);
    if (!lookup.root) return missing_tree(stack, lookup, would_lock);
    if (auto against = project::contradiction(stack.version, lookup.versions))
      return mismatch(stack, lookup, *against, would_lock);
  }
  return {};
}

std::vector<StatedStack> stated_stacks(const LockInputs& inputs) {
  const auto& manifest = inputs.manifest;
  const auto& system = manifest.system;
  const bool for_other_machines = system.driver || !system.cuda_arch.empty() || system.glibc;
  const bool for_this_platform = std::find(inputs.platforms.begin(), inputs.platforms.end(),
                                           specs::host_platform()) != inputs.platforms.end();
  if (for_other_machines || !for_this_platform) return {};
  const auto base = inputs.manifest_path.parent_path();
  std::vector<StatedStack> out;
  for (const auto package : kStacks) {
    const auto written = manifest.external.find(std::string(package));
    const auto resolved = inputs.external.find(std::string(package));
    if (written == manifest.external.end() || resolved == inputs.external.end()) continue;
    std::optional<fs::path> named;
    if (const auto* path = std::get_if<manifest::ExternalPath>(&written->second)) {
      named = project::named_tree(package, path->path.string(), base);
    } else if (std::holds_alternative<manifest::ExternalSystem>(written->second)) {
      named = project::named_tree(package, "system", base);
    }
    out.push_back({.package = std::string(package),
                   .version = resolved->second.version,
                   .named = std::move(named),
                   .written = external_value_location(inputs.manifest_path, package)
                                  .value_or(SourceLocation{inputs.manifest_path.string(), 0, 0}),
                   .file = std::string(manifest::kFileName)});
  }
  return out;
}

Result<void> check_external_stacks(const recipes::Database& database, const LockInputs& inputs,
                                   const project::TreeSearch& search) {
  const auto stated = stated_stacks(inputs);
  if (stated.empty()) return {};
  // A hint is printed only when envkit.yaml with it locks (the solver; not the closure).
  const WouldLock would_lock = [&](const ManifestChange& change) {
    LockInputs changed = inputs;
    auto& external = changed.manifest.external;
    if (change.external) {
      external.insert_or_assign(change.package, *change.external);
      changed.external.insert_or_assign(change.package,
                                        solve::External{*change.external, "given in envkit.yaml"});
    } else {
      external.erase(change.package);
      changed.external.erase(change.package);
    }
    if (change.required) {
      changed.manifest.requires_.insert_or_assign(change.package,
                                                  specs::VersionSpec::exactly(*change.required));
    }
    auto solved = solve_platforms(database, changed);
    return solved && !solved->failure;
  };
  return check_stated_stacks(stated, search, would_lock);
}

Result<void> check_external_stacks(const lock::Lockfile& lockfile, const fs::path& project_dir,
                                   const fs::path& prefix, project::TreeSearch search) {
  const auto host = specs::host_platform();
  const auto platform =
      std::find_if(lockfile.platforms.begin(), lockfile.platforms.end(),
                   [&](const lock::PlatformLock& p) { return p.platform == host; });
  if (platform == lockfile.platforms.end()) return {};
  const auto manifest_path = (project_dir / manifest::kFileName).lexically_normal();
  const auto lock_path = (project_dir / lock::kFileName).lexically_normal();
  std::vector<StatedStack> stated;
  for (const auto package : kStacks) {
    const auto locked =
        std::find_if(platform->packages.begin(), platform->packages.end(),
                     [&](const lock::LockedPackage& p) { return p.name == package; });
    if (locked == platform->packages.end() || !locked->external) continue;
    // Where the user changes it: envkit.yaml when it states it, else envkit.lock.
    auto written = external_value_location(manifest_path, package);
    if (!written) written = lock_location(lock_path, specs::to_string(host), package);
    stated.push_back({.package = std::string(package),
                      .version = locked->version,
                      .named = project::named_tree(package, *locked->external, project_dir),
                      .written = written.value_or(SourceLocation{lock_path.string(), 0, 0}),
                      .file = std::string(manifest::kFileName)});
  }
  search.exclude.push_back(prefix);
  return check_stated_stacks(stated, search);
}

}  // namespace envkit::locking
