#include "envkit/store/tool.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <optional>

#include "envkit/archive/extract.hpp"
#include "envkit/core/env_vars.hpp"
#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/recipes/import_pypi.hpp"
#include "envkit/store/fill.hpp"
#include "envkit/store/fs_error.hpp"
#include "envkit/sys/process.hpp"
#include "spool.hpp"

namespace envkit::store {

namespace fs = std::filesystem;

namespace {

// The platform of this machine, when envkit pins tool files for it at all: a
// Linux on x86_64 or aarch64 (host_platform() has no answer for macOS).
std::optional<specs::Platform> tool_host() {
#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))
  return specs::host_platform();
#else
  return std::nullopt;
#endif
}

std::string label_of(const ToolRelease& release) {
  return release.name + " " + release.version;
}

std::string env_hint(const ToolRelease& release) {
  return fmt::format("set {} to a {} executable to use it instead (envkit then downloads nothing)",
                     release.override_variable, release.name);
}

constexpr std::string_view kMirrorHint =
    "or give envkit a way to PyPI's files: a download mirror (`mirrors:` in config.yaml, "
    "ENVKIT_MIRRORS) that keeps files.pythonhosted.org/PATH, or a package index that "
    "proxies PyPI in envkit.yaml's `indexes`";

void tell(const ToolOptions& options, const std::string& line) {
  if (options.note) options.note(line);
}

// The cache's root: Cache keeps its store in <root>/store/v1.
fs::path tools_root(const Cache& cache) {
  return cache.store_root().parent_path().parent_path() / "tools";
}

// Names the lock and the staging folder of `file` among the cache's entries
// (no '.', which `cache clean` would read as an extension; never a sha256 entry's id).
std::string staging_id(const ToolFile& file) {
  return "tool-" + file.sha256;
}

Result<const ToolFile*> file_for_host(const ToolRelease& release) {
  const auto host = tool_host();
  const auto it = std::find_if(release.files.begin(), release.files.end(),
                               [&](const ToolFile& file) { return host && file.host == *host; });
  if (it != release.files.end()) return &*it;
  std::vector<std::string> hosts;
  for (const auto& file : release.files)
    hosts.emplace_back(specs::to_string(file.host));
  return Error::failed(fmt::format("envkit has no {} for this machine", label_of(release)))
      .because(fmt::format("it provides {} for {} only", release.name, text::join(hosts, ", ")))
      .hint(env_hint(release));
}

bool is_executable_file(const fs::path& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && (info.st_mode & S_IXUSR);
}

// ---------------------------------------------------------------- downloading

// How getting the wheel went: fine, failed for good, or no URL could be reached.
struct Fetched {
  std::optional<Error> fatal;        // a checksum mismatch, a disk error: stop here
  std::vector<std::string> reasons;  // every URL that could not be reached, and why
  bool ok() const { return !fatal && reasons.empty(); }
};

Error wheel_mismatch(const ToolRelease& release, const ToolFile& file, std::string_view url,
                     std::string_view actual) {
  return checksum_mismatch(url::file_name(file.url), file.sha256, actual, url::redacted(url))
      .hint(fmt::format(
          "the file is not the {} envkit pins; nothing was unpacked from it. If a mirror or "
          "an index serves it, check its copy",
          label_of(release)))
      .hint(env_hint(release));
}

// The index lists the pinned file name with another sha256: not the file envkit pins.
Error listed_mismatch(const ToolRelease& release, const ToolFile& file, std::string_view page_url,
                      std::string_view listed) {
  return Error::failed(fmt::format("checksum mismatch for {}", url::file_name(file.url)))
      .because(fmt::format("expected sha256 {}", file.sha256))
      .because(fmt::format("listed   sha256 {}", listed))
      .because(fmt::format("on the index page {}", url::redacted(page_url)))
      .hint(fmt::format("the index serves another file under the name of the {} envkit pins; "
                        "nothing was downloaded from it",
                        label_of(release)))
      .hint(env_hint(release));
}

// Downloads `urls` (tried in order) into `wheel` and checks the pinned sha256.
Fetched download_wheel(const ToolRelease& release, const ToolFile& file,
                       std::vector<std::string> urls, const fs::path& wheel,
                       const ToolOptions& options) {
  auto stream = options.transport->open(
      {.urls = std::move(urls), .expected_size = file.size, .label = label_of(release)});
  bool unreachable = false;
  auto spooled = spool(*stream, wheel, unreachable);
  Fetched fetched;
  if (!spooled && unreachable) {
    const auto& error = spooled.error();
    fetched.reasons = error.causes();
    if (fetched.reasons.empty()) fetched.reasons.push_back(error.message());
    return fetched;
  }
  if (!spooled) {
    fetched.fatal = std::move(spooled).error();
  } else if (spooled->sha256 != file.sha256) {
    fetched.fatal = wheel_mismatch(release, file, stream->url(), spooled->sha256);
  }
  return fetched;
}

std::string index_page_url(std::string_view index, std::string_view project) {
  std::string page(index);
  if (!page.ends_with('/')) page += '/';
  return page + std::string(project) + "/";
}

// The link index page `page_url` has for `filename`: nullopt with the reason in `why`.
std::optional<recipes::IndexFile> find_on_index(const std::string& page_url,
                                                const std::string& filename,
                                                const ToolOptions& options, std::string& why) {
  auto fetch_options = options.index_fetch;
  fetch_options.headers.emplace_back(
      "Accept: application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, "
      "text/html;q=0.1");
  const auto shown = text::quoted(url::redacted(page_url));
  auto response = net::fetch(page_url, fetch_options);
  if (!response) {
    const auto& error = response.error();
    why = error.causes().empty() ? error.message() : shown + ": " + error.causes().front();
    return std::nullopt;
  }
  if (response->status < 200 || response->status >= 300) {
    why = fmt::format("{}: HTTP {}", shown, response->status);
    return std::nullopt;
  }
  auto files = recipes::parse_index_page({.status = response->status,
                                          .content_type = response->content_type,
                                          .url = response->url,
                                          .body = std::move(response->body)},
                                         page_url);
  if (!files) {
    const auto& error = files.error();
    why = shown + ": " + (error.causes().empty() ? error.message() : error.causes().front());
    return std::nullopt;
  }
  for (auto& listed : *files) {
    if (listed.filename == filename) return std::move(listed);
  }
  why = fmt::format("{}: does not list {}", shown, filename);
  return std::nullopt;
}

// The pinned file from each index in turn, until one serves it.
Fetched download_from_indexes(const ToolRelease& release, const ToolFile& file,
                              const fs::path& wheel, const ToolOptions& options) {
  const auto filename = url::file_name(file.url);
  Fetched all;
  for (const auto& index : options.indexes) {
    const auto page_url = index_page_url(index, release.name);
    tell(options, fmt::format("looking {} up on {}", filename, url::redacted(page_url)));
    std::string why;
    const auto listed = find_on_index(page_url, filename, options, why);
    if (!listed) {
      all.reasons.push_back(why);
      continue;
    }
    if (const auto hash = listed->hashes.find("sha256");
        hash != listed->hashes.end() && hash->second != file.sha256) {
      all.fatal = listed_mismatch(release, file, page_url, hash->second);
      return all;
    }
    auto fetched = download_wheel(release, file, {listed->url}, wheel, options);
    if (fetched.ok() || fetched.fatal) return fetched;
    all.reasons.insert(all.reasons.end(), fetched.reasons.begin(), fetched.reasons.end());
  }
  return all;
}

// The pinned wheel in `wheel`: from the mirrors and its URL, else from the indexes.
Result<void> fetch_wheel(const ToolRelease& release, const ToolFile& file, const fs::path& wheel,
                         const ToolOptions& options) {
  tell(options, fmt::format("downloading {} ({:.1f} MB) for {}", label_of(release),
                            static_cast<double>(file.size) / 1e6, specs::to_string(file.host)));
  auto fetched = download_wheel(
      release, file, candidate_urls(options.mirrors, file.url, file.sha256), wheel, options);
  if (fetched.ok()) return {};
  if (fetched.fatal) return std::move(*fetched.fatal);
  if (!options.indexes.empty()) {
    auto from_indexes = download_from_indexes(release, file, wheel, options);
    if (from_indexes.ok()) return {};
    if (from_indexes.fatal) return std::move(*from_indexes.fatal);
    fetched.reasons.insert(fetched.reasons.end(), from_indexes.reasons.begin(),
                           from_indexes.reasons.end());
  }
  Error error = Error::failed(
      fmt::format("cannot download {} ({})", label_of(release), url::file_name(file.url)));
  for (auto& reason : fetched.reasons)
    error.because(std::move(reason));
  return std::move(error.hint(env_hint(release)).hint(std::string(kMirrorHint)));
}

// ---------------------------------------------------------------- unpacking

// The executable out of `wheel` into `folder`/<name>, read-only and executable.
Result<fs::path> unpack_executable(const ToolRelease& release, const ToolFile& file,
                                   const fs::path& wheel, const fs::path& folder) {
  archive::ExtractOptions extract_options{
      .map = [&](std::string_view entry) -> std::optional<std::string> {
        if (entry == file.member) return release.name;
        return std::nullopt;
      },
      .max_bytes = std::max<std::uint64_t>(file.size * 40, std::uint64_t{1} << 30)};
  auto extracted = archive::extract_file(wheel, folder, extract_options);
  if (!extracted) return std::move(extracted).error();
  const auto executable = folder / release.name;
  std::error_code error;
  if (!fs::is_regular_file(executable, error)) {
    return Error::failed(
               fmt::format("{} holds no {}", url::file_name(file.url), text::quoted(file.member)))
        .hint(env_hint(release));
  }
  if (::chmod(executable.c_str(), 0555) != 0)
    return cannot("make executable", executable, std::error_code(errno, std::generic_category()));
  return executable;
}

// Runs `executable --version`: it must print "NAME VERSION" (and may say more after).
Result<void> check_version(const ToolRelease& release, const ToolFile& file,
                           const fs::path& executable) {
  const auto unpacked = fmt::format("{} from {}", release.name, url::file_name(file.url));
  auto ran = sys::run_process({executable.string(), "--version"});
  if (!ran) {
    return std::move(Error::failed(fmt::format("cannot run {}", unpacked))
                         .because(ran.error().message())
                         .hint(env_hint(release)));
  }
  const auto out = text::trim(ran->out);
  const auto words = text::split(out, ' ');
  if (ran->exit_code == 0 && words.size() >= 2 && words[0] == release.name &&
      words[1] == release.version)
    return {};
  auto error = Error::failed(fmt::format("{} is not {}", unpacked, label_of(release)));
  const auto command = text::quoted(release.name + " --version");
  if (ran->timed_out) error.because(fmt::format("{} did not finish in time", command));
  error.because(fmt::format("{} exited with {}", command, ran->exit_code));
  if (!out.empty()) error.because(fmt::format("it printed {}", text::quoted(out)));
  if (!text::trim(ran->err).empty()) error.because(fmt::format("stderr: {}", text::trim(ran->err)));
  return std::move(error.hint(env_hint(release)));
}

// Removes a folder, and whatever is still in it, when it goes out of scope.
class ScratchFolder {
 public:
  explicit ScratchFolder(fs::path path) : path_(std::move(path)) {}
  ~ScratchFolder() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;

 private:
  fs::path path_;
};

// Moves the finished `staging` folder in as `folder` (replacing a broken one: we hold the lock).
Result<void> move_into_place(const fs::path& staging, const fs::path& folder) {
  std::error_code error;
  fs::remove_all(folder, error);
  fs::create_directories(folder.parent_path(), error);
  if (error) return cannot("create", folder.parent_path(), error);
  fs::rename(staging, folder, error);
  if (error) return cannot("move into the cache:", staging, error);
  return {};
}

// Downloads, verifies, unpacks and tries the tool, then moves it in (the caller holds the lock).
Result<void> make_tool(const Cache& cache, const ToolRelease& release, const ToolFile& file,
                       const ToolOptions& options) {
  auto staging = cache.fresh_staging(staging_id(file));
  if (!staging) return std::move(staging).error();
  const ScratchFolder scratch(*staging);  // the wheel; the tool too, unless it moved in
  // Named as on the index: an error about it is about a file the user can look up.
  const auto wheel = *staging / url::file_name(file.url);
  if (auto fetched = fetch_wheel(release, file, wheel, options); !fetched) return fetched;
  auto executable = unpack_executable(release, file, wheel, *staging / "unpacked");
  if (!executable) return std::move(executable).error();
  if (auto checked = check_version(release, file, *executable); !checked) return checked;
  return move_into_place(*staging / "unpacked", tool_path(cache, release).parent_path());
}

}  // namespace

const ToolRelease& pinned_uv() {
  // From PyPI's simple API for `uv` (https://pypi.org/simple/uv/, uploaded 2026-11-17).
  static const ToolRelease release{
      .name = "uv",
      .version = "0.13.9",
      .override_variable = std::string(env::kUv.name),
      .files = {
          {.host = specs::Platform::linux_x86_64,
           .url = "https://files.pythonhosted.org/packages/3d/aa/"
                  "26d64642d808de4a652579ef950d7cd2d37f080a8babf9c67c6b75fc4c3f/"
                  "uv-0.13.9-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
           .sha256 = "d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19",
           .size = 17606939,
           .member = "uv-0.13.9.data/scripts/uv"},
          {.host = specs::Platform::linux_aarch64,
           .url = "https://files.pythonhosted.org/packages/57/15/"
                  "94b6cd62ac3ff6550288328e8035288875197cbc183f51554b266a69877b/"
                  "uv-0.13.9-py3-none-manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_"
                  "aarch64.whl",
           .sha256 = "5435c5ce14a56431208ca0996416d310f1598e8c2c8ba707688985a16bb82dbe",
           .size = 18026789,
           .member = "uv-0.13.9.data/scripts/uv"},
      }};
  return release;
}

fs::path tool_path(const Cache& cache, const ToolRelease& release) {
  return tools_root(cache) / (release.name + "-" + release.version) / release.name;
}

Result<fs::path> provide_tool(const Cache& cache, const ToolRelease& release,
                              const ToolOptions& options) {
  const auto path = tool_path(cache, release);
  if (is_executable_file(path)) return path;
  auto file = file_for_host(release);
  if (!file) return std::move(file).error();
  if (!options.transport) {
    return std::move(Error::failed(fmt::format("{} is not in the cache, and envkit is offline",
                                               label_of(release)))
                         .hint(env_hint(release)));
  }
  // Another envkit may be making it: wait, then look again.
  auto lock = cache.lock_entry(staging_id(**file));
  if (!lock) return std::move(lock).error();
  if (is_executable_file(path)) return path;
  if (auto made = make_tool(cache, release, **file, options); !made) return std::move(made).error();
  return path;
}

}  // namespace envkit::store
