// What the activated environment still takes from outside the prefix. The
// prefix's folders come first in every list, so nothing outside can shadow a
// file the prefix has; what can still reach a program is (1) anything in
// LD_PRELOAD, loaded before every search, and (2) what the prefix lacks, which
// the search finds further down the inherited lists: another CUDA's
// libcudart.so.12 for a program built against 12 when the prefix holds 13, a
// cuDNN the prefix does not have, or the machine's nvcc when the prefix has
// none. Each warning names a file that exists.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <string>

#include "envkit/activation/activation.hpp"
#include "envkit/core/env_vars.hpp"
#include "envkit/core/text.hpp"
#include "path_list.hpp"

namespace envkit::activation {

namespace fs = std::filesystem;

namespace {

// The libraries whose mixing breaks CUDA programs in ways that are hard to
// trace ("CUDA driver version is insufficient", cuDNN version mismatches).
constexpr std::string_view kWatched[] = {"libcudart.so", "libcudnn.so"};

bool all_digits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "libcudart.so.12", "libcudnn.so.7": the soname a program asks the dynamic loader
// for. CUDA 10 and older named the runtime by major and minor ("libcudart.so.9.0",
// "libcudart.so.10.1"); "libcudart.so.12.4.127" is a file, not a soname.
bool is_watched_soname(std::string_view name) {
  return std::any_of(std::begin(kWatched), std::end(kWatched), [&](std::string_view library) {
    if (!name.starts_with(library) || name.size() <= library.size() + 1 ||
        name[library.size()] != '.')
      return false;
    const auto version = name.substr(library.size() + 1);
    if (all_digits(version)) return true;
    const auto dot = version.find('.');
    const auto major = version.substr(0, dot);
    const auto minor = version.substr(dot + 1);
    return library == "libcudart.so" && dot != std::string_view::npos && all_digits(major) &&
           all_digits(minor) && major.size() <= 2 && std::stoi(std::string(major)) <= 10;
  });
}

// "libcudart.so.12.4.127", "libcudnn.so": any file of a watched library.
bool is_watched_file(std::string_view name) {
  return std::any_of(std::begin(kWatched), std::end(kWatched),
                     [&](std::string_view library) { return name.starts_with(library); });
}

std::string_view value_of(const Environment& environment, const env::Variable& variable) {
  const auto found = environment.find(std::string(variable.name));
  return found == environment.end() ? std::string_view() : std::string_view(found->second);
}

// The watched sonames in `dir` that resolve to a file (a dangling link is
// skipped by the loader too), sorted so the warnings come in a stable order.
std::vector<std::string> watched_sonames(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    auto name = it->path().filename().string();
    std::error_code ignored;
    if (is_watched_soname(name) && fs::is_regular_file(it->path(), ignored)) {
      out.push_back(std::move(name));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The loader takes each soname from the first folder of LD_LIBRARY_PATH that
// has it: the prefix's lib/ first, so only the names it lacks go further.
void library_warnings(const fs::path& prefix, const Environment& activated,
                      std::vector<std::string>& out) {
  const auto own = prefix / "lib";
  std::set<std::string> resolved;
  for (const auto& dir : list_elements(value_of(activated, env::kLdLibraryPath))) {
    const bool is_own = same_dir(dir, own);
    for (const auto& name : watched_sonames(dir)) {
      if (!resolved.insert(name).second || is_own) continue;
      out.push_back(fmt::format(
          "programs that need {} will load {} (from the inherited {}): the prefix has no {}", name,
          text::quoted((dir / name).string()), env::kLdLibraryPath.name, name));
    }
  }
}

// LD_PRELOAD's libraries are loaded into every program before any search, so
// a CUDA library named there by path wins over the prefix's whatever the order.
// (A bare name is searched for like any other, and covered above.)
void preload_warnings(const Environment& activated, std::vector<std::string>& out) {
  std::string separated(value_of(activated, env::kLdPreload));
  std::replace(separated.begin(), separated.end(), ' ', ':');
  for (const auto& library : list_elements(separated)) {
    std::error_code ignored;
    if (!library.has_parent_path() || !is_watched_file(library.filename().string()) ||
        !fs::exists(library, ignored)) {
      continue;
    }
    out.push_back(
        fmt::format("{} loads {} into every program ahead of the prefix's lib/: it is "
                    "used instead of the prefix's own",
                    env::kLdPreload.name, text::quoted(library.string())));
  }
}

}  // namespace

std::vector<std::string> shadowing_warnings(const fs::path& prefix, const Environment& activated) {
  std::vector<std::string> out;
  preload_warnings(activated, out);
  library_warnings(prefix, activated, out);
  return out;
}

}  // namespace envkit::activation
