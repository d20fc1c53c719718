#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/recipes/recipe.hpp"
#include "envkit/specs/platform.hpp"
#include "envkit/specs/version_spec.hpp"

// Importer for NVIDIA's CUDA and cuDNN wheels on a Python package index
// (PyPI's simple API: PEP 691 JSON, PEP 503 HTML). It adds a second artifact of
// kind `wheel` to CUDA components and cuDNN builds that the redist importer
// already knows, matched by exact version; it never creates a version.
namespace envkit::recipes {

// What an index answered for one URL. The importer does not link the network
// module: the CLI adapts net::fetch to this, tests pass a fake.
struct IndexResponse {
  int status = 0;            // HTTP status (200 for a page read from a file)
  std::string content_type;  // decides JSON or HTML (the body is sniffed when it is empty)
  std::string url;           // after redirects; relative links resolve against it (empty = asked)
  std::string body;
};
using FetchIndexPage = std::function<Result<IndexResponse>(
    const std::string& url, const std::vector<std::string>& headers)>;

// --- Which index: the one pip would use ---------------------------------------

inline constexpr std::string_view kPypiSimpleUrl = "https://pypi.org/simple/";

// The inputs pip reads to choose its index, as values (tests build them by hand).
struct PipIndexSettings {
  std::optional<std::string> index_url_variable;  // PIP_INDEX_URL
  // pip.conf files in the order pip reads them; later files win.
  std::vector<std::filesystem::path> config_files;

  // From this process: PIP_INDEX_URL; /etc/xdg/pip/pip.conf, /etc/pip.conf,
  // ~/.pip/pip.conf, $XDG_CONFIG_HOME/pip/pip.conf (or ~/.config/pip/pip.conf),
  // then PIP_CONFIG_FILE (which, when it exists, replaces the two per-user files).
  [[nodiscard]] static PipIndexSettings from_environment();
};

// PIP_INDEX_URL, else the last `index-url` in the config files ([install]
// over [global] within a file), else PyPI. Missing or unreadable files are skipped.
[[nodiscard]] std::string pip_index_url(const PipIndexSettings& settings);

// --- Reading an index page -------------------------------------------------------

// One file a project page lists.
struct IndexFile {
  std::string filename;
  std::string url;                            // absolute, without the #hash fragment
  std::map<std::string, std::string> hashes;  // algorithm -> lowercase hex
  std::optional<std::uint64_t> size;          // PEP 700 (JSON pages only)
  std::string upload_time;  // PEP 700 `upload-time` (JSON pages only): "2019-11-27T10:17:53Z"
  bool yanked = false;
  bool has_metadata = false;  // PEP 658/714: <url>.metadata exists
};

// Parses a project page. JSON (PEP 691) when the content type says so or the
// body starts with `{`, else HTML (PEP 503). Errors name `page_url`.
[[nodiscard]] Result<std::vector<IndexFile>> parse_index_page(const IndexResponse& page,
                                                              std::string_view page_url);

// The parts of a wheel filename (PEP 427), e.g.
// nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl.
struct WheelFilename {
  std::string distribution;
  std::string version;
  std::optional<std::uint64_t> build;  // the optional build tag's number
  std::vector<std::string> python_tags;
  std::vector<std::string> abi_tags;
  std::vector<std::string> platform_tags;
};
[[nodiscard]] std::optional<WheelFilename> parse_wheel_filename(std::string_view filename);

// A wheel a project page lists, with its filename parsed.
struct IndexWheel {
  const IndexFile* file = nullptr;
  WheelFilename wheel;
};

// A release without a pre-, post-, dev- or local part (2.4.1, not 2.4.1rc1 or 2.4.1+cu124).
[[nodiscard]] bool is_final_release(const specs::Version& version);

// The wheels of a project page that are not yanked, by release version (pre-, post- and
// local versions included: each importer keeps the releases it reads), in page order.
[[nodiscard]] std::map<specs::Version, std::vector<IndexWheel>> wheels_by_release(
    const std::vector<IndexFile>& files);

// The envkit platform a wheel installs on: manylinux x86_64 / aarch64 and
// win_amd64 wheels that need no particular Python (py3-none); else nullopt.
[[nodiscard]] std::optional<specs::Platform> wheel_platform(const WheelFilename& wheel);
// The same for a wheel of any Python and ABI (cp312-cp312-manylinux2014_x86_64).
[[nodiscard]] std::optional<specs::Platform> binary_wheel_platform(const WheelFilename& wheel);

// The newest CPython minor of a wheel's `cp3XX` tags (cp311 -> 11); nullopt without one.
[[nodiscard]] std::optional<unsigned> cpython_minor(const WheelFilename& wheel);

// The glibc a manylinux wheel needs at least, as {major, minor} (manylinux1 ->
// 2.5, manylinux2014 -> 2.17, manylinux_2_28 -> 2.28); the lowest of its tags.
[[nodiscard]] std::optional<std::pair<unsigned, unsigned>> manylinux_glibc(
    const WheelFilename& wheel);

// The CPython versions a release's wheels are built for, as a range: cp36 … cp39 wheels ->
// `>=3.6,<3.10`; an abi3 wheel (cp37-abi3) leaves it open above. Python 2 tags are ignored;
// nullopt when no wheel names a CPython 3.
[[nodiscard]] std::optional<specs::VersionSpec> cpython_range(
    const std::vector<WheelFilename>& wheels);

// --- NVIDIA's names ---------------------------------------------------------------

// Where NVIDIA publishes a CUDA component or cuDNN as a wheel.
struct WheelProject {
  std::string project;     // nvidia-cuda-runtime-cu12, nvidia-cuda-runtime (13.x)
  std::string wheel_root;  // nvidia/cuda_runtime, nvidia/cu13, nvidia/cudnn
};

// The wheel project for CUDA component `component` of a CUDA release with
// major version `cuda_major` (11, 12, 13); nullopt when NVIDIA publishes none.
[[nodiscard]] std::optional<WheelProject> cuda_component_wheel(std::string_view component,
                                                               std::uint64_t cuda_major);
// The wheel project for a cuDNN build id (`cuda11`, `cuda12`, `cuda13`).
[[nodiscard]] std::optional<WheelProject> cudnn_build_wheel(std::string_view build_id);

// --- The import -------------------------------------------------------------------

struct PypiImportOptions {
  std::string index_url = std::string(kPypiSimpleUrl);
  FetchIndexPage fetch;
  // Releases an importer leaves alone (neither read nor written): those whose facts the
  // database already holds from an earlier read of the same wheels, which never change.
  // The live overlay (live_index.hpp) reads only what is new this way; empty: every release.
  // The origin of a URL a page links to: a page read through a download mirror links to
  // the mirror's copies, and the database names the origin's. Empty: the URL as linked.
  std::function<std::string(const std::string&)> origin_of;
  using KnownRelease = std::function<bool(std::string_view project, const specs::Version& release)>;
  KnownRelease known_release;
  [[nodiscard]] bool is_known(std::string_view project, const specs::Version& release) const {
    return known_release && known_release(project, release);
  }
};

struct PypiImport {
  // Only what the wheels add: versions (same spelling as the input), builds
  // (same ids) and artifacts of kind wheel. merge_into() lays them over the database.
  Recipe cuda;
  Recipe cudnn;
  std::size_t projects_fetched = 0;
  std::size_t projects_missing = 0;  // the index has no such project (404)
  std::size_t matched = 0;           // components and cuDNN builds given at least one wheel
  std::size_t unmatched = 0;         // ...with a wheel project but no wheel of their version
  std::size_t artifacts = 0;         // wheel artifacts, all platforms
};

// The files the index lists for `project` (one page, asked with pip's Accept
// header), or nullopt when the index has no such project (404, 410).
[[nodiscard]] Result<std::optional<std::vector<IndexFile>>> fetch_project_files(
    const PypiImportOptions& options, std::string_view project);

// A wheel's METADATA as its PEP 658 file (`<url>.metadata`), or nullopt when
// the index serves none (404, 410).
[[nodiscard]] Result<std::optional<std::string>> fetch_core_metadata(
    const PypiImportOptions& options, const IndexFile& wheel);

// A wheel's METADATA: its PEP 658 file, else read out of the wheel itself with
// HTTP range requests (the zip's end record, central directory and the one
// member; a server that ignores ranges sends the whole wheel, which serves as
// well), as pip does where an index serves no metadata. nullopt when the index
// has neither (404, 410) or the wheel holds no `*.dist-info/METADATA`.
[[nodiscard]] Result<std::optional<std::string>> fetch_wheel_metadata(
    const PypiImportOptions& options, const IndexFile& wheel);

// The same for a project the importer cannot do without: its absence is an error naming
// the index.
[[nodiscard]] Result<std::vector<IndexFile>> fetch_listed_project_files(
    const PypiImportOptions& options, std::string_view project);

// Queries the index once per wheel project `cuda` and `cudnn` need.
[[nodiscard]] Result<PypiImport> import_pypi_nvidia(const Recipe& cuda, const Recipe& cudnn,
                                                    const PypiImportOptions& options);

}  // namespace envkit::recipes
