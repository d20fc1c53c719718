#pragma once

#include <map>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/recipes/database.hpp"

namespace envkit::recipes {

// One inconsistency `envkit recipes check` found: where, and what.
struct Problem {
  std::string where;  // "cuda 12.4.1 cuda_cudart linux-x86_64", "torch 2.1 cu121"
  std::string message;
};

// Checks the whole database: every URL is https (http only with a pinned
// sha256, and then a warning in `warnings` when given: upstream's metadata
// names only an http URL for some files), every sha256 is 64 lowercase
// hex digits, every requirement names a package of the database and matches at
// least one of its versions, no version, build or artifact appears twice, and every
// runfile has its CUDA era's layout and its components (cuda_runfile.hpp). A framework
// build a package index serves (`wheel-index`) may require a CUDA or cuDNN newer than the
// database: NVIDIA's wheels of today's index provide it, so that is a warning.
// Unreadable files are errors; inconsistencies are the returned problems.
[[nodiscard]] Result<std::vector<Problem>> check_database(const Database& db,
                                                          std::vector<Problem>* warnings = nullptr);

// The versions of each package of a database.
using VersionIndex = std::map<std::string, std::vector<specs::Version>>;
[[nodiscard]] VersionIndex index_versions(const std::vector<Recipe>& recipes);

// The requirements of `build` that no version of the database meets, as
// "cuda `<14,>=13.2`". Python is exempt: a machine can provide a Python the
// database lacks (`external: {python: ...}` in the manifest), which is how
// tensorflow-gpu 1.x (Python <= 3.6) stacks are served.
[[nodiscard]] std::vector<std::string> unmet_requirements(const Build& build,
                                                          const VersionIndex& index);

}  // namespace envkit::recipes
