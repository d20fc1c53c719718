#pragma once

// What a user checks of a prefix after anything happened to it (a kill, a failed
// download, a concurrent clean): every file its receipts list has the recorded
// bytes or link target, and all its packages are of one release. Shared by the
// crash tests and the reliability suite; the caller's target links envkit::store.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "envkit/core/sha256.hpp"
#include "envkit/store/records.hpp"
#include "envkit/sys/fs.hpp"
#include "support/redist_fixture.hpp"

namespace envkit::test {

// Why `prefix`/`file.path` is not the file or link `file` records; nullopt when it is.
inline std::optional<std::string> file_problem(const std::filesystem::path& prefix,
                                               const store::FileRecord& file) {
  const auto path = prefix / file.path;
  if (file.type == archive::EntryType::file) {
    auto content = sys::read_file(path);
    if (!content) return path.string() + " is missing";
    if (core::sha256_hex(*content) != file.sha256) return path.string() + " has other bytes";
  } else if (file.type == archive::EntryType::symlink) {
    std::error_code ec;
    if (std::filesystem::read_symlink(path, ec).string() != file.link_target) {
      return path.string() + " does not point at " + file.link_target;
    }
  }
  return std::nullopt;
}

struct GenerationCheck {
  bool installed = false;              // the prefix has a generation at all
  std::set<std::string> releases;      // the versions of its packages
  std::optional<std::string> problem;  // the first file (or record) that is not as recorded

  // One whole generation of one release (the only acceptable state after an install).
  [[nodiscard]] bool whole() const { return installed && !problem && releases.size() == 1; }
  [[nodiscard]] std::string release() const { return whole() ? *releases.begin() : ""; }
};

// `prefix` against its own receipts.
inline GenerationCheck check_generation(const std::filesystem::path& prefix) {
  GenerationCheck check;
  auto state = store::read_state(prefix);
  if (!state) {
    check.problem = "the prefix's state cannot be read: " + state.error().message();
    return check;
  }
  if (!*state) return check;
  check.installed = true;
  for (const auto& package : (*state)->packages) {
    check.releases.insert(package.version);
    for (const auto& file : package.files) {
      check.problem = file_problem(prefix, file);
      if (check.problem) return check;
    }
  }
  return check;
}

// The first file of `reference`'s generation (an install nothing disturbed) that
// `prefix` does not have byte for byte; nullopt when it has them all. Receipts
// alone cannot tell: they record what was unpacked, right or wrong.
inline std::optional<std::string> differs_from(const std::filesystem::path& prefix,
                                               const std::filesystem::path& reference) {
  auto state = store::read_state(reference);
  if (!state || !*state) return "the reference prefix has no generation";
  for (const auto& package : (*state)->packages) {
    for (const auto& file : package.files) {
      if (auto problem = file_problem(prefix, file)) return problem;
    }
  }
  return std::nullopt;
}

// A component of `files` headers (2 KB each), a versioned library with its link
// and, with `blob_bytes`, a file of that many bytes no compressor shrinks (so
// that transfers take a while): two releases of it differ in every file.
inline FixtureComponent release_component(int index, const std::string& release, int files,
                                          std::size_t blob_bytes = 0) {
  const auto name = std::to_string(index);
  FixtureComponent c{.name = "comp" + name, .version = release};
  for (int i = 0; i < files; ++i) {
    c.files.push_back({.path = "include/comp" + name + "/h" + std::to_string(i) + ".h",
                       .content = "// release " + release + " file " + std::to_string(i) + "\n" +
                                  std::string(2000, 'x')});
  }
  c.files.push_back(
      {.path = "lib/libcomp" + name + ".so." + release, .content = "release " + release + "\n"});
  c.files.push_back({.path = "lib/libcomp" + name + ".so",
                     .symlink_target = "libcomp" + name + ".so." + release});
  if (blob_bytes > 0) {
    const auto seed = static_cast<std::uint32_t>(std::hash<std::string>{}(name + release));
    c.files.push_back(
        {.path = "share/comp" + name + "/data.bin", .content = incompressible(blob_bytes, seed)});
  }
  return c;
}

}  // namespace envkit::test
