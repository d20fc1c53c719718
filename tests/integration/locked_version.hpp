#pragma once

// What a lock chose for a package, as tests compare it: "2.15.0 cu132", "13.2.2".
#include <string>
#include <string_view>

#include "envkit/lock/lockfile.hpp"

namespace envkit::test {

// The version (and build, after a space) of `name` on the lock's first platform; "" when
// the lock has no such package.
inline std::string locked_version(const lock::Lockfile& lockfile, std::string_view name) {
  for (const auto& package : lockfile.platforms.at(0).packages) {
    if (package.name == name)
      return package.version.original() + (package.build.empty() ? "" : " " + package.build);
  }
  return "";
}

}  // namespace envkit::test
