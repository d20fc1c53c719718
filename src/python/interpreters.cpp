#include "envkit/python/interpreters.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <regex>
#include <set>

#include "envkit/core/env_vars.hpp"
#include "envkit/core/text.hpp"
#include "envkit/sys/process.hpp"

namespace envkit::python {

namespace fs = std::filesystem;

namespace {

// A folder to look in and what to call what is found there.
struct Place {
  fs::path dir;
  std::string source;
};

std::vector<fs::path> subfolders(const fs::path& dir) {
  std::vector<fs::path> folders;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    if (it->is_directory(error)) folders.push_back(it->path());
  }
  std::sort(folders.begin(), folders.end());
  return folders;
}

std::vector<Place> default_places() {
  std::vector<Place> places;
  const auto home = env::get(env::kHome).value_or("");
  fs::path pyenv_root = env::get(env::kPyenvRoot).value_or("");
  if (pyenv_root.empty() && !home.empty()) pyenv_root = fs::path(home) / ".pyenv";
  if (!pyenv_root.empty()) {
    for (const auto& version : subfolders(pyenv_root / "versions"))
      places.push_back({version / "bin", "pyenv"});
  }
  if (!home.empty()) {
    for (const auto& managed : subfolders(fs::path(home) / ".local/share/uv/python"))
      places.push_back({managed / "bin", "uv"});
  }
  if (auto prefix = env::get(env::kCondaPrefix); prefix && !prefix->empty())
    places.push_back({fs::path(*prefix) / "bin", "conda"});
  std::vector<fs::path> conda_bases = {"/opt/conda"};
  if (!home.empty()) {
    for (const char* name : {"miniconda3", "miniforge3", "mambaforge", "anaconda3"})
      conda_bases.push_back(fs::path(home) / name);
  }
  for (const auto& base : conda_bases)
    places.push_back({base / "bin", "conda base"});
  for (const auto dir : text::split(env::get(env::kPath).value_or(""), ':')) {
    // pyenv's shims run whichever version is selected, not the one their name says.
    if (dir.empty() || dir.find("/shims") != std::string_view::npos) continue;
    places.push_back({fs::path(std::string(dir)), "PATH"});
  }
  places.push_back({"/usr/local/bin", "/usr/local/bin"});
  places.push_back({"/usr/bin", "/usr/bin"});
  return places;
}

std::vector<Place> search_places() {
  const auto configured = env::get(env::kPythonSearchPath);
  if (!configured) return default_places();
  std::vector<Place> places;
  for (const auto dir : text::split(*configured, ':')) {
    if (!dir.empty()) places.push_back({fs::path(std::string(dir)), "ENVKIT_PYTHON_SEARCH_PATH"});
  }
  return places;
}

// The executables in `dir` named python3 or python3.N; the minor the name claims, when it does.
std::vector<std::pair<fs::path, std::optional<unsigned>>> candidates_in(const fs::path& dir) {
  static const std::regex name_pattern(R"(python3(?:\.(\d+))?)");
  std::vector<std::pair<fs::path, std::optional<unsigned>>> found;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const auto name = it->path().filename().string();
    std::smatch match;
    if (!std::regex_match(name, match, name_pattern)) continue;
    if (!it->is_regular_file(error) && !it->is_symlink(error)) continue;
    std::optional<unsigned> claimed;
    if (match[1].matched) claimed = static_cast<unsigned>(std::stoul(match[1].str()));
    found.emplace_back(it->path(), claimed);
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

InterpreterSearch search_interpreters() {
  InterpreterSearch result;
  std::set<fs::path> seen;  // real executables already asked
  for (const auto& place : search_places()) {
    for (const auto& [path, claimed] : candidates_in(place.dir)) {
      std::error_code error;
      auto real = fs::canonical(path, error);
      if (error || !seen.insert(real).second) continue;
      auto version = interpreter_version(path);
      if (!version) {
        result.refused.push_back(fmt::format("{} does not run", path.string()));
        continue;
      }
      if (version->major() != 3 || (claimed && version->minor() != *claimed)) {
        result.refused.push_back(fmt::format("{} is named for Python 3.{} but is Python {}",
                                             path.string(), claimed.value_or(0),
                                             version->original()));
        continue;
      }
      result.found.push_back({.path = path, .version = *version, .source = place.source});
    }
  }
  std::stable_sort(result.found.begin(), result.found.end(),
                   [](const MachineInterpreter& a, const MachineInterpreter& b) {
                     return b.version < a.version;
                   });
  return result;
}

std::optional<specs::Version> interpreter_version(const fs::path& path) {
  sys::ProcessOptions options;
  options.timeout = std::chrono::seconds(20);
  // Not the user's PYTHONPATH or PYTHONHOME: they may belong to another Python.
  options.env = {{"PYTHONPATH", std::nullopt}, {"PYTHONHOME", std::nullopt}};
  auto run = sys::run_process(
      {path.string(), "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"}, options);
  if (!run || run->timed_out || run->exit_code != 0) return std::nullopt;
  auto version = specs::Version::parse(text::trim(run->out));
  if (!version) return std::nullopt;
  return *version;
}

const InterpreterSearch& machine_interpreters() {
  // Once per process and ENVKIT_PYTHON_SEARCH_PATH: a test that names its own places is
  // answered from them, whatever was searched before.
  static std::mutex mutex;
  static std::map<std::optional<std::string>, InterpreterSearch> searched;
  const std::scoped_lock lock(mutex);
  const auto places = env::get(env::kPythonSearchPath);
  auto it = searched.find(places);
  if (it == searched.end()) it = searched.emplace(places, search_interpreters()).first;
  return it->second;
}

std::optional<MachineInterpreter> machine_interpreter(const specs::Version& version) {
  for (const auto& interpreter : machine_interpreters().found) {
    if (interpreter.version.major() == version.major() &&
        interpreter.version.minor() == version.minor())
      return interpreter;
  }
  return std::nullopt;
}

}  // namespace envkit::python
