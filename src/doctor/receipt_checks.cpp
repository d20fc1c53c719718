// Check 6: the prefix against the lock and against its own receipts.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/doctor/prefix_checks.hpp"

namespace envkit::doctor {

namespace {

namespace fs = std::filesystem;
using archive::EntryType;

// How a file differs from its receipt; nullopt when it does not.
std::optional<std::string_view> difference(const fs::path& root, const store::FileRecord& record) {
  const auto path = root / record.path;
  std::error_code ec;
  const auto status = fs::symlink_status(path, ec);
  if (!fs::exists(status)) return "missing";
  switch (record.type) {
    case EntryType::directory:
      return fs::is_directory(status) ? std::nullopt : std::optional<std::string_view>("replaced");
    case EntryType::symlink: {
      if (!fs::is_symlink(status)) return "replaced";
      return fs::read_symlink(path, ec).string() == record.link_target
                 ? std::nullopt
                 : std::optional<std::string_view>("repointed");
    }
    case EntryType::file: {
      if (!fs::is_regular_file(status)) return "replaced";
      if (fs::file_size(path, ec) != record.size) return "modified";
      const auto sha = core::sha256_file(path);
      if (!sha) return "unreadable";
      return *sha == record.sha256 ? std::nullopt : std::optional<std::string_view>("modified");
    }
  }
  return std::nullopt;
}

// Lock packages envkit cannot install: a framework without a Python closure
// for this platform, a runfile locked without its layout. Their absence is expected.
bool installable(const lock::LockedPackage& package) {
  return std::any_of(package.artifacts.begin(), package.artifacts.end(), specs::unpackable);
}

void compare_with_lock(const store::PrefixState& state, const lock::PlatformLock& locked,
                       Findings& findings) {
  std::map<std::string, const store::PackageReceipt*> receipts;
  for (const auto& receipt : state.packages)
    receipts[receipt.name] = &receipt;
  std::set<std::string> in_closure;
  if (locked.python) {
    for (const auto& wheel : locked.python->packages) {
      in_closure.insert(wheel.name);
      const auto found = receipts.find(wheel.name);
      if (found == receipts.end()) {
        findings.push_back(
            error("prefix",
                  fmt::format("the lock has the Python package {} {} but the prefix does not",
                              wheel.name, wheel.version),
                  "run `envkit install`"));
        continue;
      }
      if (found->second->version != wheel.version) {
        findings.push_back(error("prefix",
                                 fmt::format("the lock has {} {} but the prefix has {}", wheel.name,
                                             wheel.version, found->second->version),
                                 "run `envkit install`"));
      }
      receipts.erase(found);
    }
  }
  for (const auto& package : locked.packages) {
    const auto wanted = package.version.original();
    const auto found = receipts.find(package.name);
    // The machine's Python made into a venv has a receipt; other externals do not.
    if (package.external && found == receipts.end()) continue;
    // A framework is its closure's wheel, checked above.
    if (in_closure.contains(package.name)) continue;
    if (found == receipts.end()) {
      if (!installable(package)) {
        findings.push_back(warn("prefix",
                                fmt::format("the lock has {} {}, which envkit cannot install "
                                            "here (no Python closure for this platform, or "
                                            "a runfile locked without its layout)",
                                            package.name, wanted),
                                "run `envkit lock` on a machine of this platform, or install it "
                                "yourself"));
      } else {
        findings.push_back(
            error("prefix",
                  fmt::format("the lock has {} {} but the prefix does not", package.name, wanted),
                  "run `envkit install`"));
      }
      continue;
    }
    const auto& receipt = *found->second;
    // A venv's build and a machine's stand-in's name the machine's interpreter or library.
    const bool names_machine = receipt.packaging == "venv" || receipt.packaging == "machine";
    const auto build = names_machine ? std::string() : receipt.build;
    if (receipt.version != wanted || build != (package.external ? "" : package.build)) {
      findings.push_back(error("prefix",
                               fmt::format("the lock has {} {} but the prefix has {}", package.name,
                                           wanted, receipt.version),
                               "run `envkit install`"));
    }
    receipts.erase(found);
  }
  for (const auto& [name, receipt] : receipts) {
    findings.push_back(warn(
        "prefix",
        fmt::format("the prefix has {} {}, which the lock no longer has", name, receipt->version),
        "run `envkit install` to remove it"));
  }
}

// "a, b, c and 2 more": the first few of a list, and how many were left out.
std::string first_few(std::vector<std::string> items) {
  constexpr std::size_t kShown = 5;
  const auto more = items.size() > kShown ? items.size() - kShown : 0;
  items.resize(std::min(items.size(), kShown));
  return fmt::format("{}{}", fmt::join(items, ", "), more ? fmt::format(" and {} more", more) : "");
}

}  // namespace

Findings check_cache_entries(const store::PrefixState& state, const store::Cache& cache) {
  Findings findings;
  for (const auto& receipt : state.packages) {
    std::vector<std::string> changed;
    for (const auto& artifact : receipt.artifacts) {
      if (artifact.entry.empty()) continue;
      auto record = cache.find(artifact.entry);
      if (!record || !*record) continue;  // cleaned since: the prefix does not need it
      for (auto& file : cache.changed_files(**record))
        changed.push_back(std::move(file));
    }
    if (changed.empty()) continue;
    const auto count = changed.size();
    findings.push_back(error(
        "cache",
        fmt::format("{} file{} of {} {} changed in the cache since envkit unpacked {} (written "
                    "through a hard link into a prefix?): {}",
                    count, count == 1 ? "" : "s", receipt.name, receipt.version,
                    count == 1 ? "it" : "them", first_few(std::move(changed))),
        "run `envkit install --reinstall`: it unpacks the entry again and relinks the prefix; "
        "`envkit cache verify` hashes every entry"));
  }
  return findings;
}

Findings check_prefix(const fs::path& prefix, const std::optional<store::PrefixState>& state,
                      const std::optional<lock::PlatformLock>& locked) {
  if (!state) {
    return {error("prefix",
                  fmt::format("nothing is installed in {}", text::quoted(prefix.string())),
                  "run `envkit install`")};
  }
  Findings findings;
  if (locked) {
    compare_with_lock(*state, *locked, findings);
  } else {
    findings.push_back(warn("prefix", "the project has no envkit.lock to compare the prefix with",
                            "run `envkit lock`"));
  }
  std::size_t files = 0;
  for (const auto& receipt : state->packages) {
    std::vector<std::string> changed;
    for (const auto& record : receipt.files) {
      ++files;
      if (const auto how = difference(prefix, record)) {
        changed.push_back(fmt::format("{} ({})", record.path, *how));
      }
    }
    if (changed.empty()) continue;
    const auto count = changed.size();
    findings.push_back(
        error("prefix",
              fmt::format("{} file{} of {} {} differ{} from what envkit installed: {}", count,
                          count == 1 ? "" : "s", receipt.name, receipt.version,
                          count == 1 ? "s" : "", first_few(std::move(changed))),
              "run `envkit install --reinstall` to put them back from the cache (a cache entry "
              "changed through a hard link is unpacked again)"));
  }
  if (findings.empty() || std::all_of(findings.begin(), findings.end(), [](const Finding& f) {
        return f.severity == Severity::ok;
      })) {
    findings.push_back(
        ok("prefix", fmt::format("{} package{} and their {} files match {}", state->packages.size(),
                                 state->packages.size() == 1 ? "" : "s", files,
                                 locked ? "the lock and the receipts" : "the receipts")));
  }
  return findings;
}

}  // namespace envkit::doctor
