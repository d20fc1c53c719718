#include "envkit/locking/era.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <set>

#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/locking/inputs.hpp"
#include "envkit/locking/live_facts.hpp"
#include "envkit/locking/python_closure.hpp"
#include "envkit/project/project_files.hpp"
#include "envkit/python/build_env.hpp"
#include "envkit/python/interpreters.hpp"
#include "envkit/specs/package_name.hpp"
#include "envkit/store/cache.hpp"
#include "envkit/sys/fs.hpp"
#include "envkit/sys/parallel.hpp"

namespace envkit::locking {

namespace fs = std::filesystem;

namespace {

// The exact version a requirement pins (`==0.4.3`), or nullopt.
std::optional<std::string> pinned_version(const project::Requirement& requirement) {
  if (requirement.url) return std::nullopt;
  auto spec = requirement.version_spec();
  if (!spec || spec->specifiers().size() != 1) return std::nullopt;
  const auto& clause = spec->specifiers().front();
  if (clause.op() != specs::Specifier::Op::equal || clause.is_wildcard() || !clause.version())
    return std::nullopt;
  return clause.version_text();
}

void add_pin(const project::Requirement& requirement, std::vector<Pin>& pins) {
  const auto version = pinned_version(requirement);
  if (!version) return;
  auto name = specs::canonical_package_name(requirement.name);
  if (std::any_of(pins.begin(), pins.end(), [&](const Pin& pin) { return pin.name == name; }))
    return;
  pins.push_back({.name = std::move(name), .version = *version});
}

// A requirements.txt and what it includes, once each.
void add_file_pins(const fs::path& file, std::set<fs::path>& seen, std::vector<Pin>& pins) {
  if (!seen.insert(file.lexically_normal()).second) return;
  auto text = sys::read_file(file, project::kMaxProjectFileBytes);
  if (!text) return;
  auto parsed = project::parse_requirements_txt(*text, file.string());
  if (!parsed) return;
  for (const auto& requirement : parsed->requirements)
    add_pin(requirement, pins);
  for (const auto& include : parsed->includes)
    add_file_pins(file.parent_path() / include.path, seen, pins);
}

// The version a distribution's file name holds: a wheel's second part, an sdist's
// text after the last `-` (`mmcv-full-1.7.2.tar.gz`); "" for anything else.
std::string file_version(std::string_view filename) {
  if (auto wheel = recipes::parse_wheel_filename(filename)) return wheel->version;
  for (const std::string_view suffix : {".tar.gz", ".zip", ".tar.bz2", ".tgz", ".tar.xz", ".tar"}) {
    if (!filename.ends_with(suffix)) continue;
    filename.remove_suffix(suffix.size());
    const auto dash = filename.rfind('-');
    return dash == std::string_view::npos ? std::string() : std::string(filename.substr(dash + 1));
  }
  return {};
}

// Whether `filename` is a distribution of `project` (names compared as PEP 503 does).
bool of_project(std::string_view filename, std::string_view project) {
  const auto version = file_version(filename);
  if (version.empty()) return false;
  const auto head = filename.substr(0, filename.find(version));
  return !head.empty() && specs::canonical_package_name(head.substr(0, head.size() - 1)) == project;
}

std::string project_page(std::string_view index, std::string_view project) {
  std::string url(index);
  if (!url.ends_with('/')) url += '/';
  return url + std::string(project) + "/";
}

Error not_an_index_page(std::string_view url, std::string_view project, std::string why) {
  return Error::failed(fmt::format("cannot read the upload dates of {} from {}",
                                   text::quoted(project), text::quoted(url::redacted(url))))
      .because(std::move(why))
      .hint(
          "check that the URL is a package index (PEP 503/691) and that this machine reaches it "
          "without a login page, or set the date in envkit.yaml: `resolution: {as-of: "
          "2022-08-01}`");
}

// The day a release's files were first uploaded, by version.
std::map<std::string, std::string> days_of(const std::vector<recipes::IndexFile>& files) {
  std::map<std::string, std::string> days;
  for (const auto& file : files) {
    if (file.upload_time.size() < 10) continue;
    const auto version = specs::Version::parse(file_version(file.filename));
    if (!version) continue;
    const auto key = version->to_string();
    const auto day = file.upload_time.substr(0, 10);
    const auto [it, inserted] = days.emplace(key, day);
    if (!inserted && day < it->second) it->second = day;
  }
  return days;
}

// The day `version` of a project was uploaded, from its releases' days.
std::optional<std::string> day_of(const std::map<std::string, std::string>& days,
                                  std::string_view version) {
  const auto parsed = specs::Version::parse(version);
  if (!parsed) return std::nullopt;
  const auto it = days.find(parsed->to_string());
  if (it == days.end()) return std::nullopt;
  return it->second;
}

// What add_build_options captures: the request's pins, dated once per lock.
struct EraState {
  std::vector<Pin> pins;
  std::optional<std::string> as_of;
  EraSource source;
  std::mutex mutex;
  std::optional<Result<python::BuildEra>> era;
};

}  // namespace

std::vector<Pin> exact_pins(const python::ResolveRequest& request) {
  std::vector<Pin> pins;
  for (const auto& line : request.requirements) {
    auto requirement = project::parse_pep508(line, SourceLocation{});
    if (requirement) add_pin(*requirement, pins);
  }
  std::set<fs::path> seen;
  for (const auto& file : request.requirement_files) {
    const fs::path path = file.is_relative() && request.cwd ? *request.cwd / file : file;
    add_file_pins(path, seen, pins);
  }
  return pins;
}

Result<std::optional<std::map<std::string, std::string>>> release_days(
    const EraSource& source, const std::string& project, std::vector<std::string>& why_not) {
  using Days = std::optional<std::map<std::string, std::string>>;
  for (const auto& index : source.indexes) {
    const auto url = project_page(index, project);
    const recipes::PypiImportOptions options{
        .index_url = index, .fetch = source.fetch, .origin_of = {}, .known_release = {}};
    auto files = recipes::fetch_project_files(options, project);
    if (!files) {
      // A page that says it is JSON and is not: the index answers something else.
      if (files.error().to_string().find("malformed JSON") != std::string::npos) {
        return not_an_index_page(url, project,
                                 files.error().causes().empty() ? files.error().message()
                                                                : files.error().causes().front());
      }
      why_not.push_back(fmt::format("{}: {}", url::redacted(url), files.error().headline()));
      continue;
    }
    if (!*files) continue;  // not on this index
    if (std::none_of((*files)->begin(), (*files)->end(), [&](const recipes::IndexFile& file) {
          return of_project(file.filename, project);
        })) {
      return not_an_index_page(
          url, project,
          (*files)->empty()
              ? "the page it answered lists no files (not PEP 691 JSON, no links)"
              : fmt::format("the page it answered links to no file of {}, such as {}",
                            text::quoted(project), text::quoted((*files)->front().filename)));
    }
    auto days = days_of(**files);
    if (days.empty()) {
      why_not.push_back(
          fmt::format("{} gives no upload times (an HTML page, or JSON without "
                      "PEP 700's `upload-time`)",
                      url::redacted(url)));
      continue;
    }
    return Days(std::move(days));
  }
  return Days();
}

Result<python::BuildEra> project_era(const std::vector<Pin>& pins,
                                     const std::optional<std::string>& as_of,
                                     const EraSource& source) {
  python::BuildEra era;
  std::vector<std::string> why_not;
  std::mutex mutex;
  std::optional<Error> failure;
  if (as_of) {
    era.as_of = *as_of;
    era.because = "envkit.yaml's `resolution.as-of`";
  } else {
    std::vector<std::optional<std::string>> days(pins.size());
    sys::for_each_parallel(pins.size(), 8, [&](std::size_t i) {
      std::vector<std::string> why;
      auto known = release_days(source, pins[i].name, why);
      const std::scoped_lock lock(mutex);
      if (!known) {
        if (!failure) failure = known.error();
        return;
      }
      why_not.insert(why_not.end(), why.begin(), why.end());
      if (*known) days[i] = day_of(**known, pins[i].version);
    });
    if (failure) return *failure;
    std::optional<std::size_t> newest;
    for (std::size_t i = 0; i < pins.size(); ++i) {
      if (days[i] && (!newest || *days[newest.value()] < *days[i])) newest = i;
    }
    if (!newest) {
      era.because =
          pins.empty()
              ? "the project pins no release (`==`) whose upload day would date it"
              : fmt::format("no index dates the releases the project pins ({}{})",
                            text::join(why_not, "; "),
                            why_not.empty() ? "their versions are not on the indexes" : "");
      return era;
    }
    era.as_of = *days[*newest];
    era.because = fmt::format("{} {}, the newest release the project pins, was uploaded then",
                              pins[*newest].name, pins[*newest].version);
  }
  const std::vector<std::string_view> tools(std::begin(python::kBuildTools),
                                            std::end(python::kBuildTools));
  std::vector<std::optional<std::map<std::string, std::string>>> histories(tools.size());
  std::vector<std::string> tools_why_not;
  sys::for_each_parallel(tools.size(), 3, [&](std::size_t i) {
    std::vector<std::string> why;
    auto known = release_days(source, std::string(tools[i]), why);
    const std::scoped_lock lock(mutex);
    if (!known) {
      if (!failure) failure = known.error();
      return;
    }
    tools_why_not.insert(tools_why_not.end(), why.begin(), why.end());
    histories[i] = *std::move(known);
  });
  if (failure) return *failure;
  for (std::size_t i = 0; i < tools.size(); ++i) {
    if (!histories[i]) continue;
    auto& releases = era.tools[std::string(tools[i])];
    for (const auto& [version, day] : *histories[i])
      releases.push_back({.version = version, .uploaded = day});
  }
  if (era.tools.empty()) {
    era.because = fmt::format("no index dates the releases of the build tools ({})",
                              text::join(tools_why_not, "; "));
    era.as_of.clear();
  }
  return era;
}

std::optional<fs::path> cached_python(const fs::path& cache_root, const specs::Version& python) {
  if (cache_root.empty()) return std::nullopt;
  const store::Cache cache(cache_root);
  const auto name = fmt::format("python{}.{}", python.major(), python.minor());
  std::vector<fs::path> found;
  std::error_code error;
  for (fs::directory_iterator it(cache.store_root() / "entries", error), end; !error && it != end;
       it.increment(error)) {
    const auto candidate = it->path() / "bin" / name;
    std::error_code ignored;
    if (it->is_directory(ignored) && fs::is_regular_file(candidate, ignored))
      found.push_back(candidate);
  }
  std::sort(found.begin(), found.end());
  for (const auto& candidate : found) {
    // A name is a claim; the answer is the fact.
    const auto version = python::interpreter_version(candidate);
    if (version && version->major() == python.major() && version->minor() == python.minor())
      return candidate;
  }
  return std::nullopt;
}

void add_build_options(const LockInputs& inputs, python::ResolveRequest& request,
                       std::string& digest) {
  const auto& resolution = inputs.manifest.resolution;
  if (resolution.as_of) digest += "build as-of " + *resolution.as_of + "\n";
  for (const auto& package : resolution.build_with_framework)
    digest += "build with framework " + package + "\n";

  auto state = std::make_shared<EraState>();
  state->pins = exact_pins(request);
  if (const auto& framework = inputs.manifest.framework) {
    // The framework as envkit.yaml pins it, `==` alone (the locked build is no pin of the
    // project's: `torch` unpinned would date the project today).
    const auto& clauses = framework->spec.specifiers();
    if (clauses.size() == 1 && clauses.front().op() == specs::Specifier::Op::equal &&
        !clauses.front().is_wildcard() &&
        std::none_of(state->pins.begin(), state->pins.end(),
                     [&](const Pin& pin) { return pin.name == framework->name; }))
      state->pins.push_back({.name = framework->name, .version = clauses.front().version_text()});
  }
  state->as_of = resolution.as_of;
  state->source = {.indexes = request.index_urls, .fetch = index_fetch(inputs.mirror, {})};

  auto& build = request.build;
  build.as_of_declared = resolution.as_of.has_value();
  build.era = [state]() -> Result<python::BuildEra> {
    const std::scoped_lock lock(state->mutex);
    if (!state->era) state->era = project_era(state->pins, state->as_of, state->source);
    return *state->era;
  };
  build.framework = inputs.manifest.framework ? inputs.manifest.framework->name : std::string();
  build.with_framework = resolution.build_with_framework;
  build.own_python = [root = inputs.cache_root](const specs::Version& python) {
    return cached_python(root, python);
  };
}

}  // namespace envkit::locking
