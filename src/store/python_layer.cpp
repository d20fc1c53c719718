#include "python_layer.hpp"

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
#include "envkit/sys/process.hpp"

namespace envkit::store::python {

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

constexpr std::string_view kCheckScript = R"py(import json, sys, sysconfig, os
failed = []
for name in ("ssl", "zlib", "sqlite3", "venv"):
    try:
        __import__(name)
    except Exception as e:
        failed.append("%s (%s)" % (name, e))
site = sysconfig.get_path("purelib")
print(json.dumps({"version": "%d.%d.%d" % sys.version_info[:3],
                  "site": os.path.relpath(site, sys.prefix), "failed": failed}))
)py";

// The dist-info folder of `name` `version` in `site`.
std::optional<fs::path> find_dist_info(const fs::path& site, const std::string& name,
                                       const std::string& version) {
  const auto wanted = specs::canonical_package_name(name);
  std::error_code error;
  for (fs::directory_iterator it(site, error), end; !error && it != end; it.increment(error)) {
    const auto folder = it->path().filename().string();
    if (!folder.ends_with(".dist-info")) continue;
    const auto stem = folder.substr(0, folder.size() - std::string_view(".dist-info").size());
    const auto dash = stem.rfind('-');
    if (dash == std::string::npos) continue;
    if (specs::canonical_package_name(stem.substr(0, dash)) == wanted &&
        stem.substr(dash + 1) == version)
      return it->path();
  }
  return std::nullopt;
}

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

// A script pip wrote names the interpreter by the generation's absolute path,
// which changes with every install. The `/bin/sh` trampoline (as pip's own
// launcher writes for long paths) finds the interpreter beside the script.
Result<bool> relocate_script(const fs::path& root, const fs::path& script) {
  std::ifstream in(script, std::ios::binary);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!content.starts_with("#!")) return false;
  const std::string bin_dir = (root / "bin").string() + "/";
  // pip writes `#!<python>` or, for long paths, `#!/bin/sh` + `'''exec' "<python>" ...`.
  std::size_t head_end = content.find('\n');
  if (head_end == std::string::npos) return false;
  std::string head = content.substr(0, head_end);
  if (head == "#!/bin/sh") {
    const auto second = content.find('\n', head_end + 1);
    const auto third = second == std::string::npos ? second : content.find('\n', second + 1);
    if (third == std::string::npos) return false;
    head = content.substr(0, third);
    head_end = third;
  }
  const auto at = head.find(bin_dir);
  if (at == std::string::npos) return false;
  const auto name_end = head.find_first_of("\" \n", at + bin_dir.size());
  const auto interpreter_name = head.substr(at + bin_dir.size(), name_end - at - bin_dir.size());
  const std::string trampoline = fmt::format(
      "#!/bin/sh\n'''exec' \"$(dirname -- \"$(realpath -- \"$0\")\")/{}\" \"$0\" \"$@\"\n' '''",
      interpreter_name);
  const std::string relocated = trampoline + content.substr(head_end);
  const fs::path temporary = script.string() + ".envkit-tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << relocated;
    if (!out) {
      return Error::failed(fmt::format("cannot write {}", text::quoted(temporary.string())));
    }
  }
  std::error_code error;
  fs::permissions(temporary, fs::status(script).permissions(), error);
  fs::rename(temporary, script, error);
  if (error) {
    return Error::failed(fmt::format("cannot rewrite {}", text::quoted(script.string())))
        .because(error.message());
  }
  return true;
}

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
    return check;
  } catch (const nlohmann::json::exception&) {
    return cannot_start(fmt::format("it printed {}", text::quoted(output->out)));
  }
}

// venv writes its own path into the activate scripts and pyvenv.cfg: the
// generation's, which goes away with the next install.
Result<void> point_at_prefix(const fs::path& file, const fs::path& root,
                             const fs::path& stable_root) {
  std::ifstream in(file, std::ios::binary);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto from = root.string();
  if (content.find(from) == std::string::npos) return {};
  std::string out;
  for (std::size_t at = 0;;) {
    const auto next = content.find(from, at);
    out += content.substr(at, next - at);
    if (next == std::string::npos) break;
    out += stable_root.string();
    at = next + from.size();
  }
  std::ofstream(file, std::ios::binary | std::ios::trunc) << out;
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
  auto output =
      sys::run_process(isolated(base, {"-m", "venv", root.string()}), {.timeout = kVenvTimeout});
  if (!output) {
    return Error::failed(fmt::format("cannot run {}", text::quoted(base.string())))
        .because(output.error().message());
  }
  if (output->exit_code != 0) {
    return process_failed(
               fmt::format("{} -m venv failed to make the prefix's environment", base.string()),
               *output)
        .hint(
            "Debian and Ubuntu ship venv and ensurepip apart: `apt-get install python3-venv`; "
            "or let envkit install a Python (remove `python` from `external:`)");
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
    if (relative.starts_with("bin/activate") || relative.starts_with("bin/Activate") ||
        relative == "pyvenv.cfg") {
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

Result<void> link_wheel_files(const fs::path& folder, const std::vector<WheelFile>& wheels) {
  std::error_code error;
  fs::create_directories(folder, error);
  if (error) {
    return Error::failed(fmt::format("cannot create {}", text::quoted(folder.string())))
        .because(error.message());
  }
  for (const auto& wheel : wheels) {
    const auto to = folder / wheel.file.filename();
    if (::symlink(wheel.file.c_str(), to.c_str()) != 0 && errno != EEXIST) {
      return Error::failed(fmt::format("cannot link {}", text::quoted(to.string())));
    }
  }
  return {};
}

namespace {

// pip's output, read as it comes, turned into a progress line every few seconds:
// "Processing <wheel>" per package, then "Installing collected packages", the long part.
class PipProgress {
 public:
  PipProgress(const std::function<void(const std::string&)>& note, std::size_t total)
      : note_(note), total_(total) {
    if (note_) note_(fmt::format("installing {} Python packages with pip", total_));
  }

  void line(std::string_view text) {
    if (!note_) return;
    const auto now = std::chrono::steady_clock::now();
    if (text.starts_with("Processing ")) {
      ++processed_;
      if (now - last_ < std::chrono::seconds(3)) return;
      last_ = now;
      note_(fmt::format("pip: {} of {} packages read", processed_, total_));
    } else if (text.starts_with("Installing collected packages")) {
      last_ = now;
      note_(fmt::format("pip: unpacking {} packages and compiling their bytecode", total_));
    }
  }

  void done() const {
    if (!note_) return;
    const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_);
    note_(fmt::format("pip installed {} packages in {:.0f} s", total_, seconds.count()));
  }

 private:
  const std::function<void(const std::string&)>& note_;
  std::size_t total_;
  std::size_t processed_ = 0;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_ = started_;
};

}  // namespace

Result<void> pip_install(const fs::path& root, const std::vector<WheelFile>& wheels,
                         std::chrono::seconds timeout,
                         const std::function<void(const std::string&)>& note) {
  if (wheels.empty()) return {};
  PipProgress progress(note, wheels.size());
  // pip finds the wheels by name in one folder: links to the cache's files.
  const fs::path links = root / ".envkit" / "wheels";
  if (auto linked = link_wheel_files(links, wheels); !linked) return linked;
  std::string requirements;
  for (const auto& wheel : wheels) {
    requirements +=
        fmt::format("{}=={} --hash=sha256:{}\n", wheel.name, wheel.version, wheel.sha256);
  }
  const fs::path requirements_file = links / "requirements.txt";
  {
    std::ofstream out(requirements_file);
    out << requirements;
  }
  const auto python = interpreter(root);
  auto output = sys::run_process(
      isolated(python, {"-m", "pip", "install", "--no-index", "--find-links", links.string(),
                        "--no-deps", "--require-hashes", "--only-binary=:all:",
                        "--disable-pip-version-check", "--no-input", "--no-warn-script-location",
                        "--no-warn-conflicts", "-r", requirements_file.string()}),
      // pip's configuration files could send it elsewhere (--user, --target). Unbuffered:
      // its lines are progress.
      {.env = {{"PIP_CONFIG_FILE", "/dev/null"}, {"PYTHONUNBUFFERED", "1"}},
       .timeout = timeout,
       .on_stdout_line = [&progress](std::string_view line) { progress.line(line); }});
  std::error_code error;
  fs::remove_all(links, error);
  if (!output) {
    return Error::failed(fmt::format("cannot run the prefix's pip ({})", python.string()))
        .because(output.error().message());
  }
  if (output->exit_code != 0) {
    Error failure = Error::failed("the prefix's pip could not install the locked wheels");
    if (output->timed_out) return failure.because("it did not finish in time and was stopped");
    failure.because(fmt::format("pip exited with status {}", output->exit_code));
    std::istringstream lines(output->err + output->out);
    for (std::string line; std::getline(lines, line);) {
      if (line.starts_with("ERROR:") || line.find("Error") != std::string::npos)
        failure.because(line);
    }
    return failure.hint(
        "the previous environment is untouched; `envkit lock` again if the lock "
        "and the index disagree");
  }
  progress.done();
  return {};
}

Result<std::vector<FileRecord>> installed_files(const fs::path& root,
                                                const std::string& site_packages,
                                                const std::string& name,
                                                const std::string& version) {
  const fs::path site = root / site_packages;
  const auto dist_info = find_dist_info(site, name, version);
  if (!dist_info) {
    return Error::failed(fmt::format("pip reported success but {} {} is not in {}", name, version,
                                     text::quoted(site.string())));
  }
  std::ifstream record(*dist_info / "RECORD");
  if (!record) {
    return Error::failed(
        fmt::format("{} has no RECORD", text::quoted((*dist_info / "RECORD").string())));
  }
  std::map<std::string, FileRecord> files;
  for (std::string line; std::getline(record, line);) {
    const auto fields = archive::csv_fields(line);
    if (fields.empty() || fields[0].empty()) continue;
    const auto relative = (fs::path(site_packages) / fields[0]).lexically_normal().generic_string();
    if (relative.starts_with("..") || fs::path(relative).is_absolute()) continue;
    std::optional<std::string> sha256 =
        fields.size() > 1 ? archive::record_hash_hex(fields[1]) : std::nullopt;
    // pip compiles bytecode over any .pyc the wheel ships: record what is there.
    if (relative.ends_with(".pyc")) sha256.reset();
    if (relative.starts_with("bin/")) {
      auto relocated = relocate_script(root, root / relative);
      if (!relocated) return std::move(relocated).error();
      if (*relocated) sha256.reset();
    }
    auto file = record_of(root, relative, sha256);
    if (!file) return std::move(file).error();
    files[relative] = *std::move(file);
  }
  std::vector<FileRecord> out;
  for (auto& [path, file] : files)
    out.push_back(std::move(file));
  return out;
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

}  // namespace envkit::store::python
