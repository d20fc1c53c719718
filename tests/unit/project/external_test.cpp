#include "envkit/project/external.hpp"

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "support/skip.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
namespace project = envkit::project;
using envkit::ErrorCode;
using envkit::manifest::ExternalPath;
using envkit::manifest::ExternalSource;
using envkit::manifest::ExternalSystem;
using envkit::test::TempDir;

// What nvcc of a CUDA 13.0 toolkit prints (/usr/local/cuda-13.0/bin/nvcc --version).
constexpr std::string_view kNvcc13 =
    "nvcc: NVIDIA (R) Cuda compiler driver\n"
    "Copyright (c) 2005-2025 NVIDIA Corporation\n"
    "Built on Wed_Aug_20_01:58:59_PM_PDT_2025\n"
    "Cuda compilation tools, release 13.0, V13.0.88\n"
    "Build cuda_13.0.r13.0/compiler.36424714_0\n";

// CUDA 9.0's nvcc, which has no `Build` line.
constexpr std::string_view kNvcc9 =
    "nvcc: NVIDIA (R) Cuda compiler driver\n"
    "Copyright (c) 2005-2017 NVIDIA Corporation\n"
    "Built on Fri_Sep__1_21:08:03_CDT_2017\n"
    "Cuda compilation tools, release 9.0, V9.0.176\n";

// The head of a CUDA toolkit's version.json.
constexpr std::string_view kVersionJson = R"json({
   "cuda" : {
      "name" : "CUDA SDK",
      "version" : "12.4.1"
   },
   "cuda_cudart" : {
      "name" : "CUDA Runtime (cudart)",
      "version" : "12.4.127"
   }
})json";

// `text` as one single-quoted shell word.
std::string shell_quoted(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

// A real executable: a shell script that prints `out` on stdout (and `err` on
// stderr) and exits with `code`. It uses shell builtins only: tests change PATH.
fs::path write_tool(const TempDir& dir, const fs::path& relative, std::string_view out,
                    std::string_view err = {}, int code = 0) {
  std::string script = "#!/bin/sh\n";
  if (!out.empty()) script += "printf '%s\\n' " + shell_quoted(out) + "\n";
  if (!err.empty()) script += "printf '%s\\n' " + shell_quoted(err) + " >&2\n";
  script += "exit " + std::to_string(code) + "\n";
  const auto path = dir.write(relative, script);
  fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec,
                  fs::perm_options::replace);
  return path;
}

// Sets PATH for the scope of a test, then puts it back.
class ScopedPath {
 public:
  explicit ScopedPath(const std::string& value) {
    if (const char* old = ::getenv("PATH")) old_ = old;
    ::setenv("PATH", value.c_str(), 1);
  }
  ~ScopedPath() {
    if (old_) {
      ::setenv("PATH", old_->c_str(), 1);
    } else {
      ::unsetenv("PATH");
    }
  }
  ScopedPath(const ScopedPath&) = delete;
  ScopedPath& operator=(const ScopedPath&) = delete;

 private:
  std::optional<std::string> old_;
};

project::ExternalVersion resolved(std::string_view package, const ExternalSource& source,
                                  const fs::path& manifest_dir) {
  auto version = project::resolve_external(package, source, manifest_dir);
  INFO((version ? "" : version.error().to_string()));
  REQUIRE(version);
  return *std::move(version);
}

envkit::Error failure(std::string_view package, const ExternalSource& source,
                      const fs::path& manifest_dir) {
  auto version = project::resolve_external(package, source, manifest_dir);
  REQUIRE_FALSE(version);
  return version.error();
}

}  // namespace

TEST_CASE("python --version outputs", "[project][external]") {
  CHECK(project::parse_python_version("Python 3.6.9\n").value().original() == "3.6.9");
  CHECK(project::parse_python_version("Python 3.12.0rc1\n").value().original() == "3.12.0rc1");
  CHECK(project::parse_python_version("Python 2.7.18\n").value().original() == "2.7.18");
  CHECK(project::parse_python_version("Python 3.13.0+\n").value().original() == "3.13.0");

  auto shim = project::parse_python_version("pyenv: python3: command not found\n");
  REQUIRE_FALSE(shim);
  CHECK(shim.error().message() == "no Python version in `pyenv: python3: command not found`");
  CHECK_FALSE(project::parse_python_version(""));
  CHECK_FALSE(project::parse_python_version("Python three\n"));
}

TEST_CASE("nvcc --version outputs", "[project][external]") {
  CHECK(project::parse_nvcc_version(kNvcc13).value().original() == "13.0.88");
  CHECK(project::parse_nvcc_version(kNvcc9).value().original() == "9.0.176");
  auto other = project::parse_nvcc_version("nvcc: command not found\nsecond line\n");
  REQUIRE_FALSE(other);
  CHECK(other.error().message() ==
        "no `release N.N, VN.N.N` line in `nvcc: command not found\\nsecond line`");
}

TEST_CASE("a CUDA installation's version.json", "[project][external]") {
  CHECK(project::parse_cuda_version_json(kVersionJson, "version.json").value().original() ==
        "12.4.1");
  CHECK(project::parse_cuda_version_json("{\"cuda\": {}}", "v.json").error().message() ==
        "v.json has no `cuda` `version`");
  CHECK(project::parse_cuda_version_json("{", "v.json").error().message() ==
        "v.json is not valid JSON");
  CHECK(project::parse_cuda_version_json(R"({"cuda": {"version": "twelve"}})", "v.json")
            .error()
            .message() == "v.json: `cuda` `version` `twelve` is not a version");
}

TEST_CASE("a version given in the manifest is taken as it is", "[project][external]") {
  const auto version = envkit::specs::Version::parse("3.6.9").value();
  const auto python = resolved("python", version, "/nowhere");
  CHECK(python.version.original() == "3.6.9");
  CHECK(python.description == "given in envkit.yaml");
  // Any package may be given a version, detectable or not.
  CHECK(resolved("zlib", envkit::specs::Version::parse("1.2.11").value(), "/nowhere")
            .version.original() == "1.2.11");
}

TEST_CASE("`system` runs python3 and nvcc found on PATH", "[project][external]") {
  TempDir dir;
  const auto python3 = write_tool(dir, "bin/python3", "Python 3.6.9");
  const auto nvcc = write_tool(dir, "bin/nvcc", kNvcc13);
  const ScopedPath path((dir.path() / "empty").string() + ":" + (dir.path() / "bin").string());

  const auto python = resolved("python", ExternalSystem{}, dir.path());
  CHECK(python.version.original() == "3.6.9");
  CHECK(python.description == "python3 on PATH (" + python3.string() + ")");

  const auto cuda = resolved("cuda", ExternalSystem{}, dir.path());
  CHECK(cuda.version.original() == "13.0.88");
  CHECK(cuda.description == "nvcc on PATH (" + nvcc.string() + ")");

  SECTION("Python 2 prints its version on stderr") {
    write_tool(dir, "bin/python3", "", "Python 2.7.18");
    CHECK(resolved("python", ExternalSystem{}, dir.path()).version.original() == "2.7.18");
  }
}

TEST_CASE("`system` without the tool on PATH names what it looked for", "[project][external]") {
  TempDir dir;
  const ScopedPath path((dir.path() / "empty").string());
  const auto python = failure("python", ExternalSystem{}, dir.path());
  CHECK(python.code() == ErrorCode::failed);
  CHECK(python.message() == "`python3` is not on PATH");
  CHECK(python.causes().at(0) ==
        "`external: {python: system}` reads the version from `python3 --version`");
  CHECK(python.hints().at(0) == "give the version instead, e.g. `external: {python: \"3.6.9\"}`");

  const auto cuda = failure("cuda", ExternalSystem{}, dir.path());
  CHECK(cuda.message() == "`nvcc` is not on PATH");
  CHECK(cuda.hints().at(0) == "give the version instead, e.g. `external: {cuda: \"12.4.1\"}`");
}

TEST_CASE("a path names the tool or the folder it is in", "[project][external]") {
  TempDir dir;
  SECTION("python: the file itself, relative to the manifest") {
    const auto tool = write_tool(dir, "tools/python3.6", "Python 3.6.9");
    const auto python = resolved("python", ExternalPath{"./tools/python3.6"}, dir.path());
    CHECK(python.version.original() == "3.6.9");
    CHECK(python.description == tool.string());
  }
  SECTION("python: a folder's bin/python3") {
    const auto tool = write_tool(dir, "opt/py/bin/python3", "Python 3.12.0rc1");
    const auto python = resolved("python", ExternalPath{dir.path() / "opt" / "py"}, "/nowhere");
    CHECK(python.version.original() == "3.12.0rc1");
    CHECK(python.description == tool.string());
  }
  SECTION("cuda: a folder's bin/nvcc, before its version.json") {
    const auto tool = write_tool(dir, "cuda/bin/nvcc", kNvcc13);
    dir.write("cuda/version.json", kVersionJson);
    const auto cuda = resolved("cuda", ExternalPath{"cuda"}, dir.path());
    CHECK(cuda.version.original() == "13.0.88");
    CHECK(cuda.description == tool.string());
  }
  SECTION("cuda: a folder's version.json when it has no nvcc") {
    const auto json = dir.write("cuda/version.json", kVersionJson);
    const auto cuda = resolved("cuda", ExternalPath{"cuda"}, dir.path());
    CHECK(cuda.version.original() == "12.4.1");
    CHECK(cuda.description == json.string());
  }
  SECTION("cuda: a folder with neither") {
    fs::create_directories(dir.path() / "cuda" / "bin");
    const auto error = failure("cuda", ExternalPath{"cuda"}, dir.path());
    const auto folder = dir.path() / "cuda";
    CHECK(error.message() == "no cuda at `" + folder.string() + "`");
    CHECK(error.causes().at(0) == "looked for `" + (folder / "bin" / "nvcc").string() + "` and `" +
                                      (folder / "version.json").string() + "`");
    CHECK(error.hints().at(0) == "give the version instead, e.g. `external: {cuda: \"12.4.1\"}`");
  }
  SECTION("python: a folder without bin/python3") {
    fs::create_directories(dir.path() / "py");
    const auto error = failure("python", ExternalPath{"py"}, dir.path());
    CHECK(error.message() == "no python at `" + (dir.path() / "py").string() + "`");
    CHECK(error.causes().at(0) ==
          "looked for `" + (dir.path() / "py" / "bin" / "python3").string() + "`");
  }
  SECTION("a path that does not exist") {
    const auto error = failure("python", ExternalPath{"missing/python3"}, dir.path());
    CHECK(error.code() == ErrorCode::failed);
    CHECK(error.message() ==
          "`" + (dir.path() / "missing" / "python3").string() + "` does not exist");
    CHECK(error.hints().at(0) == "give the version instead, e.g. `external: {python: \"3.6.9\"}`");
  }
}

TEST_CASE("a tool that fails or prints something else is quoted", "[project][external]") {
  TempDir dir;
  SECTION("output envkit does not understand") {
    const auto tool = write_tool(dir, "python3", "hello\nworld");
    const auto error = failure("python", ExternalPath{tool}, dir.path());
    CHECK(error.code() == ErrorCode::failed);
    CHECK(error.message() ==
          "envkit does not understand the output of `" + tool.string() + " --version`");
    CHECK(error.causes().at(0) == "it printed `hello\\nworld`");
    CHECK(error.hints().at(0) == "give the version instead, e.g. `external: {python: \"3.6.9\"}`");
  }
  SECTION("a non-zero exit") {
    const auto tool = write_tool(dir, "bin/nvcc", "", "nvcc: libcrypt.so.1: not found", 127);
    const auto error = failure("cuda", ExternalPath{dir.path()}, dir.path());
    CHECK(error.message() == "`" + tool.string() + " --version` failed with exit code 127");
    CHECK(error.causes().at(0) == "it printed `nvcc: libcrypt.so.1: not found`");
  }
  SECTION("a file that cannot run") {
    const auto tool = dir.write("python3", "not a program\n");
    const auto error = failure("python", ExternalPath{tool}, dir.path());
    CHECK(error.message() == "cannot run `" + tool.string() + " --version`");
  }
}

TEST_CASE("only python and cuda versions are detected", "[project][external]") {
  TempDir dir;
  for (const ExternalSource& source :
       {ExternalSource{ExternalSystem{}}, ExternalSource{ExternalPath{"/usr/lib/libz.so"}}}) {
    const auto error = failure("zlib", source, dir.path());
    CHECK(error.code() == ErrorCode::input);
    CHECK(error.message() == "envkit cannot detect the version of `zlib`");
    CHECK(error.causes().at(0) ==
          "envkit detects python (`python3 --version`) and cuda (`nvcc --version`) only");
    CHECK(error.hints().at(0) == "give the version instead, e.g. `external: {zlib: \"1.2.3\"}`");
  }
}

TEST_CASE("the real CUDA toolkit in /usr/local/cuda", "[project][external][host]") {
  const fs::path cuda_dir = "/usr/local/cuda";
  if (!fs::exists(cuda_dir / "bin" / "nvcc")) {
    envkit::test::skip_test(envkit::test::SkipKind::expected,
                            "no CUDA toolkit at " + cuda_dir.string());
    return;
  }
  const auto cuda = resolved("cuda", ExternalPath{cuda_dir}, "/");
  INFO(cuda.description << ": " << cuda.version.original());
  CHECK(cuda.description == (cuda_dir / "bin" / "nvcc").string());
  CHECK(cuda.version.release().size() == 3);
  CHECK(cuda.version.major() >= 9);

  const ScopedPath path((cuda_dir / "bin").string());
  const auto on_path = resolved("cuda", ExternalSystem{}, "/");
  CHECK(on_path.version == cuda.version);
  CHECK(on_path.description == "nvcc on PATH (" + (cuda_dir / "bin" / "nvcc").string() + ")");
}
