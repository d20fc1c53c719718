#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/python/closure.hpp"
#include "envkit/python/uv.hpp"
#include "envkit/recipes/database.hpp"
#include "envkit/solve/solve.hpp"

// The Python half of `envkit lock`: the framework build the solver chose and
// the project's `python-requirements`, resolved by uv for the LOCK's target
// (the Python version the lock holds, each platform of `platforms:`), never for
// this machine's interpreter, into a closure of exact wheels recorded in each
// platform's `python:` section. NVIDIA wheels of the closure become the lock's
// CUDA components and cuDNN, so the environment loads one copy of each.
namespace envkit::locking {

struct LockInputs;

// The index URLs the closure is resolved from: envkit.yaml's `indexes:`, else the
// configured default index (`index-url`, a PyPI mirror), else PyPI.
[[nodiscard]] std::vector<std::string> effective_indexes(const LockInputs& inputs);

// What the project asks of Python.
struct PythonRequest {
  python::ResolveRequest resolve;  // requirement lines and files, indexes as configured
  std::string inputs_hash;         // "sha256:..." of everything that decides the closure
};

// nullopt when the project has no framework and no `python-requirements`.
[[nodiscard]] Result<std::optional<PythonRequest>> python_request(const LockInputs& inputs);

// Resolves one closure for one target. The production resolver runs uv
// (resolver_with_uv); unit tests pass a function over fixed closures.
using ClosureResolver = std::function<Result<python::Closure>(const python::ResolveRequest&,
                                                              const python::ResolveTarget&)>;

// uv, with the index URLs asked through `mirror` when one is given
// (https://HOST/PATH as MIRROR/HOST/PATH) and the closure's URLs mapped back,
// so a lock made through a mirror names the origin's files.
[[nodiscard]] ClosureResolver resolver_with_uv(python::Uv uv, std::optional<std::string> mirror);

// The inputs hash of one platform's closure: the request's, the framework
// build and the Python version the lock chose, the platform.
[[nodiscard]] std::string closure_inputs_hash(const PythonRequest& request,
                                              const lock::PlatformLock& locked);
// One reason per platform whose closure was made from other inputs.
[[nodiscard]] std::vector<std::string> python_staleness(const PythonRequest& request,
                                                        const lock::Lockfile& lockfile);

// What a closure says the solver must take into account: the cuDNN and CUDA
// its NVIDIA wheels pin, and framework builds the indexes do not serve.
struct ClosureFindings {
  std::vector<solve::Requirement> constraints;
  std::vector<solve::UnavailableBuild> unavailable;
  std::vector<std::string> notes;  // one line per finding, for the user
  [[nodiscard]] bool empty() const { return constraints.empty() && unavailable.empty(); }
};

// Resolves the closure of every platform of `lockfile` and records it;
// `previous` closures with the same inputs are kept without resolving again.
// The closure's NVIDIA wheels that are CUDA components or cuDNN replace those
// components' artifacts (`provides:`).
[[nodiscard]] Result<ClosureFindings> add_python_closures(const LockInputs& inputs,
                                                          const PythonRequest& request,
                                                          lock::Lockfile& lockfile,
                                                          const lock::Lockfile* previous,
                                                          const ClosureResolver& resolve);

// Framework builds the configured indexes cannot serve, known from the recipe
// database before anything is resolved: where PyPI's plain release is one
// build (torch 1.8.0 is cu102 there), the others need their own index
// (https://download.pytorch.org/whl/cu111) in `indexes:`.
[[nodiscard]] Result<std::vector<solve::UnavailableBuild>> unavailable_builds(
    const recipes::Database& database, const LockInputs& inputs);

}  // namespace envkit::locking
