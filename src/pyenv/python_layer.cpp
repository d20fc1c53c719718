#include "envkit/pyenv/python_layer.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "envkit/archive/wheel_record.hpp"
#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/specs/package_name.hpp"
#include "envkit/store/relocation.hpp"
#include "envkit/sys/process.hpp"

namespace envkit::pyenv {

// This module builds on the store: its cache, records, links and generations.
using namespace store;

namespace fs = std::filesystem;

namespace {

constexpr auto kCheckTimeout = std::chrono::seconds(60);
constexpr auto kVenvTimeout = std::chrono::minutes(5);

// Python that ignores the user's PYTHON* variables and user site: what the
// prefix holds is what runs.
std::vector<std::string> isolated(const fs::path& python, std::vector<std::string> args) {
  std::vector<std::string> argv{python.string(), "-I"};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// The last lines of a program's output, for an error.
std::string tail_of(const sys::ProcessOutput& output, std::size_t lines = 12) {
  auto text = output.err.empty() ? output.out : output.err;
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  std::size_t start = text.size();
  for (std::size_t n = 0; n < lines && start > 0; ++n) {
    const auto nl = text.rfind('\n', start - 1);
    if (nl == std::string::npos) return text;
    start = nl;
  }
  return text.substr(start + 1);
}

Error process_failed(std::string what, const sys::ProcessOutput& output) {
  Error error = Error::failed(std::move(what));
  if (output.timed_out) return error.because("it did not finish in time and was stopped");
  error.because(fmt::format("it exited with status {}", output.exit_code));
  if (auto tail = tail_of(output); !tail.empty()) error.because(tail);
  return error;
}

// sysconfig's scheme as pip 23 installs into it (pip/_internal/locations/
// _sysconfig.py): a venv's headers go to include/site/pythonX.Y/<name>.
constexpr std::string_view kCheckScript = R"py(import json, sys, sysconfig, os
failed = []
for name in ("ssl", "zlib", "sqlite3", "venv"):
    try:
        __import__(name)
    except Exception as e:
        failed.append("%s (%s)" % (name, e))
paths = sysconfig.get_paths()
include = paths["include"]
if sys.prefix != sys.base_prefix:
    include = os.path.join(sys.prefix, "include", "site", "python%d.%d" % sys.version_info[:2])
rel = lambda path: os.path.relpath(path, sys.prefix)
print(json.dumps({"version": "%d.%d.%d" % sys.version_info[:3],
                  "site": rel(paths["purelib"]), "failed": failed,
                  "scheme": {"purelib": rel(paths["purelib"]), "platlib": rel(paths["platlib"]),
                             "scripts": rel(paths["scripts"]), "data": rel(paths["data"]),
                             "include": rel(include)},
                  "cache_tag": sys.implementation.cache_tag or ""}))
)py";

Result<FileRecord> record_of(const fs::path& root, const std::string& relative,
                             const std::optional<std::string>& sha256) {
  const auto path = root / relative;
  std::error_code error;
  const auto status = fs::symlink_status(path, error);
  if (error) {
    return Error::failed(
        fmt::format("pip's RECORD lists {}, which is not there", text::quoted(path.string())));
  }
  FileRecord record{.path = relative};
  if (fs::is_symlink(status)) {
    record.type = archive::EntryType::symlink;
    record.link_target = fs::read_symlink(path).string();
    return record;
  }
  record.size = fs::file_size(path, error);
  record.executable = (status.permissions() & fs::perms::owner_exec) != fs::perms::none;
  if (sha256) {
    record.sha256 = *sha256;
  } else if (auto computed = core::sha256_file(path)) {
    record.sha256 = *computed;
  } else {
    return Error::failed(fmt::format("cannot read {}", text::quoted(path.string())));
  }
  return record;
}

}  // namespace

fs::path interpreter(const fs::path& root) {
  return root / "bin" / "python3";
}

Result<InterpreterCheck> check_interpreter(const fs::path& root) {
  const auto python = interpreter(root);
  auto output = sys::run_process(isolated(python, {"-B", "-c", std::string(kCheckScript)}),
                                 {.timeout = kCheckTimeout});
  const auto cannot_start = [&](const std::string& detail) {
    return Error::failed(
               fmt::format("the prefix's Python {} does not start", text::quoted(python.string())))
        .because(detail)
        .hint(
            "the interpreter is broken or built for another machine; nothing was changed in the "
            "prefix. For a Python of this machine, declare `external: {python: system}`");
  };
  if (!output) return cannot_start(output.error().message());
  if (output->exit_code != 0) return cannot_start(tail_of(*output));
  try {
    const auto json = nlohmann::json::parse(output->out);
    InterpreterCheck check{.version = json.at("version").get<std::string>(),
                           .site_packages = json.at("site").get<std::string>()};
    check.failed_imports = json.at("failed").get<std::vector<std::string>>();
    // An interpreter that prints no scheme (a test's stand-in) gets the plain layout.
    const auto scheme = json.value("scheme", nlohmann::json::object());
    const auto path = [&](const char* key, const std::string& otherwise) {
      return scheme.value(key, otherwise);
    };
    check.scheme = {.purelib = path("purelib", check.site_packages),
                    .platlib = path("platlib", check.site_packages),
                    .scripts = path("scripts", "bin"),
                    .include = path("include", "include"),
                    .data = path("data", ".")};
    check.cache_tag = json.value("cache_tag", std::string());
    return check;
  } catch (const nlohmann::json::exception&) {
    return cannot_start(fmt::format("it printed {}", text::quoted(output->out)));
  }
}

namespace {

constexpr std::string_view kEnsurepipScript = R"py(import ensurepip, glob, json, os, sys
names = ["pip"] if sys.version_info >= (3, 12) else ["setuptools", "pip"]
folders = [getattr(ensurepip, "_WHEEL_PKG_DIR", None),
           os.path.join(os.path.dirname(ensurepip.__file__), "_bundled")]
found = {}
for folder in filter(None, folders):
    for wheel in sorted(glob.glob(os.path.join(folder, "*.whl"))):
        name = os.path.basename(wheel).split("-")[0].lower()
        if name in names and name not in found:
            found[name] = wheel
print(json.dumps([found[name] for name in names if name in found]))
)py";

constexpr std::string_view kVenvHint =
    "Debian and Ubuntu ship venv and ensurepip apart: `apt-get install python3-venv`; "
    "or let envkit install a Python (remove `python` from `external:`)";

}  // namespace

Result<std::vector<fs::path>> ensurepip_wheels(const fs::path& base) {
  auto output = sys::run_process(isolated(base, {"-B", "-c", std::string(kEnsurepipScript)}),
                                 {.timeout = kCheckTimeout});
  if (!output) {
    return Error::failed(fmt::format("cannot run {}", text::quoted(base.string())))
        .because(output.error().message());
  }
  std::vector<fs::path> wheels;
  try {
    if (output->exit_code == 0) {
      for (const auto& wheel : nlohmann::json::parse(output->out))
        wheels.emplace_back(wheel.get<std::string>());
    }
  } catch (const nlohmann::json::exception&) {
    wheels.clear();
  }
  const bool has_pip = std::any_of(wheels.begin(), wheels.end(), [](const fs::path& wheel) {
    return wheel.filename().string().starts_with("pip-");
  });
  if (!has_pip) {
    return process_failed(
               fmt::format("{} has no ensurepip wheel of pip for the prefix's environment",
                           base.string()),
               *output)
        .hint(std::string(kVenvHint));
  }
  return wheels;
}

// venv writes its own path into the activate scripts and pyvenv.cfg: the
// generation's, which goes away with the next install.
Result<void> point_at_prefix(const fs::path& file, const fs::path& root,
                             const fs::path& stable_root) {
  std::ifstream in(file, std::ios::binary);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (content.find(root.string()) == std::string::npos) return {};
  std::ofstream(file, std::ios::binary | std::ios::trunc)
      << replace_path(content, root.string(), stable_root.string());
  return {};
}

Result<std::vector<FileRecord>> make_venv(const fs::path& base, const fs::path& root,
                                          const fs::path& stable_root) {
  // Names of what was there before: a venv goes into a generation that may
  // already hold CUDA's bin/ and lib/.
  std::set<std::string> before;
  std::error_code error;
  for (fs::recursive_directory_iterator it(root, error), end; !error && it != end;
       it.increment(error))
    before.insert(it->path().lexically_relative(root).generic_string());
  auto output = sys::run_process(isolated(base, {"-m", "venv", "--without-pip", root.string()}),
                                 {.timeout = kVenvTimeout});
  if (!output) {
    return Error::failed(fmt::format("cannot run {}", text::quoted(base.string())))
        .because(output.error().message());
  }
  if (output->exit_code != 0) {
    return process_failed(
               fmt::format("{} -m venv failed to make the prefix's environment", base.string()),
               *output)
        .hint(std::string(kVenvHint));
  }
  std::vector<FileRecord> made;
  for (fs::recursive_directory_iterator it(root, error), end; !error && it != end;
       it.increment(error)) {
    const auto relative = it->path().lexically_relative(root).generic_string();
    if (before.contains(relative)) continue;
    const auto status = it->symlink_status();
    if (fs::is_directory(status)) {
      made.push_back({.path = relative, .type = archive::EntryType::directory});
      continue;
    }
    if (names_its_prefix(relative)) {
      if (auto pointed = point_at_prefix(it->path(), root, stable_root); !pointed)
        return std::move(pointed).error();
    } else if (relative.starts_with("bin/") && fs::is_regular_file(status)) {
      if (auto relocated = relocate_script(root, it->path()); !relocated)
        return std::move(relocated).error();
    }
    auto record = record_of(root, relative, std::nullopt);
    if (!record) return std::move(record).error();
    made.push_back(*std::move(record));
  }
  std::sort(made.begin(), made.end(),
            [](const FileRecord& a, const FileRecord& b) { return a.path < b.path; });
  return made;
}

Result<std::vector<FileRecord>> link_prefix_view(const fs::path& root,
                                                 const std::string& site_packages,
                                                 const std::vector<FileRecord>& wheel_files,
                                                 const archive::LayoutTarget& target) {
  const auto map = archive::layout_options(target).map;
  const std::string site_prefix = site_packages + "/";
  std::vector<FileRecord> made;
  std::set<std::string> libraries;
  for (const auto& file : wheel_files) {
    if (!file.path.starts_with(site_prefix) || file.type != archive::EntryType::file) continue;
    const auto mapped = map(std::string_view(file.path).substr(site_prefix.size()));
    if (!mapped) continue;
    const auto to = root / *mapped;
    std::error_code error;
    fs::create_directories(to.parent_path(), error);
    // The same inode as site-packages' copy: one cuDNN, whichever path loads it.
    if (::link((root / file.path).c_str(), to.c_str()) != 0) {
      return Error::failed(fmt::format("cannot link {} to {}",
                                       text::quoted((root / file.path).string()),
                                       text::quoted(to.string())))
          .because(std::error_code(errno, std::generic_category()).message());
    }
    FileRecord linked = file;
    linked.path = *mapped;
    made.push_back(std::move(linked));
    if (mapped->starts_with("lib/")) libraries.insert(mapped->substr(4));
  }
  auto links = archive::add_library_links(root, &libraries);
  if (!links) return std::move(links).error();
  for (const auto& link : *links)
    made.push_back(
        {.path = link.path, .type = archive::EntryType::symlink, .link_target = link.link_target});
  std::sort(made.begin(), made.end(),
            [](const FileRecord& a, const FileRecord& b) { return a.path < b.path; });
  return made;
}

}  // namespace envkit::pyenv
