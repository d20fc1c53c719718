#pragma once

// Python archives in python-build-standalone's layout, made from this
// machine's Debian interpreter (/usr/bin/python3.11 with its stdlib, which
// finds lib/python3.11 beside its bin/ and so runs from wherever it is
// unpacked), packed as upstream packs them (`python/bin/python3`,
// `python/lib/python3.11/...`) and kept in a folder to serve with nginx.
// Shared by python_standalone_test.cpp and closure_e2e_test.cpp.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <source_location>
#include <stdexcept>
#include <string>
#include <vector>

#include "envkit/core/sha256.hpp"
#include "envkit/specs/artifact.hpp"
#include "envkit/sys/process.hpp"
#include "support/http_server.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

namespace envkit::test {
namespace python_archive {

namespace fs = std::filesystem;

inline const fs::path kInterpreter = "/usr/bin/python3.11";
inline const fs::path kStdlib = "/usr/lib/python3.11";

// Parts of the stdlib no check imports: left out to keep the archives small.
inline bool left_out(const fs::path& relative) {
  const auto first = relative.begin()->string();
  for (const auto* skipped : {"test", "idlelib", "tkinter", "turtledemo", "lib2to3",
                              "config-3.11-x86_64-linux-gnu", "site-packages", "dist-packages"}) {
    if (first == skipped) return true;
  }
  for (const auto& part : relative) {
    if (part == "__pycache__") return true;
  }
  return false;
}

inline void run_or_throw(const std::vector<std::string>& argv) {
  auto result = sys::run_process(argv, {.timeout = std::chrono::minutes(2)});
  if (!result) throw std::runtime_error(result.error().to_string());
  if (result->exit_code != 0)
    throw std::runtime_error(argv.front() + " failed: " + result->err + result->out);
}

// `dir`/python/lib/python3.11: the stdlib's files, and its links that stay
// inside it (Debian's sitecustomize.py points into /etc: left out).
inline void copy_stdlib(const fs::path& to) {
  fs::create_directories(to);
  for (auto it = fs::recursive_directory_iterator(kStdlib);
       it != fs::recursive_directory_iterator(); ++it) {
    const auto relative = it->path().lexically_relative(kStdlib);
    if (left_out(relative)) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    const auto target = to / relative;
    const auto status = it->symlink_status();
    if (fs::is_symlink(status)) {
      const auto link = fs::read_symlink(it->path());
      if (link.is_absolute() || link.string().starts_with("..")) continue;
      fs::create_symlink(link, target);
    } else if (fs::is_directory(status)) {
      fs::create_directories(target);
    } else if (fs::is_regular_file(status)) {
      fs::copy_file(it->path(), target);
    }
  }
}

// One archive the tests serve: its file name under the served folder, and its lock entry.
struct PythonArchive {
  std::string file;
  std::string sha256;
  std::uint64_t size = 0;

  [[nodiscard]] specs::Artifact artifact(const StaticHttpServer& server) const {
    return {.platform = specs::Platform::linux_x86_64,
            .component = "python",
            .kind = specs::ArtifactKind::archive,
            .url = server.url("/" + file),
            .sha256 = sha256,
            .size = size,
            .format = "tar.gz",
            .layout = specs::Layout::python_standalone,
            .wheel_root = "",
            .build_system = std::nullopt};
  }
};

// The archives, made once per test run (packing the stdlib takes a second or two).
struct PythonArchives {
  TempDir dir;
  fs::path served = dir.path() / "www";
  std::string version;      // 3.11.2: what the interpreter says it is
  PythonArchive good;       // the whole interpreter
  PythonArchive no_sqlite;  // without lib-dynload's _sqlite3 module
  PythonArchive broken;     // bin/python3 is a script that fails

  PythonArchives() {
    fs::create_directories(served);
    auto said = sys::run_process({kInterpreter.string(), "--version"});
    if (!said || said->exit_code != 0) throw std::runtime_error("python3.11 --version failed");
    version = said->out.substr(said->out.find(' ') + 1);
    while (!version.empty() && (version.back() == '\n' || version.back() == '\r'))
      version.pop_back();

    const auto stage = dir.path() / "good";
    fs::create_directories(stage / "python" / "bin");
    fs::copy_file(kInterpreter, stage / "python" / "bin" / "python3.11");
    fs::create_symlink("python3.11", stage / "python" / "bin" / "python3");
    copy_stdlib(stage / "python" / "lib" / "python3.11");
    good = pack(stage, "cpython-good-install_only.tar.gz");

    for (const auto& entry :
         fs::directory_iterator(stage / "python" / "lib" / "python3.11" / "lib-dynload")) {
      if (entry.path().filename().string().starts_with("_sqlite3")) fs::remove(entry.path());
    }
    no_sqlite = pack(stage, "cpython-no-sqlite-install_only.tar.gz");

    const auto bad = dir.path() / "broken";
    fs::create_directories(bad / "python" / "bin");
    fs::create_directories(bad / "python" / "lib" / "python3.11");
    std::ofstream(bad / "python" / "bin" / "python3")
        << "#!/bin/sh\necho \"fatal: broken build\" >&2\nexit 1\n";
    fs::permissions(bad / "python" / "bin" / "python3", fs::perms(0755));
    std::ofstream(bad / "python" / "lib" / "python3.11" / "os.py") << "# not really os\n";
    broken = pack(bad, "cpython-broken-install_only.tar.gz");
  }

  PythonArchive pack(const fs::path& stage, const std::string& name) const {
    const auto file = served / name;
    // gzip -1: quick to make, and still the real format.
    run_or_throw({"tar", "-C", stage.string(), "--use-compress-program=gzip -1", "-cf",
                  file.string(), "python"});
    auto digest = core::sha256_file(file);
    if (!digest) throw std::runtime_error("cannot hash " + file.string());
    return {.file = name, .sha256 = *digest, .size = fs::file_size(file)};
  }
};

// The archives, or nullptr (the skip recorded, saying why) where this machine
// lacks what they are made of (Debian 12's python3, which scripts/setup
// installs), or nginx to serve them.
inline const PythonArchives* python_archives(
    std::source_location where = std::source_location::current()) {
  if (!fs::exists(kInterpreter) || !fs::exists(kStdlib / "os.py")) {
    skip_test(SkipKind::setup_should_provide,
              "no Debian python3.11 (" + kInterpreter.string() + " with " +
                  (kStdlib / "os.py").string() +
                  ") to make a relocatable Python archive from (scripts/setup installs python3)",
              where);
    return nullptr;
  }
  if (nginx_missing(where)) return nullptr;
  static const PythonArchives archives;
  return &archives;
}

}  // namespace python_archive

using python_archive::kInterpreter;
using python_archive::kStdlib;
using python_archive::python_archives;
using python_archive::PythonArchive;
using python_archive::PythonArchives;

}  // namespace envkit::test
