// `envkit run`, `envkit shell` and `envkit activate` as a user meets them: the
// real binary, a prefix installed by `envkit install --frozen` from fixture
// archives served by nginx (a fake CUDA whose nvcc is a script), and, where
// /usr/local/cuda exists, the real nvcc and libcudart found by CMake.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <fstream>

#include "envkit/sys/fs.hpp"
#include "install_support.hpp"
#include "support/http_server.hpp"
#include "support/temp_dir.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using Env = std::map<std::string, std::optional<std::string>>;

// A CUDA shaped like NVIDIA's archives, small: a runtime with its links, a
// header, and an nvcc that says which it is.
std::vector<FixtureComponent> fake_cuda(const std::string& release) {
  return {
      {.name = "cuda_cudart",
       .version = "12.4.127",
       .files = {{.path = "lib/libcudart.so.12.4.127", .content = "cudart\n"},
                 {.path = "lib/libcudart.so.12", .symlink_target = "libcudart.so.12.4.127"},
                 {.path = "lib/libcudart.so", .symlink_target = "libcudart.so.12"},
                 {.path = "include/cuda_runtime.h", .content = "#pragma once\n"}}},
      {.name = "cuda_nvcc",
       .version = "12.4.131",
       .files = {{.path = "bin/nvcc",
                  .content = "#!/bin/sh\necho \"nvcc from the prefix, release " + release + "\"\n",
                  .executable = true}}}};
}

// A Python the prefix holds (python-build-standalone puts it in bin/).
FixtureComponent fake_python() {
  return {.name = "python",
          .version = "3.12.3",
          .files = {{.path = "bin/python3",
                     // Answers install's interpreter check (`python3 -I -B -c ...`) like a Python.
                     .content = "#!/bin/sh\n"
                                "if [ \"$1\" = -I ]; then echo '{\"version\": \"3.11.9\", "
                                "\"site\": \"lib/python3.11/site-packages\", \"failed\": []}'; "
                                "exit 0; fi\n"
                                "echo \"prefix python, PYTHONHOME=${PYTHONHOME-unset}\"\n",
                     .executable = true}}};
}

// A project (whose folder name may hold spaces and quotes) with its own cache.
class Project {
 public:
  explicit Project(const std::string& name = "project") : root_(dir_.path() / name) {
    fs::create_directories(root_);
  }

  [[nodiscard]] const TempDir& dir() const { return dir_; }
  [[nodiscard]] const fs::path& root() const { return root_; }
  [[nodiscard]] fs::path prefix() const { return root_ / ".envkit" / "env"; }

  // Installs `packages` ({name, components}) from nginx with --frozen.
  void install(const std::vector<std::pair<std::string, std::vector<FixtureComponent>>>& packages) {
    const RedistMirror mirror(dir_.path() / "www");
    fs::create_directories(mirror.root());
    const StaticHttpServer server(mirror.root());
    std::vector<LockedSpec> specs;
    for (const auto& [name, components] : packages) {
      specs.push_back({name, "12.4.1", {}});
      for (const auto& component : components)
        specs.back().artifacts.push_back(
            lock_artifact(mirror.add_archive(component), server.url("")));
    }
    std::ofstream(root_ / "envkit.lock") << lock_text(specs);
    const auto r = envkit({"install", "--frozen"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }

  // envkit in this project, with `env` on top of the test's own environment.
  [[nodiscard]] sys::ProcessOutput envkit(std::vector<std::string> args, Env env = {},
                                          std::string stdin_data = {}) const {
    std::vector<std::string> all = {"-C", root_.string(), "--cache-dir",
                                    (dir_.path() / "cache").string()};
    all.insert(all.end(), args.begin(), args.end());
    return run_envkit({.args = all, .env = std::move(env), .stdin_data = std::move(stdin_data)});
  }

 private:
  TempDir dir_;
  fs::path root_;
};

sys::ProcessOutput run(const std::vector<std::string>& argv, Env env = {}) {
  auto result = sys::run_process(argv, {.env = std::move(env), .timeout = std::chrono::minutes(2)});
  REQUIRE(result);
  return *std::move(result);
}

// A folder outside the prefix holding the given files (CUDA of another install).
fs::path outside_files(const TempDir& dir, const std::vector<std::string>& names) {
  const auto folder = dir.path() / "other-cuda";
  for (const auto& name : names) {
    const auto path = dir.write(fs::path("other-cuda") / name, "#!/bin/sh\necho other\n");
    ::chmod(path.c_str(), 0755);
  }
  return folder;
}

TEST_CASE("envkit run gives the command the prefix's environment", "[cli][activation]") {
  if (nginx_missing()) return;
  Project project;
  project.install({{"cuda", fake_cuda("12.4")}});
  const auto prefix = project.prefix().string();
  const Env inherited = {{"PATH", "/usr/bin:/bin"},
                         {"LD_LIBRARY_PATH", ""},
                         {"CPATH", std::nullopt},
                         {"LIBRARY_PATH", "/usr/lib/x86_64-linux-gnu"},
                         {"CUDA_HOME", "/usr/local/cuda"}};

  SECTION("CUDA_HOME is the prefix, by the name the user knows, not its generation") {
    const auto r = project.envkit({"run", "--", "sh", "-c", "echo $CUDA_HOME"}, inherited);
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out == prefix + "\n");
  }
  SECTION("every variable, with no empty list element") {
    const auto r = project.envkit(
        {"run", "--", "sh", "-c",
         "printf '%s\\n' \"$PATH\" \"$LD_LIBRARY_PATH\" \"$CPATH\" \"$LIBRARY_PATH\" "
         "\"$PKG_CONFIG_PATH\" \"$CUDA_PATH\" \"$CUDAToolkit_ROOT\" \"$ENVKIT_PREFIX\""},
        inherited);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out == prefix + "/bin:/usr/bin:/bin\n" +  // PATH
                       prefix + "/lib\n" +            // LD_LIBRARY_PATH was empty
                       prefix + "/include\n" +        // CPATH was unset
                       prefix + "/lib:/usr/lib/x86_64-linux-gnu\n" + prefix + "/lib/pkgconfig\n" +
                       prefix + "\n" + prefix + "\n" + prefix + "\n");
  }
  SECTION("the prefix's nvcc, with or without --") {
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"run", "--", "nvcc", "--version"}, {"run", "nvcc", "--version"}}) {
      const auto r = project.envkit(args, inherited);
      INFO(r.err);
      CHECK(r.exit_code == 0);
      CHECK(r.out == "nvcc from the prefix, release 12.4\n");
    }
  }
  SECTION("the prefix's nvcc wins over one earlier on the inherited PATH") {
    const auto other = outside_files(project.dir(), {"nvcc"});
    const auto r = project.envkit({"run", "--", "sh", "-c", "command -v nvcc; nvcc"},
                                  {{"PATH", other.string() + ":/usr/bin:/bin"}});
    CHECK(r.out == prefix + "/bin/nvcc\nnvcc from the prefix, release 12.4\n");
    CHECK(r.err.empty());  // nothing shadows what the prefix has
  }
  SECTION("--prefix names the prefix, relative to -C") {
    const auto r = project.envkit({"run", "--prefix", ".envkit/env", "--", "printenv", "CUDA_PATH"},
                                  inherited);
    CHECK(r.out == prefix + "\n");
  }
  SECTION("stdin and stdout pass through") {
    const auto r = project.envkit({"run", "--", "cat"}, inherited, "hello\n");
    CHECK(r.exit_code == 0);
    CHECK(r.out == "hello\n");
  }
}

TEST_CASE("envkit run passes the command's exit status through", "[cli][activation]") {
  if (nginx_missing()) return;
  Project project;
  project.install({{"cuda", fake_cuda("12.4")}});
  const Env env = {{"PATH", "/usr/bin:/bin"}};

  CHECK(project.envkit({"run", "--", "sh", "-c", "exit 7"}, env).exit_code == 7);
  CHECK(project.envkit({"run", "--", "true"}, env).exit_code == 0);
  // Killed by SIGTERM: a shell reports 128+15, as run_process does.
  CHECK(project.envkit({"run", "--", "sh", "-c", "kill -TERM $$"}, env).exit_code == 143);

  const auto missing = project.envkit({"run", "--", "no-such-tool", "x"}, env);
  CHECK(missing.exit_code == 127);
  CHECK_THAT(missing.err, Catch::Contains("error: command not found: `no-such-tool`"));
  CHECK(missing.out.empty());

  const auto no_command = project.envkit({"run"}, env);
  CHECK(no_command.exit_code == 2);
}

TEST_CASE("the command does not inherit envkit's ignored SIGPIPE", "[cli][activation]") {
  if (nginx_missing()) return;
  Project project;
  project.install({{"cuda", fake_cuda("12.4")}});
  const auto r = project.envkit({"run", "--", "grep", "SigIgn", "/proc/self/status"},
                                {{"PATH", "/usr/bin:/bin"}});
  REQUIRE(r.exit_code == 0);
  const auto mask = std::stoull(r.out.substr(r.out.find(':') + 1), nullptr, 16);
  CHECK((mask & (1ULL << (SIGPIPE - 1))) == 0);
}

TEST_CASE("a prefix with a Python puts it first and drops PYTHONHOME", "[cli][activation]") {
  if (nginx_missing()) return;
  Project project;
  project.install({{"cuda", fake_cuda("12.4")}, {"python", {fake_python()}}});
  const auto r = project.envkit({"run", "--", "python3"},
                                {{"PATH", "/usr/bin:/bin"}, {"PYTHONHOME", "/opt/other"}});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "prefix python, PYTHONHOME=unset\n");
}

TEST_CASE("without an installed prefix: exit 1 and a hint to install", "[cli][activation]") {
  Project project;
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"run", "--", "true"}, {"shell"}, {"activate", "--shell", "bash"}}) {
    INFO(args[0]);
    const auto r = project.envkit(args);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::StartsWith("error: nothing is installed in `" +
                                        project.prefix().string() + "`\n"));
    CHECK_THAT(r.err, Catch::Contains("hint: run `envkit install` first"));
    CHECK(r.out.empty());
  }
}

TEST_CASE("activate --shell bash, evaluated by bash, then deactivated", "[cli][activation]") {
  if (nginx_missing()) return;
  // A space and a quote in the path: every value must reach the shell intact.
  Project project("it's a project");
  project.install({{"cuda", fake_cuda("12.4")}});
  const auto prefix = project.prefix().string();
  const std::string path = "/usr/bin:/bin";
  // No inherited LD_LIBRARY_PATH (a CUDA machine often has one): the script extends it.
  const auto script = project.envkit({"activate", "--shell", "bash"},
                                     {{"PATH", path}, {"LD_LIBRARY_PATH", std::nullopt}});
  INFO(script.err);
  REQUIRE(script.exit_code == 0);

  const auto r = run({"bash", "-c",
                      "eval \"$ACTIVATE\"; command -v nvcc; nvcc; printf '%s\\n' \"$CUDA_HOME\" "
                      "\"$LD_LIBRARY_PATH\"; envkit_deactivate; printf '%s|%s|%s\\n' \"$PATH\" "
                      "\"${CUDA_HOME-unset}\" \"${LD_LIBRARY_PATH-unset}\"; command -v nvcc || "
                      "echo no nvcc"},
                     {{"ACTIVATE", script.out},
                      {"PATH", path},
                      {"CUDA_HOME", std::nullopt},
                      {"LD_LIBRARY_PATH", std::nullopt}});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == prefix + "/bin/nvcc\n" + "nvcc from the prefix, release 12.4\n" + prefix + "\n" +
                     prefix + "/lib\n" + path + "|unset|unset\n" + "no nvcc\n");
}

TEST_CASE("an activated shell sees a later install's switch", "[cli][activation]") {
  if (nginx_missing()) return;
  Project project;
  project.install({{"cuda", fake_cuda("12.4")}});
  const auto script = project.envkit({"activate", "--shell", "bash"}, {{"PATH", "/usr/bin:/bin"}});
  REQUIRE(script.exit_code == 0);
  CHECK_THAT(script.out, !Catch::Contains(".generations"));
  project.install({{"cuda", fake_cuda("12.6")}});  // generation 2
  const auto r = run({"bash", "-c", "eval \"$ACTIVATE\"; nvcc"},
                     {{"ACTIVATE", script.out}, {"PATH", "/usr/bin:/bin"}});
  CHECK(r.out == "nvcc from the prefix, release 12.6\n");
}

TEST_CASE("activate picks the shell from $SHELL, and refuses one it cannot write for",
          "[cli][activation]") {
  if (nginx_missing()) return;
  Project project;
  project.install({{"cuda", fake_cuda("12.4")}});
  const auto fish = project.envkit({"activate"}, {{"SHELL", "/usr/bin/fish"}});
  CHECK(fish.exit_code == 0);
  CHECK_THAT(fish.out, Catch::Contains("set -gx CUDA_HOME '" + project.prefix().string() + "'"));
  const auto tcsh = project.envkit({"activate"}, {{"SHELL", "/bin/tcsh"}});
  CHECK(tcsh.exit_code == 2);
  CHECK_THAT(tcsh.err, Catch::Contains("--shell bash"));
  CHECK(project.envkit({"activate", "--shell", "csh"}).exit_code == 2);
}

// zsh and fish, each checked by its own binary where it is installed. `print_path` prints
// PATH as one colon-separated line (fish keeps it as a list).
void check_other_shell(const Project& project, const std::string& shell, const std::string& load,
                       const std::string& print_path) {
  if (program_missing(shell)) return;
  const auto script = project.envkit({"activate", "--shell", shell}, {{"PATH", "/usr/bin:/bin"}});
  REQUIRE(script.exit_code == 0);
  const auto r = run({shell, "-c", load + "; command -v nvcc; envkit_deactivate; " + print_path},
                     {{"ACTIVATE", script.out}, {"PATH", "/usr/bin:/bin"}});
  INFO(r.err);
  CHECK(r.out == project.prefix().string() + "/bin/nvcc\n/usr/bin:/bin\n");
}

TEST_CASE("activate for zsh and fish, where they are installed", "[cli][activation]") {
  if (nginx_missing()) return;
  Project project("my project");
  project.install({{"cuda", fake_cuda("12.4")}});
  check_other_shell(project, "zsh", "eval \"$ACTIVATE\"", "echo $PATH");
  check_other_shell(project, "fish", "echo $ACTIVATE | source", "string join : $PATH");
}

TEST_CASE("envkit shell starts $SHELL in the environment", "[cli][activation]") {
  if (nginx_missing()) return;
  Project project;
  project.install({{"cuda", fake_cuda("12.4")}});
  const auto prefix = project.prefix().string();
  const std::string commands = "echo \"$ENVKIT_SHELL $CUDA_HOME\"; command -v nvcc; exit 3\n";
  SECTION("$SHELL") {
    const auto r =
        project.envkit({"shell"}, {{"SHELL", "/bin/sh"}, {"PATH", "/usr/bin:/bin"}}, commands);
    CHECK(r.exit_code == 3);
    CHECK(r.out == "1 " + prefix + "\n" + prefix + "/bin/nvcc\n");
    CHECK_THAT(r.err, Catch::Contains("a shell in the environment of `" + prefix + "`"));
  }
  SECTION("bash where $SHELL is unset") {
    const auto r = project.envkit({"shell"}, {{"SHELL", std::nullopt}, {"PATH", "/usr/bin:/bin"}},
                                  commands + "echo not reached\n");
    CHECK(r.exit_code == 3);
    CHECK(r.out == "1 " + prefix + "\n" + prefix + "/bin/nvcc\n");
  }
}

TEST_CASE("a CUDA library the prefix lacks, found on the inherited path, is named",
          "[cli][activation]") {
  if (nginx_missing()) return;
  Project project;
  project.install({{"cuda", fake_cuda("12.4")}});
  // Another install's cuDNN (the prefix has none) and cudart (the prefix has
  // the same soname, so it is never loaded from there).
  const auto other = outside_files(project.dir(), {"libcudnn.so.8", "libcudart.so.12"});
  const auto r = project.envkit({"run", "--", "sh", "-c", "exit 4"},
                                {{"PATH", "/usr/bin:/bin"}, {"LD_LIBRARY_PATH", other.string()}});
  CHECK(r.exit_code == 4);  // a warning, not a stop
  CHECK(r.err == "warning: programs that need libcudnn.so.8 will load `" +
                     (other / "libcudnn.so.8").string() +
                     "` (from the inherited LD_LIBRARY_PATH): the prefix has no libcudnn.so.8\n");
}

TEST_CASE("a prefix without nvcc runs quietly, and doctor names the nvcc a build would run",
          "[cli][activation]") {
  if (nginx_missing()) return;
  Project project;
  project.install({{"cuda", {fake_cuda("12.4").front()}}});  // the runtime only
  const auto other = outside_files(project.dir(), {"nvcc"});
  const Env path = {{"PATH", other.string() + ":/usr/bin:/bin"}};
  const auto r = project.envkit({"run", "--", "nvcc"}, path);
  CHECK(r.out == "other\n");
  CHECK(r.err.empty());  // nothing is wrong with a prefix without nvcc
  // doctor says it once, on stdout with its other findings.
  const auto doctor = project.envkit({"doctor"}, path);
  CHECK_THAT(doctor.out, Catch::Contains("PATH finds nvcc at " + (other / "nvcc").string()));
  CHECK_THAT(doctor.out, !Catch::Contains("outside the prefix (which has no bin/nvcc)"));
  // -v also says which inherited values were replaced.
  const auto verbose = project.envkit(
      {"-v", "run", "--", "true"}, {{"PATH", "/usr/bin:/bin"}, {"CUDA_HOME", "/usr/local/cuda"}});
  CHECK_THAT(verbose.err, Catch::Contains("CUDA_HOME was `/usr/local/cuda`"));
}

// The real CUDA of /usr/local/cuda (cudart, crt, and nvcc's driver program),
// repacked as NVIDIA redist archives and installed once for the tests below.
struct RealCuda {
  Project project;
  bool cuda_found = false;
  bool ready = false;

  RealCuda() {
    auto runtime = real_cuda_component("nvidia_cuda_runtime-", "cuda_cudart");
    auto crt = real_cuda_component("nvidia_cuda_crt-", "cuda_crt");
    auto nvcc = real_cuda_component("nvidia_cuda_nvcc-", "cuda_nvcc");
    cuda_found = runtime && crt && nvcc;
    if (!cuda_found || !StaticHttpServer::available()) return;
    std::erase_if(nvcc->files, [](const FixtureFile& file) {
      return file.path != "bin/nvcc" && file.path != "bin/nvcc.profile" &&
             !file.path.starts_with("bin/crt/");
    });
    // real_cuda_component adds the development link NVIDIA's redist archives
    // carry (libcudart.so), without which find_library(cudart) finds the machine's.
    project.install({{"cuda", {*runtime, *crt, *nvcc}}});
    ready = true;
  }
};

// The installed real CUDA, or nullptr with the skip recorded.
const RealCuda* real_cuda(std::source_location where = std::source_location::current()) {
  static const RealCuda cuda;
  if (!cuda.cuda_found) {
    skip_test(SkipKind::expected, "no CUDA 13 tree with dist-info under /usr/local/cuda", where);
    return nullptr;
  }
  if (nginx_missing(where)) return nullptr;
  REQUIRE(cuda.ready);
  return &cuda;
}

TEST_CASE("envkit run -- nvcc --version runs the prefix's real nvcc", "[cli][activation][cuda]") {
  const auto* cuda = real_cuda();
  if (!cuda) return;
  // /usr/local/cuda/bin first on the inherited PATH: the prefix's still wins.
  const auto r = cuda->project.envkit({"run", "--", "sh", "-c", "command -v nvcc; nvcc --version"},
                                      {{"PATH", "/usr/local/cuda/bin:/usr/bin:/bin"}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::StartsWith(cuda->project.prefix().string() + "/bin/nvcc\n"));
  CHECK_THAT(r.out, Catch::Contains("Cuda compilation tools"));
}

// The value of `message(STATUS "envkit-probe NAME=VALUE")` in CMake's output.
std::string probe_value(const std::string& output, const std::string& name) {
  const auto key = "envkit-probe " + name + "=";
  const auto at = output.find(key);
  if (at == std::string::npos) return {};
  const auto start = at + key.size();
  return output.substr(start, output.find('\n', start) - start);
}

TEST_CASE("CMake's find_package(CUDAToolkit) finds the prefix under envkit run",
          "[cli][activation][cuda]") {
  if (program_missing("cmake")) return;
  const auto* cuda = real_cuda();
  if (!cuda) return;
  TempDir work;
  work.write("src/CMakeLists.txt",
             "cmake_minimum_required(VERSION 3.17)\n"
             "project(probe LANGUAGES CXX)\n"
             "find_package(CUDAToolkit REQUIRED)\n"
             "message(STATUS \"envkit-probe nvcc=${CUDAToolkit_NVCC_EXECUTABLE}\")\n"
             "message(STATUS \"envkit-probe bin=${CUDAToolkit_BIN_DIR}\")\n"
             "message(STATUS \"envkit-probe lib=${CUDAToolkit_LIBRARY_DIR}\")\n"
             "message(STATUS \"envkit-probe include=${CUDAToolkit_INCLUDE_DIRS}\")\n"
             "message(STATUS \"envkit-probe version=${CUDAToolkit_VERSION}\")\n");
  // The machine's own CUDA is on PATH and in CUDA_HOME, as on a workstation.
  const auto r = cuda->project.envkit(
      {"run", "--", "cmake", "-S", (work.path() / "src").string(), "-B",
       (work.path() / "build").string()},
      {{"PATH", "/usr/local/cuda/bin:/usr/bin:/bin"}, {"CUDA_HOME", "/usr/local/cuda"}});
  INFO(r.out);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto prefix = cuda->project.prefix();
  // CMake may record the generation the prefix points at: the same folders.
  const auto is = [](const std::string& found, const fs::path& expected) {
    std::error_code ignored;
    return !found.empty() && fs::equivalent(found, expected, ignored);
  };
  CHECK(is(probe_value(r.out, "nvcc"), prefix / "bin" / "nvcc"));
  CHECK(is(probe_value(r.out, "bin"), prefix / "bin"));
  CHECK(is(probe_value(r.out, "lib"), prefix / "lib"));
  CHECK(is(probe_value(r.out, "include"), prefix / "include"));
  CHECK_THAT(probe_value(r.out, "version"), Catch::StartsWith("13.0"));
}

}  // namespace
}  // namespace envkit::test
