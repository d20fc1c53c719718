#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "envkit/core/error.hpp"
#include "envkit/core/result.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/locking/inputs.hpp"
#include "envkit/project/stack_tree.hpp"
#include "envkit/recipes/database.hpp"

// `external: {cuda: ..., cudnn: ...}` checked against what the machine's CUDA and cuDNN
// really hold (project/stack_tree.hpp), at lock and at install, so that a stated version
// the machine does not have fails there, naming both, rather than at `import`.
namespace envkit::locking {

// An external CUDA or cuDNN as the project states it.
struct StatedStack {
  std::string package;                         // cuda or cudnn
  specs::Version version;                      // what the project says the machine has
  std::optional<std::filesystem::path> named;  // the folder `external:` gives, if it does
  SourceLocation written;                      // where: envkit.yaml:7:9, or envkit.lock
  std::string file;                            // the file hints tell to edit: envkit.yaml
};

// The first stated stack the machine does not hold, as an error (ErrorCode::failed, exit 1)
// placed where it is written: the version stated, the file of the tree that says otherwise
// (or every place looked in when there is no tree), and hints. `would_lock`, when given,
// says whether envkit.yaml with one change locks; a hint is printed only if it does.
// cuDNN is looked for beside the CUDA `external:` names, when it names one.
struct ManifestChange {
  std::string package;
  std::optional<specs::Version> external;  // the new `external:` version; nullopt: removed
  std::optional<specs::Version> required;  // added to `requires:` (exactly this version)
};
using WouldLock = std::function<bool(const ManifestChange&)>;
[[nodiscard]] Result<void> check_stated_stacks(std::span<const StatedStack> stated,
                                               const project::TreeSearch& search,
                                               const WouldLock& would_lock = {});

// What `inputs` (envkit.yaml, read by gather_lock_inputs) states of CUDA and cuDNN, each
// placed at its value in envkit.yaml. Empty unless the lock is for this machine: its
// platform is locked for, and envkit.yaml has no `system:` section (a lock for the
// machines described there is checked where it is installed).
[[nodiscard]] std::vector<StatedStack> stated_stacks(const LockInputs& inputs);

// The check of a lock about to be made: stated_stacks(inputs) against this machine, with
// each hint solved first (the solver alone, without the Python closure).
[[nodiscard]] Result<void> check_external_stacks(const recipes::Database& database,
                                                 const LockInputs& inputs,
                                                 const project::TreeSearch& search);

// The check of a lock about to be installed into `prefix`: its external CUDA and cuDNN
// for this machine's platform against this machine. Placed at envkit.yaml's `external:`
// value in `project_dir` when there is one, else at envkit.lock's.
[[nodiscard]] Result<void> check_external_stacks(const lock::Lockfile& lockfile,
                                                 const std::filesystem::path& project_dir,
                                                 const std::filesystem::path& prefix,
                                                 project::TreeSearch search);

// Where envkit.yaml at `manifest_path` writes `external.<package>`'s value (any spelling
// of the package); nullopt when it does not, or cannot be read.
[[nodiscard]] std::optional<SourceLocation> external_value_location(
    const std::filesystem::path& manifest_path, std::string_view package);

}  // namespace envkit::locking
