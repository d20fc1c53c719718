#include "envkit/build/cpython_build.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>

#include "envkit/archive/layout.hpp"
#include "envkit/core/text.hpp"
#include "envkit/store/relocation.hpp"
#include "envkit/sys/fs.hpp"
#include "envkit/sys/process.hpp"

namespace envkit::build {

// This module builds on the store: its cache, records, links and generations.
using namespace store;

namespace {

namespace fs = std::filesystem;

// What deep-learning code imports, and the Debian package each needs at build time.
struct NeededModule {
  std::string_view name;
  std::string_view dev_package;
  std::string_view what;
};

constexpr std::array kNeededModules = {
    NeededModule{"ctypes", "libffi-dev", "ctypes (torch, numpy's loaders)"},
    NeededModule{"zlib", "zlib1g-dev", "zlib (pip, wheels)"},
    NeededModule{"bz2", "libbz2-dev", "bz2"},
    NeededModule{"lzma", "liblzma-dev", "lzma (datasets in .xz)"},
    NeededModule{"sqlite3", "libsqlite3-dev", "sqlite3"},
    NeededModule{"_ssl", "libssl-dev", "_ssl (https: pip's downloads)"},
};

// Python 3.5 syntax: prints the minor version, then each needed module that
// does not import.
std::string module_check_script() {
  std::string names;
  for (const auto& module : kNeededModules)
    names += fmt::format("'{}', ", module.name);
  return fmt::format(
      "import importlib, sys\n"
      "print(sys.version_info[1])\n"
      "for name in ({}):\n"
      "    try:\n"
      "        importlib.import_module(name)\n"
      "    except Exception:\n"
      "        print(name)\n",
      names);
}

// ensurepip writes pip3 with `#!ENTRY/bin/python3.9`: the entry is linked into
// every environment, and a script must run its own environment's python, not
// the entry's, so the scripts of bin/ find python beside themselves (as pip's
// scripts in a prefix do).
Result<void> relocate_scripts(const fs::path& installed, const fs::path& prefix) {
  constexpr std::uintmax_t kScriptLimit = 1 << 20;
  const auto bin = installed / "bin";
  std::error_code error;
  for (fs::directory_iterator it(bin, error), end; !error && it != end; it.increment(error)) {
    std::error_code ignored;
    if (!it->is_regular_file(ignored) || it->is_symlink(ignored) ||
        it->file_size(ignored) > kScriptLimit) {
      continue;
    }
    if (auto relocated = relocate_script(prefix, it->path()); !relocated) {
      return std::move(relocated).error();
    }
  }
  if (error) {
    return Error::failed(fmt::format("cannot list `{}`", bin.string())).because(error.message());
  }
  return {};
}

}  // namespace

std::vector<std::string> cpython_configure_arguments(const std::string& user_ldflags) {
  // `$$` is `$` to make and the quotes keep the shell of its recipes from
  // expanding $ORIGIN: the linker gets `-rpath,$ORIGIN/../lib`.
  std::string ldflags = "-Wl,-rpath,'$$ORIGIN/../lib'";
  if (!text::trim(user_ldflags).empty()) ldflags += " " + user_ldflags;
  return {"--enable-shared", "--with-ensurepip=install", "LDFLAGS=" + ldflags};
}

std::string missing_module_warning(const std::string& label, const std::string& module,
                                   unsigned minor) {
  const auto* needed = std::find_if(kNeededModules.begin(), kNeededModules.end(),
                                    [&](const NeededModule& m) { return m.name == module; });
  if (needed == kNeededModules.end()) return fmt::format("{}: `{}` is missing", label, module);
  if (module == "_ssl" && minor < 10) {
    return fmt::format(
        "{}: `_ssl` is missing (https: pip cannot download): Python 3.{} does not build against "
        "OpenSSL 3.x, which this host has; install an OpenSSL 1.1 (libssl1.1-dev) and "
        "reinstall, or use Python >= 3.10",
        label, minor);
  }
  return fmt::format(
      "{}: `{}` is missing ({}): its build needs {}; `sudo apt-get install {}` (Debian, Ubuntu), "
      "then `envkit cache clean` and reinstall",
      label, needed->name, needed->what, needed->dev_package, needed->dev_package);
}

Result<std::vector<std::string>> finish_cpython(const SourceBuild& build, const fs::path& installed,
                                                BuildLog& log) {
  if (auto relocated = relocate_scripts(installed, build.prefix); !relocated) {
    return std::move(relocated).error();
  }
  if (auto links = archive::add_python_links(installed); !links) return std::move(links).error();

  const auto python = installed / "bin" / "python3";
  std::vector<std::string> names;
  for (const auto& module : kNeededModules)
    names.emplace_back(module.name);
  log.text +=
      fmt::format("$ {} -I -c '<import each of {}>'\n", python.string(), text::join(names, ", "));
  auto ran = sys::run_process({python.string(), "-I", "-c", module_check_script()},
                              {.env = {{"PYTHONHOME", std::nullopt}, {"PYTHONPATH", std::nullopt}},
                               .timeout = std::chrono::minutes(2)});
  if (!ran) return std::move(ran).error();
  log.text += ran->out + ran->err;
  if (auto written = sys::write_file_atomic(log.path, log.text); !written) return written.error();
  if (ran->exit_code != 0 || ran->timed_out) {
    return Error::failed(fmt::format("cannot build {} from source: the installed python does "
                                     "not run",
                                     build.label))
        .because(ran->err.empty() ? fmt::format("exit status {}", ran->exit_code) : ran->err)
        .hint(fmt::format("the whole log: {}", log.path.string()));
  }
  std::vector<std::string> warnings;
  const auto lines = text::split(text::trim(ran->out), '\n');
  unsigned minor = 0;
  if (!lines.empty()) {
    const auto first = text::trim(lines.front());
    std::from_chars(first.data(), first.data() + first.size(), minor);
  }
  for (std::size_t i = 1; i < lines.size(); ++i) {
    warnings.push_back(
        missing_module_warning(build.label, std::string(text::trim(lines[i])), minor));
  }
  for (const auto& warning : warnings)
    log.text += "# warning: " + warning + "\n";
  if (auto written = sys::write_file_atomic(log.path, log.text); !written) return written.error();
  return warnings;
}

}  // namespace envkit::build
