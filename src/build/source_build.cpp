#include "envkit/build/source_build.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <thread>

#include "envkit/build/cpython_build.hpp"
#include "envkit/core/env_vars.hpp"
#include "envkit/core/text.hpp"
#include "envkit/store/fs_error.hpp"
#include "envkit/sys/fs.hpp"
#include "envkit/sys/process.hpp"

namespace envkit::build {

// This module builds on the store: its cache, records, links and generations.
using namespace store;

namespace fs = std::filesystem;
using specs::BuildSystem;

namespace {

constexpr std::size_t kTailLines = 20;
constexpr auto kVersionTimeout = std::chrono::seconds(30);

constexpr std::string_view kBuildEssential =
    "install a C compiler and make: `sudo apt-get install build-essential` (Debian, Ubuntu)";

std::string joined(const std::vector<std::string>& words) {
  return text::join(words, " ");
}

// The last `count` lines of `text` (without a final empty line).
std::string last_lines(std::string_view text, std::size_t count) {
  while (!text.empty() && text.back() == '\n')
    text.remove_suffix(1);
  std::size_t start = text.size();
  for (std::size_t lines = 0; lines < count; ++lines) {
    const auto newline = start == 0 ? std::string_view::npos : text.rfind('\n', start - 1);
    if (newline == std::string_view::npos) return std::string(text);
    start = newline;
  }
  return std::string(text.substr(start + 1));
}

bool is_program(const fs::path& path) {
  std::error_code ignored;
  return ::access(path.c_str(), X_OK) == 0 && !fs::is_directory(path, ignored);
}

std::optional<fs::path> find_program(const std::string& name) {
  auto found = sys::find_on_path(name);
  if (!found || !is_program(*found)) return std::nullopt;
  return found;
}

Error cannot_build(const std::string& label, std::string_view why) {
  return Error::failed(fmt::format("cannot build {} from source: {}", label, why));
}

Error missing_make(const std::string& label) {
  return cannot_build(label, "`make` is not on PATH").hint(std::string(kBuildEssential));
}

Error missing_cmake(const std::string& label) {
  return cannot_build(label, "its sources are built with CMake, and `cmake` is not on PATH")
      .hint("install CMake: `sudo apt-get install cmake` (Debian, Ubuntu)");
}

std::vector<BuildStep> steps_for(const SourceBuild& build, BuildSystem build_system,
                                 const fs::path& destdir) {
  const auto jobs = std::to_string(
      build.jobs > 0 ? build.jobs : std::max(1U, std::thread::hardware_concurrency()));
  const auto& tools = build.toolchain;
  const std::map<std::string, std::optional<std::string>> env = {
      {std::string(env::kCc.name), joined(tools.cc)}};
  if (build_system == BuildSystem::configure || build_system == BuildSystem::cpython) {
    const auto configure = build.source / "configure";
    // A configure script that lost its executable bit still runs with sh.
    std::vector<std::string> run_configure = is_program(configure)
                                                 ? std::vector<std::string>{"./configure"}
                                                 : std::vector<std::string>{"sh", "./configure"};
    run_configure.push_back("--prefix=" + build.prefix.string());
    if (build_system == BuildSystem::cpython) {
      for (auto& argument : cpython_configure_arguments(env::get(env::kLdflags).value_or("")))
        run_configure.push_back(std::move(argument));
    }
    return {
        {.name = "configure", .argv = run_configure, .cwd = build.source, .env = env},
        {.name = "make",
         .argv = {tools.make.string(), "-j" + jobs},
         .cwd = build.source,
         .env = env},
        {.name = "make install",
         .argv = {tools.make.string(), "install", "DESTDIR=" + destdir.string()},
         .cwd = build.source,
         .env = env},
    };
  }
  const auto cmake = tools.cmake.value_or("cmake").string();
  const auto binary_dir = (build.work / "build").string();
  auto install_env = env;
  install_env["DESTDIR"] = destdir.string();
  return {
      {.name = "cmake",
       .argv = {cmake, "-S", build.source.string(), "-B", binary_dir, "-G", "Unix Makefiles",
                "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_INSTALL_PREFIX=" + build.prefix.string(),
                "-DCMAKE_INSTALL_LIBDIR=lib"},
       .cwd = build.work,
       .env = env},
      {.name = "cmake --build",
       .argv = {cmake, "--build", binary_dir, "--parallel", jobs},
       .cwd = build.work,
       .env = env},
      {.name = "cmake --install",
       .argv = {cmake, "--install", binary_dir},
       .cwd = build.work,
       .env = install_env},
  };
}

// The compiler a failed build used, and how to choose another.
std::string compiler_hint(const Toolchain& tools) {
  return fmt::format("it was built with {} ({}); set CC to use another compiler",
                     tools.cc_version.empty() ? joined(tools.cc) : tools.cc_version,
                     tools.cc_path.string());
}

}  // namespace

Result<void> start_build_log(BuildLog& log, std::string header) {
  std::error_code error;
  fs::create_directories(log.path.parent_path(), error);
  if (error) return cannot("create", log.path.parent_path(), error);
  log.text = std::move(header) + "\n";
  return sys::write_file_atomic(log.path, log.text);
}

Result<void> run_build_step(const BuildStep& step, const std::string& label,
                            std::chrono::milliseconds timeout, BuildLog& log) {
  log.text += fmt::format("$ {}    (in {})\n", joined(step.argv), step.cwd.string());
  std::vector<std::string> argv = {"/bin/sh", "-c", "exec \"$@\" 2>&1", "sh"};
  argv.insert(argv.end(), step.argv.begin(), step.argv.end());
  auto output = sys::run_process(argv, {.cwd = step.cwd, .env = step.env, .timeout = timeout});
  if (!output) return std::move(output).error();
  log.text += output->out;
  if (!output->out.empty() && output->out.back() != '\n') log.text += '\n';
  const bool failed = output->timed_out || output->exit_code != 0;
  if (failed) {
    log.text += output->timed_out ? "[killed: it ran too long]\n"
                                  : fmt::format("[exit status {}]\n", output->exit_code);
  }
  if (auto written = sys::write_file_atomic(log.path, log.text); !written) return written;
  if (!failed) return {};
  const auto minutes = std::chrono::duration_cast<std::chrono::minutes>(timeout).count();
  auto error = cannot_build(
      label, output->timed_out
                 ? fmt::format("`{}` did not finish in {} minutes", step.name, minutes)
                 : fmt::format("`{}` failed (exit status {})", step.name, output->exit_code));
  const auto tail = last_lines(output->out, kTailLines);
  error.because(tail.empty() ? fmt::format("`{}` printed nothing", step.name)
                             : fmt::format("the last lines of its output:\n{}", tail));
  return error.hint(fmt::format("the whole log: {}", log.path.string()));
}

Result<void> require_build_tools(const Toolchain& toolchain, BuildSystem build_system,
                                 const std::string& label) {
  if (toolchain.make.empty()) return missing_make(label);
  if (build_system == BuildSystem::cmake && !toolchain.cmake) return missing_cmake(label);
  return {};
}

std::string Toolchain::identity() const {
  return fmt::format("cc: {}\npath: {}\nversion: {}", joined(cc), cc_path.string(), cc_version);
}

Result<Toolchain> find_toolchain(const ToolchainOptions& options) {
  const auto from_env = env::get(env::kCc);
  const bool given = options.cc || (from_env && !text::trim(*from_env).empty());
  const std::string cc = options.cc ? *options.cc : given ? *from_env : "cc";
  Toolchain toolchain;
  for (const auto word : text::split(text::trim(cc), ' ')) {
    if (!word.empty()) toolchain.cc.emplace_back(word);
  }
  const auto no_compiler = [&](std::string why) {
    auto error = cannot_build(options.label, "no C compiler").because(std::move(why));
    error.hint(std::string(kBuildEssential));
    if (given) error.hint("or set CC to a C compiler that is installed");
    return error;
  };
  if (toolchain.cc.empty()) return no_compiler("CC is set, to nothing");
  const auto program = find_program(toolchain.cc.front());
  if (!program) {
    return no_compiler(given ? fmt::format("CC names `{}`, which is not an installed program", cc)
                             : std::string("`cc` is not on PATH"));
  }
  std::error_code ignored;
  toolchain.cc_path = fs::canonical(*program, ignored);
  if (toolchain.cc_path.empty()) toolchain.cc_path = *program;
  auto argv = toolchain.cc;
  argv.emplace_back("--version");
  auto version = sys::run_process(argv, {.timeout = kVersionTimeout});
  if (!version || version->exit_code != 0) {
    return no_compiler(
        fmt::format("`{} --version` does not run: {}", cc,
                    version ? last_lines(version->err, 3) : version.error().message()));
  }
  toolchain.cc_version =
      std::string(text::trim(std::string_view(version->out).substr(0, version->out.find('\n'))));
  const auto make = find_program("make");
  if (!make) return missing_make(options.label);
  toolchain.make = *make;
  toolchain.cmake = find_program("cmake");
  return toolchain;
}

Result<BuildSystem> detect_build_system(const fs::path& source, const std::string& label) {
  std::error_code ignored;
  if (fs::is_regular_file(source / "configure", ignored)) return BuildSystem::configure;
  if (fs::is_regular_file(source / "CMakeLists.txt", ignored)) return BuildSystem::cmake;
  return cannot_build(label, "its sources have neither a `configure` script nor a CMakeLists.txt")
      .hint(
          "envkit builds sources with ./configure and make, or with CMake; this package needs "
          "another way, so report it");
}

Result<SourceBuildResult> build_from_source(const SourceBuild& build) {
  BuildSystem build_system = BuildSystem::configure;
  if (build.build_system) {
    build_system = *build.build_system;
  } else {
    auto detected = detect_build_system(build.source, build.label);
    if (!detected) return std::move(detected).error();
    build_system = *detected;
  }
  if (auto tools = require_build_tools(build.toolchain, build_system, build.label); !tools)
    return std::move(tools).error();

  std::error_code error;
  const auto destdir = build.work / "destdir";
  fs::remove_all(destdir, error);
  fs::create_directories(build.work, error);
  if (error) return cannot("create", build.work, error);

  const auto& tools = build.toolchain;
  BuildLog log{.path = build.log, .text = {}};
  auto started = start_build_log(
      log, fmt::format("# envkit: building {} from source\n# build system: {}{}\n# prefix: {}\n"
                       "# CC: {}\n# compiler: {} ({})\n",
                       build.label, specs::to_string(build_system),
                       build.build_system ? "" : " (detected)", build.prefix.string(),
                       joined(tools.cc), tools.cc_version, tools.cc_path.string()));
  if (!started) return std::move(started).error();
  for (const auto& step : steps_for(build, build_system, destdir)) {
    if (auto ran = run_build_step(step, build.label, build.timeout, log); !ran)
      return std::move(ran).error().hint(compiler_hint(tools));
  }

  // What was installed for the prefix sits under DESTDIR at the prefix's own path.
  const auto installed = destdir / build.prefix.relative_path();
  if (!fs::is_directory(installed, error)) {
    return cannot_build(build.label, "its install step put nothing under DESTDIR")
        .because(fmt::format("{} was not made", text::quoted(installed.string())))
        .hint(fmt::format(
            "envkit installs with `make install DESTDIR=...` (or `cmake --install` with DESTDIR "
            "set) and takes what lands there; the whole log: {}",
            build.log.string()));
  }
  std::vector<std::string> warnings;
  if (build_system == BuildSystem::cpython) {
    auto finished = finish_cpython(build, installed, log);
    if (!finished) return std::move(finished).error();
    warnings = *std::move(finished);
  }
  fs::remove(build.install_root, error);  // an empty staging folder may stand there
  error.clear();
  fs::create_directories(build.install_root.parent_path(), error);
  if (!error) fs::rename(installed, build.install_root, error);
  if (error) return cannot("create", build.install_root, error);
  return SourceBuildResult{.build_system = build_system, .warnings = std::move(warnings)};
}

}  // namespace envkit::build
