#pragma once

#include <optional>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/python/interpreter.hpp"
#include "envkit/python/pip.hpp"
#include "envkit/recipes/database.hpp"

// The Python half of `envkit lock`: the framework build the solver chose and
// the project's `python-requirements`, resolved by pip (or uv, for other
// platforms) into a closure of exact wheels, recorded in each platform's
// `python:` section. NVIDIA wheels of the closure become the prefix's CUDA and
// cuDNN, so that the framework and the prefix share one copy.
namespace envkit::cli {

struct LockInputs;

// What the project asks of Python, and who will resolve it.
struct PythonRequest {
  python::ResolveRequest resolve;  // requirement lines and files, indexes
  std::string inputs_hash;         // "sha256:..." of everything that decides the closure
  std::optional<python::Interpreter> resolver;
  std::optional<Error> no_resolver;  // why there is none
};

// nullopt when the project has no framework and no `python-requirements`.
[[nodiscard]] Result<std::optional<PythonRequest>> python_request(
    const LockInputs& inputs, const std::vector<std::filesystem::path>& preferred_interpreters);

// The inputs hash of one platform's closure: the request's, the framework
// build and the Python version the lock chose.
[[nodiscard]] std::string closure_inputs_hash(const PythonRequest& request,
                                              const lock::PlatformLock& locked);
// One reason per platform whose closure was made from other inputs.
[[nodiscard]] std::vector<std::string> python_staleness(const PythonRequest& request,
                                                        const lock::Lockfile& lockfile);

// Resolves the closure for every platform of `lockfile` a resolver can serve
// and records it; `previous` closures with the same inputs are kept without
// resolving again. Returns constraints the solver must add when the closure
// pins another cuDNN than the lock has (package -> spec and the reason), empty
// when the lock is consistent. `warnings` gets one line per platform left
// without a closure.
struct PythonPins {
  std::vector<std::tuple<std::string, std::string, std::string>> constraints;
};
[[nodiscard]] Result<PythonPins> add_python_closures(const PythonRequest& request,
                                                     lock::Lockfile& lockfile,
                                                     const lock::Lockfile* previous,
                                                     std::vector<std::string>& warnings);

}  // namespace envkit::cli
