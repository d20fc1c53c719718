#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/locking/requirement_files.hpp"
#include "envkit/net/reachability.hpp"
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

// An index option of a requirements file that this machine does not reach: left out of
// what uv is given (docs/python.md, "Indexes in requirement files").
struct UnreachableIndex {
  IndexLine line;      // requirements.txt:1, `--find-links URL`
  std::string reason;  // "Could not resolve host: storage.googleapis.com"
};

// The index options of the requirements files uv is given, checked once, when the first
// closure is resolved (a lock whose closures are all lent asks no host): the hosts of all of
// them at once (LockInputs::reach: net::check_reachability, kept in
// `<cache>/net/reachability.json` for 600 s per network). An unreachable one is left out:
// uv reads a copy of its file without that line. Shared by the copies of a PythonRequest.
class RequirementIndexes {
 public:
  using Reach =
      std::function<std::map<std::string, net::HostReachability>(const std::vector<std::string>&)>;
  // `files`: the requirements files uv is given (absolute); `project`: where the user's
  // paths are relative to; `reach`: answers per host (empty: every host is reachable).
  RequirementIndexes(std::vector<std::filesystem::path> files, std::filesystem::path project,
                     Reach reach);
  RequirementIndexes(const RequirementIndexes&) = delete;
  RequirementIndexes& operator=(const RequirementIndexes&) = delete;
  ~RequirementIndexes();

  // `request` as uv is to be given it: its requirement files replaced by their copies
  // without the unreachable index options. The first call asks the hosts.
  [[nodiscard]] Result<python::ResolveRequest> for_uv(python::ResolveRequest request);
  // The index options left out; empty before the first for_uv().
  [[nodiscard]] const std::vector<UnreachableIndex>& unreachable() const { return unreachable_; }

 private:
  Result<void> check();

  std::vector<std::filesystem::path> files_;
  std::filesystem::path project_;
  Reach reach_;
  std::mutex mutex_;  // for_uv() may be called from resolutions running at once
  bool checked_ = false;
  std::vector<UnreachableIndex> unreachable_;
  std::filesystem::path scratch_;  // the copies' folder, removed with this; empty: none
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> copies_;
};

// What the project asks of Python.
struct PythonRequest {
  python::ResolveRequest resolve;  // requirement lines and files, indexes as configured
  std::string inputs_hash;         // "sha256:..." of everything that decides the closure
  // Where each requirement of the `python-requirements` files is written, for messages
  // that name the line a closure failed on.
  std::vector<LocatedRequirement> lines;
  // The requirement files' index options, as this machine reaches them. Not part of
  // `inputs_hash`: the lock does not go stale when the network changes.
  std::shared_ptr<RequirementIndexes> indexes;
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

// A closure that uv could not resolve for a platform's Python although the framework's
// own release is served for it: the lock pipeline asks whether an older Python resolves.
struct ClosureFailure {
  specs::Platform platform = specs::Platform::linux_x86_64;
  specs::Version python;            // the Python it was resolved for: 3.14.7
  Error error = Error::failed("");  // uv's refusal, as resolve_with_uv words it
  python::ResolveRequest request;   // what was asked, the framework's pin included
};

// What a closure says the solver must take into account: the cuDNN and CUDA
// its NVIDIA wheels pin, and framework builds the indexes do not serve.
struct ClosureFindings {
  std::vector<solve::Requirement> constraints;
  std::vector<solve::UnavailableBuild> unavailable;
  std::vector<std::string> notes;  // one line per finding, for the user
  std::vector<ClosureFailure> failures;
  [[nodiscard]] bool empty() const {
    return constraints.empty() && unavailable.empty() && failures.empty();
  }
};

// A requirement that a closure failure names: a line of a requirement file, else a
// requirement envkit added (the framework's pin: `location` is "the resolved Python closure").
struct Culprit {
  std::string location;  // "requirements.txt:3"
  std::string text;      // "torchdata==0.9.0"
  [[nodiscard]] bool operator==(const Culprit&) const = default;
};

// The requirements uv's refusal names (`Because torchdata==0.9.0 has no wheels ...`), in
// the order the project writes them: the lines of its requirement files, else the
// requirement lines of `request` (the framework's pin). Empty when it names none.
[[nodiscard]] std::vector<Culprit> culprits_of(const Error& refusal, const PythonRequest& request,
                                               const python::ResolveRequest& asked);

// Resolves the closure of every platform of `lockfile` and records it;
// `previous` closures with the same inputs are kept without resolving again.
// The closure's NVIDIA wheels that are CUDA components or cuDNN replace those
// components' artifacts (`provides:`). A closure uv finds no solution for, whose
// framework release is served, is a ClosureFailure of the findings, not an error.
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
