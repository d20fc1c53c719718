#pragma once

// Internal to store: the Python step of building a generation, after the
// archives and wheels envkit unpacks itself are placed: the venv (when the
// machine's Python is used), the interpreter check, the closure's new wheels
// placed from their unpacked cache entries (wheel_install.hpp), its sdists
// built into wheels by that Python and placed the same way, bytecode if asked,
// and the prefix view of NVIDIA wheels.

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/store/cache.hpp"
#include "envkit/store/plan.hpp"
#include "envkit/store/records.hpp"
#include "generation_builder.hpp"

namespace envkit::store {

struct PythonStepInput {
  std::filesystem::path root;         // the generation being built
  std::filesystem::path prefix;       // the prefix's own path (a link to the generation)
  std::filesystem::path project_dir;  // relative `external:` paths start here
  const InstallPlan* plan = nullptr;
  const Cache* cache = nullptr;
  // Cache entries of the packages filled for this install, by package.
  const std::map<std::string, std::vector<EntryRecord>>* entries = nullptr;
  // Receipts of everything placed so far, by package; the step adds its own
  // and completes those with provided artifacts.
  std::map<std::string, PackageReceipt>* receipts = nullptr;
  // Places the closure's files, with the conflict checks of every other package.
  GenerationBuilder* builder = nullptr;
  // `envkit install --compile-bytecode`: the new packages' .pyc, in their receipts.
  bool compile_bytecode = false;
  // Progress lines: each source build, bytecode (may be empty).
  std::function<void(const std::string&)> note;
};

struct PythonStepOutcome {
  std::vector<std::string> warnings;  // imports that failed
};

[[nodiscard]] bool needs_python_step(const InstallPlan& plan);
[[nodiscard]] Result<PythonStepOutcome> run_python_step(const PythonStepInput& input);

}  // namespace envkit::store
