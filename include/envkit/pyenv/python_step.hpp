#pragma once

// The pyenv module: the Python step of building a generation, after the
// archives and wheels envkit unpacks itself are placed: the venv (when the
// machine's Python is used), the interpreter check, the closure's new wheels
// placed from their unpacked cache entries (wheel_install.hpp), its sdists
// built into wheels by that Python and placed the same way, bytecode if asked,
// and the prefix view of NVIDIA wheels.

#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/store/cache.hpp"
#include "envkit/store/generation_builder.hpp"
#include "envkit/store/plan.hpp"
#include "envkit/store/records.hpp"

namespace envkit::pyenv {

// What the Python step needs that no download does, prepared while the fill
// downloads: each new venv's interpreter, and ensurepip's wheels (the pip a
// venv would get) unpacked into the cache.
struct PreparedVenv {
  std::string package;         // the venv's package (`python`)
  std::filesystem::path base;  // the machine's interpreter it is made from
  struct Wheel {
    std::string name;  // pip, setuptools
    store::EntryRecord entry;
  };
  std::vector<Wheel> wheels;  // less those the closure brings itself (its pip wins)
};

// The plan's part that preparing reads, copied: the fill may change the plan
// (a package falling back to its other packaging) while the venvs are prepared.
struct VenvRequest {
  std::vector<std::pair<std::string, std::string>> venvs;  // package, `external:`
  std::set<std::string> closure;                           // the closure's package names
  std::filesystem::path project_dir;
};
[[nodiscard]] VenvRequest venv_request(const store::InstallPlan& plan,
                                       const std::filesystem::path& project_dir);
[[nodiscard]] Result<std::vector<PreparedVenv>> prepare_venvs(const VenvRequest& request,
                                                              const store::Cache& cache);

struct PythonStepInput {
  std::filesystem::path root;         // the generation being built
  std::filesystem::path prefix;       // the prefix's own path (a link to the generation)
  std::filesystem::path project_dir;  // relative `external:` paths start here
  const store::InstallPlan* plan = nullptr;
  const store::Cache* cache = nullptr;
  // prepare_venvs's, for the plan's new venvs.
  const std::vector<PreparedVenv>* venvs = nullptr;
  // Cache entries of the packages filled for this install, by package.
  const std::map<std::string, std::vector<store::EntryRecord>>* entries = nullptr;
  // Receipts of everything placed so far, by package; the step adds its own
  // and completes those with provided artifacts.
  std::map<std::string, store::PackageReceipt>* receipts = nullptr;
  // Places the closure's files, with the conflict checks of every other package.
  store::GenerationBuilder* builder = nullptr;
  // `envkit install --compile-bytecode`: the new packages' .pyc, in their receipts.
  bool compile_bytecode = false;
  // Progress lines: each source build, bytecode (may be empty).
  std::function<void(const std::string&)> note;
};

struct PythonStepOutcome {
  std::vector<std::string> warnings;  // imports that failed
};

[[nodiscard]] bool needs_python_step(const store::InstallPlan& plan);
[[nodiscard]] Result<PythonStepOutcome> run_python_step(const PythonStepInput& input);

}  // namespace envkit::pyenv
