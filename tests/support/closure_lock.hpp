#pragma once

// envkit.lock texts for tests of installing a Python closure: the machine's
// python3 as a venv, and the given distributions (served by a test's index)
// as its closure.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "envkit/lock/lockfile.hpp"
#include "support/python_index.hpp"

namespace envkit::test {

// A closure entry for `file`, downloaded from `url`.
inline lock::PythonWheel locked_distribution(const std::string& name, const std::string& version,
                                             const std::filesystem::path& file, std::string url,
                                             lock::Distribution kind = lock::Distribution::wheel) {
  return {.name = name,
          .version = version,
          .kind = kind,
          .url = std::move(url),
          .sha256 = PythonIndex::sha256_of(file),
          .size = std::filesystem::file_size(file),
          .provides = {}};
}

// The lock: python 3.11 as `external: system` and `packages` as its closure.
inline std::string venv_closure_lock(std::vector<lock::PythonWheel> packages) {
  lock::Lockfile lockfile{.manifest_hash = "sha256:" + std::string(64, '0'),
                          .system = {.source = envkit::specs::FactSource::none}};
  lock::PlatformLock platform{.platform = specs::Platform::linux_x86_64};
  platform.packages.push_back(
      {.name = "python", .version = specs::Version::parse("3.11").value(), .external = "system"});
  platform.python = lock::PythonClosure{.inputs = "sha256:" + std::string(64, '1'),
                                        .resolver = "test",
                                        .python = "3.11",
                                        .packages = std::move(packages)};
  lockfile.platforms.push_back(std::move(platform));
  return lock::write(lockfile);
}

}  // namespace envkit::test
