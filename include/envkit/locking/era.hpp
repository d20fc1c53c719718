#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/python/closure.hpp"
#include "envkit/recipes/import_pypi.hpp"
#include "envkit/specs/version.hpp"

// The project's era for source builds (docs/python.md, "Source builds in the
// project's era"): the date horizon their build dependencies are taken as of —
// envkit.yaml's `resolution.as-of`, else the upload day of the newest release
// the project pins, read from the indexes' PEP 691 pages (PEP 700 `upload-time`)
// — and the releases of the build tools (python::kBuildTools) with their days.
namespace envkit::locking {

struct LockInputs;

// A release the project pins exactly: `albumentations==0.4.3`.
struct Pin {
  std::string name;     // PEP 503
  std::string version;  // as written: "0.4.3"
  friend bool operator==(const Pin&, const Pin&) = default;
};

// The `==` pins (no wildcard, no `===`) of a request's requirement lines and of its
// requirement files (requirements.txt and their `-r` includes, relative to
// `request.cwd`), each package once (the first pin), in order. Files that cannot be
// read are passed over: uv says so.
[[nodiscard]] std::vector<Pin> exact_pins(const python::ResolveRequest& request);

// Where upload days are read: the indexes in order, each page asked with pip's
// Accept header (JSON preferred).
struct EraSource {
  std::vector<std::string> indexes;
  recipes::FetchIndexPage fetch;
};

// The days of `project`'s releases, by version as its files spell it ("0.4.3" ->
// "2019-11-27", the earliest upload of its files): from the first index whose page
// gives upload times. nullopt when none does (an HTML page, an index without the
// project, one that cannot be reached), with the reasons added to `why_not`. An index
// page that is neither a JSON nor an HTML page of the project's files is an error
// naming its URL and the project.
[[nodiscard]] Result<std::optional<std::map<std::string, std::string>>> release_days(
    const EraSource& source, const std::string& project, std::vector<std::string>& why_not);

// The era of a project: `as_of` when given (envkit.yaml's), else the upload day of the
// newest of `pins`; and every build tool's final releases with their days. `as_of`
// empty in the result, `because` saying why, when no pin could be dated or the build
// tools' releases are not dated on any index.
[[nodiscard]] Result<python::BuildEra> project_era(const std::vector<Pin>& pins,
                                                   const std::optional<std::string>& as_of,
                                                   const EraSource& source);

// envkit's own interpreter of `python`'s minor, from a cache entry under `cache_root`
// (a python-build-standalone archive or a CPython built from source, `bin/python3.X`),
// asked its version; nullopt when the cache has none.
[[nodiscard]] std::optional<std::filesystem::path> cached_python(
    const std::filesystem::path& cache_root, const specs::Version& python);

// Sets `request.build` from envkit.yaml's `resolution:` and the request's pins (read now,
// dated from the indexes only when a build needs the era, once per lock), and adds
// what decides the builds (`as-of`, `build-with-framework`) to `digest`, the closure's
// inputs: another `as-of` makes the lock stale.
void add_build_options(const LockInputs& inputs, python::ResolveRequest& request,
                       std::string& digest);

}  // namespace envkit::locking
