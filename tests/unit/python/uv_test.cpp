#include "envkit/python/uv.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "envkit/core/text.hpp"
#include "envkit/python/interpreters.hpp"
#include "envkit/sys/fs.hpp"
#include "envkit/sys/process.hpp"
#include "python_test_support.hpp"
#include "support/skip.hpp"

namespace {

namespace fs = std::filesystem;
namespace python = envkit::python;
using envkit::ErrorCode;
using envkit::python::UvPlatform;
using envkit::specs::Version;
using envkit::test::python_fixture;
using envkit::test::ScopedEnv;
using envkit::test::shell_quoted;
using envkit::test::TempDir;
using envkit::test::write_tool;

constexpr std::string_view kWindowsLock =
    "nvidia-cudnn-cu12-9.1.0.70.windows.uv-0.13.9.pylock.toml";

// A stand-in uv that records its arguments in `args.txt` beside it and copies
// `lock` to where -o points.
fs::path write_recording_uv(const TempDir& dir, const fs::path& lock) {
  const std::string script = "#!/bin/sh\nprintf '%s\\n' \"$@\" > " +
                             shell_quoted((dir.path() / "args.txt").string()) +
                             "\nwhile [ $# -gt 0 ]; do\n  if [ \"$1\" = -o ]; then cp " +
                             shell_quoted(lock.string()) + " \"$2\"; fi\n  shift\ndone\n";
  const auto path = dir.write("bin/uv", script);
  fs::permissions(path, fs::perms::owner_all, fs::perm_options::replace);
  return path;
}

Version py311() {
  return Version::parse("3.11").value();
}

python::ResolveTarget target(UvPlatform platform, Version python) {
  return {.python = std::move(python), .platform = platform};
}

std::string all_causes(const envkit::Error& error) {
  std::string out;
  for (const auto& cause : error.causes())
    out += cause + "\n";
  return out;
}

}  // namespace

TEST_CASE("uv platform names", "[python][uv]") {
  CHECK(python::python_platform(target(UvPlatform::linux_x86_64, py311())) ==
        "x86_64-manylinux_2_28");
  CHECK(python::python_platform(target(UvPlatform::linux_aarch64, py311())) ==
        "aarch64-manylinux_2_28");
  CHECK(python::python_platform(target(UvPlatform::windows_x86_64, py311())) ==
        "x86_64-pc-windows-msvc");
  // uv knows manylinux_2_17 and newer: an older glibc is asked as 2_17.
  CHECK(python::python_platform({.python = py311(), .glibc_minor = 12}) == "x86_64-manylinux_2_17");
  CHECK(python::python_platform({.python = py311(), .glibc_minor = 35}) == "x86_64-manylinux_2_35");
}

TEST_CASE("parse_pylock() reads uv 0.13.9's pylock.toml for Windows", "[python][uv]") {
  auto closure =
      python::parse_pylock(python_fixture(kWindowsLock), "pylock.toml",
                           target(UvPlatform::windows_x86_64, Version::parse("3.11").value()));
  REQUIRE(closure);
  CHECK(closure->resolver == "uv");
  REQUIRE(closure->wheels.size() == 3);
  const auto& cudnn = closure->wheels[2];
  CHECK(cudnn.name == "nvidia-cudnn-cu12");
  CHECK(cudnn.version == "9.1.0.70");
  CHECK(cudnn.url ==
        "https://files.pythonhosted.org/packages/3f/d0/"
        "f90ee6956a628f9f04bf467932c0a25e5a7e706a684b896593c06c82f460/"
        "nvidia_cudnn_cu12-9.1.0.70-py3-none-win_amd64.whl");
  CHECK(cudnn.sha256 == "6278562929433d68365a07a4a1546c237ba2849852c0d4b2262a486e805b977a");
  CHECK_FALSE(cudnn.size);
  CHECK(cudnn.requires_dist.empty());
  CHECK_FALSE(cudnn.requested);
  CHECK(closure->wheels[0].name == "nvidia-cublas-cu12");
  CHECK(closure->wheels[1].name == "nvidia-cuda-nvrtc-cu12");
}

TEST_CASE("parse_pylock() picks the fitting wheel where uv 0.6.15 lists them all", "[python][uv]") {
  // Resolved for aarch64-manylinux_2_28 and 3.12; its list of 60 wheels is the release's.
  const std::string lock = python_fixture("markupsafe-3.0.2.linux-aarch64.uv-0.6.15.pylock.toml");
  struct Case {
    UvPlatform platform;
    std::string python;
    std::string file;
    std::string sha256;
  };
  const Case cases[] = {
      {UvPlatform::linux_aarch64, "3.12",
       "MarkupSafe-3.0.2-cp312-cp312-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
       "1c99d261bd2d5f6b59325c92c73df481e05e57f19837bdca8413b9eac4bd8028"},
      {UvPlatform::linux_aarch64, "3.9",
       "MarkupSafe-3.0.2-cp39-cp39-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
       "1a9d3f5f0901fdec14d8d2f66ef7d035f2157240a433441719ac9a3fba440b13"},
      {UvPlatform::linux_x86_64, "3.12",
       "MarkupSafe-3.0.2-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
       "e17c96c14e19278594aa4841ec148115f9c7615a47382ecb6b82bd8fea3ab0c8"},
      {UvPlatform::windows_x86_64, "3.12", "MarkupSafe-3.0.2-cp312-cp312-win_amd64.whl",
       "8e06879fc22a25ca47312fbe7c8264eb0b662f6db27cb2d3bbbc74b1df4b9b87"},
  };
  for (const auto& c : cases) {
    INFO(python::python_platform(target(c.platform, py311())) << " " << c.python);
    auto closure = python::parse_pylock(lock, "pylock.toml",
                                        target(c.platform, Version::parse(c.python).value()));
    REQUIRE(closure);
    REQUIRE(closure->wheels.size() == 1);
    CHECK(closure->wheels[0].name == "markupsafe");
    CHECK(closure->wheels[0].version == "3.0.2");
    CHECK_THAT(closure->wheels[0].url, Catch::EndsWith("/" + c.file));
    CHECK(closure->wheels[0].sha256 == c.sha256);
  }
  // MarkupSafe 3.0.2 has no wheel for 3.14: its sdist is taken (built at install).
  auto none = python::parse_pylock(
      lock, "pylock.toml", target(UvPlatform::linux_aarch64, Version::parse("3.14").value()));
  REQUIRE(none);
  CHECK(none->wheels.at(0).kind == python::Distribution::sdist);
  CHECK_THAT(none->wheels[0].url, Catch::EndsWith("/markupsafe-3.0.2.tar.gz"));
}

TEST_CASE("parse_pylock() ranks wheels as an installer would", "[python][uv]") {
  // One package listing `files`: the file name taken, or the error.
  auto pick = [](const std::vector<std::string>& files, UvPlatform platform,
                 std::string_view python) {
    std::string lock =
        "lock-version = \"1.0\"\n[[packages]]\nname = \"p\"\nversion = \"1.0\"\nwheels = [\n";
    for (const auto& file : files) {
      lock += "  { url = \"https://x.test/" + file + "\", hashes = { sha256 = \"" +
              std::string(64, 'a') + "\" } },\n";
    }
    lock += "]\n";
    auto closure =
        python::parse_pylock(lock, "pylock.toml", target(platform, Version::parse(python).value()));
    if (!closure) return closure.error().message();
    const auto& url = closure->wheels.at(0).url;
    return url.substr(url.rfind('/') + 1);
  };
  constexpr auto x86 = UvPlatform::linux_x86_64;
  // Own ABI over pure Python, whatever the order.
  CHECK(pick({"p-1.0-py3-none-any.whl", "p-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"}, x86,
             "3.11") == "p-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
  // The stable ABI of an older CPython over pure Python.
  CHECK(pick({"p-1.0-cp39-abi3-manylinux_2_17_x86_64.whl", "p-1.0-py3-none-any.whl"}, x86,
             "3.11") == "p-1.0-cp39-abi3-manylinux_2_17_x86_64.whl");
  // The newest manylinux up to 2_28.
  CHECK(pick({"p-1.0-cp311-cp311-manylinux_2_17_x86_64.whl",
              "p-1.0-cp311-cp311-manylinux_2_28_x86_64.whl",
              "p-1.0-cp311-cp311-manylinux_2_34_x86_64.whl"},
             x86, "3.11") == "p-1.0-cp311-cp311-manylinux_2_28_x86_64.whl");
  // linux_x86_64 (PyTorch's index) fits; musllinux does not.
  CHECK(pick({"p-1.0-cp311-cp311-musllinux_1_2_x86_64.whl", "p-1.0-cp311-cp311-linux_x86_64.whl"},
             x86, "3.11") == "p-1.0-cp311-cp311-linux_x86_64.whl");
  // Free-threaded builds are not CPython 3.13's default ABI.
  CHECK(pick({"p-1.0-cp313-cp313t-manylinux_2_17_x86_64.whl",
              "p-1.0-cp313-cp313-manylinux_2_17_x86_64.whl"},
             x86, "3.13") == "p-1.0-cp313-cp313-manylinux_2_17_x86_64.whl");
  const std::vector<std::string> both = {"p-1.0-cp311-cp311-win_amd64.whl",
                                         "p-1.0-cp311-cp311-manylinux2014_aarch64.whl"};
  CHECK(pick(both, UvPlatform::windows_x86_64, "3.11") == "p-1.0-cp311-cp311-win_amd64.whl");
  CHECK(pick(both, UvPlatform::linux_aarch64, "3.11") ==
        "p-1.0-cp311-cp311-manylinux2014_aarch64.whl");
  // Nothing for 3.11: abi3 from 3.12 on, pure Python for 3.13 only.
  CHECK(pick({"p-1.0-cp312-abi3-manylinux_2_17_x86_64.whl", "p-1.0-py313-none-any.whl"}, x86,
             "3.11") ==
        "`pylock.toml`: packages[0] (`p` 1.0): none of its 2 wheels is for CPython "
        "3.11, x86_64-manylinux_2_28");
}

TEST_CASE("parse_pylock() fits CPython 3.6's `m` ABI and the machines' glibc", "[python][uv]") {
  const auto lock = [](const std::vector<std::string>& files) {
    std::string text =
        "lock-version = \"1.0\"\n[[packages]]\nname = \"p\"\nversion = \"1.0\"\nwheels = [\n";
    for (const auto& file : files) {
      text += "  { url = \"https://x.test/" + file + "\", hashes = { sha256 = \"" +
              std::string(64, 'a') + "\" } },\n";
    }
    return text + "]\n";
  };
  const auto file = [](const envkit::Result<python::Closure>& closure) {
    REQUIRE(closure);
    const auto& url = closure->wheels.at(0).url;
    return url.substr(url.rfind('/') + 1);
  };
  const auto py36 = Version::parse("3.6.9").value();
  CHECK(file(python::parse_pylock(
            lock({"p-1.0-py2.py3-none-any.whl", "p-1.0-cp36-cp36m-manylinux1_x86_64.whl"}),
            "pylock.toml", target(UvPlatform::linux_x86_64, py36))) ==
        "p-1.0-cp36-cp36m-manylinux1_x86_64.whl");
  // Machines with glibc 2.17 cannot load a manylinux_2_28 wheel.
  const python::ResolveTarget old_glibc{.python = py311(), .glibc_minor = 17};
  CHECK(file(python::parse_pylock(lock({"p-1.0-cp311-cp311-manylinux_2_28_x86_64.whl",
                                        "p-1.0-cp311-cp311-manylinux2014_x86_64.whl"}),
                                  "pylock.toml", old_glibc)) ==
        "p-1.0-cp311-cp311-manylinux2014_x86_64.whl");
}

TEST_CASE("parse_pylock(): sizes, credentials, and what it refuses", "[python][uv]") {
  const std::string sha(64, 'a');
  SECTION("size and credentials") {
    auto closure = python::parse_pylock(
        "lock-version = \"1.0\"\ncreated-by = \"uv\"\n[[packages]]\nname = \"Foo_Bar\"\n"
        "version = \"1.0\"\nwheels = [{ url = \"https://u:pw@x.test/foo_bar-1.0-py3-none-any.whl\","
        " size = 1234, hashes = { sha256 = \"" +
            sha + "\" } }]\n",
        "pylock.toml", target(UvPlatform::linux_x86_64, py311()));
    REQUIRE(closure);
    REQUIRE(closure->wheels.size() == 1);
    CHECK(closure->wheels[0].name == "foo-bar");
    CHECK(closure->wheels[0].url == "https://x.test/foo_bar-1.0-py3-none-any.whl");
    CHECK(closure->wheels[0].size == 1234U);
  }
  SECTION("a VCS checkout") {
    // An sdist is taken (pylock_sdist_test.cpp); a checkout is not.
    auto closure = python::parse_pylock(
        "lock-version = \"1.0\"\n[[packages]]\nname = \"foo\"\nversion = \"1.0\"\n"
        "vcs = { type = \"git\", url = \"https://x.test/foo.git\", commit-id = \"abc\" }\n",
        "pylock.toml", target(UvPlatform::linux_x86_64, py311()));
    REQUIRE_FALSE(closure);
    CHECK(closure.error().code() == ErrorCode::input);
    CHECK(closure.error().message() ==
          "`pylock.toml`: packages[0] (`foo` 1.0): no wheel and no source distribution: it comes "
          "from a VCS checkout");
  }
  SECTION("a wheel without sha256") {
    auto closure = python::parse_pylock(
        "lock-version = \"1.0\"\n[[packages]]\nname = \"foo\"\nversion = \"1.0\"\n"
        "wheels = [{ url = \"https://x.test/foo-1.0-py3-none-any.whl\", hashes = { md5 = \"x\" } "
        "}]\n",
        "pylock.toml", target(UvPlatform::linux_x86_64, py311()));
    REQUIRE_FALSE(closure);
    CHECK(closure.error().message() ==
          "`pylock.toml`: packages[0] (`foo` 1.0): `https://x.test/foo-1.0-py3-none-any.whl` has "
          "no sha256");
  }
  SECTION("another lock-version") {
    auto closure = python::parse_pylock("lock-version = \"2.0\"\n", "pylock.toml",
                                        target(UvPlatform::linux_x86_64, py311()));
    REQUIRE_FALSE(closure);
    CHECK(closure.error().message() ==
          "`pylock.toml`: a pylock.toml of lock-version `2.0`; envkit reads 1.x");
  }
  SECTION("not TOML") {
    auto closure = python::parse_pylock("lock-version = \n", "pylock.toml",
                                        target(UvPlatform::linux_x86_64, py311()));
    REQUIRE_FALSE(closure);
    CHECK(closure.error().message() == "`pylock.toml`: not a pylock.toml file (not TOML)");
  }
}

TEST_CASE("find_uv() takes ENVKIT_UV, else uv on PATH", "[python][uv]") {
  TempDir dir;
  const auto fake = write_tool(dir, "tools/uv", "uv 0.13.9 (x86_64-unknown-linux-gnu)");
  {
    ScopedEnv given("ENVKIT_UV", fake.string());
    auto uv = python::find_uv();
    REQUIRE(uv);
    CHECK(uv->path == fake);
    CHECK(uv->version == "0.13.9");
  }
  {
    ScopedEnv given("ENVKIT_UV", (dir.path() / "nothing").string());
    auto uv = python::find_uv();
    REQUIRE_FALSE(uv);
    CHECK(uv.error().message() == "`" + (dir.path() / "nothing").string() + "` does not exist");
  }
  {
    ScopedEnv given("ENVKIT_UV", std::nullopt);
    ScopedEnv path("PATH", (dir.path() / "tools").string());
    auto uv = python::find_uv();
    REQUIRE(uv);
    CHECK(uv->path == fake);
  }
  {
    ScopedEnv given("ENVKIT_UV", std::nullopt);
    ScopedEnv path("PATH", dir.path().string());
    auto uv = python::find_uv();
    REQUIRE_FALSE(uv);
    CHECK(uv.error().message() == "uv is not installed");
    REQUIRE_FALSE(uv.error().hints().empty());
    CHECK_THAT(uv.error().hints()[0], Catch::Contains("pip install uv"));
  }
}

TEST_CASE("resolve_with_uv() builds uv's command line and marks what was asked for",
          "[python][uv]") {
  TempDir dir;
  const auto lock = dir.write("lock.toml", python_fixture(kWindowsLock));
  const python::Uv uv{.path = write_recording_uv(dir, lock), .version = "0.13.9"};
  dir.write("work/more.txt",
            "# also\nnvidia-cublas-cu12>=12 ; sys_platform == 'win32'\n-r other.txt\n");
  auto closure =
      python::resolve_with_uv(uv,
                              {.requirements = {"nvidia_cudnn_cu12==9.1.0.70"},
                               .requirement_files = {"more.txt"},
                               .index_urls = {"https://a.test/simple", "https://b.test/simple"},
                               .cwd = dir.path() / "work",
                               .only_binary = true},
                              target(UvPlatform::windows_x86_64, Version::parse("3.11").value()));
  REQUIRE(closure);
  CHECK(closure->resolver == "uv 0.13.9 (for CPython 3.11, x86_64-pc-windows-msvc)");
  REQUIRE(closure->wheels.size() == 3);
  CHECK(closure->wheels[0].requested);        // nvidia-cublas-cu12, from more.txt
  CHECK_FALSE(closure->wheels[1].requested);  // nvidia-cuda-nvrtc-cu12
  CHECK(closure->wheels[2].requested);        // nvidia-cudnn-cu12

  const auto args = envkit::sys::read_file(dir.path() / "args.txt").value();
  std::vector<std::string_view> lines = envkit::text::split(args, '\n');
  // The interpreter that builds sdists, where the machine has a Python 3.11 (docs/python.md).
  if (const auto python = std::find(lines.begin(), lines.end(), "--python");
      python != lines.end()) {
    REQUIRE(python + 1 != lines.end());
    CHECK(envkit::python::interpreter_version(std::string(*(python + 1)))->minor() == 11);
    lines.erase(python, python + 2);
  }
  REQUIRE(lines.size() == 24);  // 23 arguments, then the final newline
  const std::vector<std::string> expected = {"pip",
                                             "compile",
                                             "-v",
                                             "--no-header",
                                             "--no-python-downloads",
                                             "--python-platform",
                                             "x86_64-pc-windows-msvc",
                                             "--python-version",
                                             "3.11",
                                             "--format",
                                             "pylock.toml",
                                             "-o"};
  for (std::size_t i = 0; i < expected.size(); ++i)
    CHECK(lines[i] == expected[i]);
  CHECK(fs::path(lines[12]).filename() == "pylock.toml");
  CHECK(lines[13] == "--only-binary");
  CHECK(lines[14] == ":all:");
  CHECK(lines[15] == "--index-url");
  CHECK(lines[16] == "https://a.test/simple");
  CHECK(lines[17] == "--extra-index-url");
  CHECK(lines[18] == "https://b.test/simple");
  // Merged best-match, as pip does: `torch==2.4.1+cu124` from the second index.
  CHECK(lines[19] == "--index-strategy");
  CHECK(lines[20] == "unsafe-best-match");
  CHECK(fs::path(lines[21]).filename() == "requirements.in");
  CHECK(lines[22] == "more.txt");
}

TEST_CASE("resolve_with_uv() quotes uv's refusal", "[python][uv]") {
  TempDir dir;
  const auto fake = write_tool(
      dir, "bin/uv", "",
      "error: No solution found when resolving dependencies\n"
      "  cause: Because nvidia-cudnn-cu12==9.1.0.70 has no wheels with a matching platform tag "
      "(e.g., `manylinux_2_28_aarch64`) and you require nvidia-cudnn-cu12==9.1.0.70, we can "
      "conclude that your requirements are unsatisfiable.\n\n"
      "hint: Wheels are available for `nvidia-cudnn-cu12` (v9.1.0.70) on the following "
      "platforms: `manylinux2014_x86_64`, `win_amd64`",
      1);
  auto closure =
      python::resolve_with_uv({.path = fake, .version = "0.13.9"},
                              {.requirements = {"nvidia-cudnn-cu12==9.1.0.70"},
                               .index_urls = {"https://user:s3cret@a.test/simple"}},
                              target(UvPlatform::linux_aarch64, Version::parse("3.12").value()));
  REQUIRE_FALSE(closure);
  CHECK(closure.error().message() == "uv could not resolve the Python requirements");
  REQUIRE(closure.error().causes().size() == 3);
  CHECK(closure.error().causes()[0] == "uv: No solution found when resolving dependencies");
  CHECK(closure.error().causes()[2] == "envkit resolved for CPython 3.12, aarch64-manylinux_2_28");
  CHECK_THAT(closure.error().causes()[1],
             Catch::StartsWith("uv: Because nvidia-cudnn-cu12==9.1.0.70 has no wheels"));
  REQUIRE(closure.error().hints().size() == 1);
  CHECK_THAT(closure.error().hints()[0], Catch::StartsWith("uv: Wheels are available"));
}

TEST_CASE("resolve_with_uv() with a uv too old for pylock.toml says to upgrade", "[python][uv]") {
  TempDir dir;
  // What uv 0.6.14 prints (it has no --format).
  const auto fake = write_tool(dir, "bin/uv", "",
                               "error: unexpected argument '--format' found\n\n"
                               "  tip: to pass '--format' as a value, use '-- --format'",
                               2);
  auto closure =
      python::resolve_with_uv({.path = fake, .version = "0.6.14"}, {.requirements = {"anyio"}},
                              target(UvPlatform::linux_x86_64, py311()));
  REQUIRE_FALSE(closure);
  CHECK(closure.error().causes() ==
        std::vector<std::string>{"uv: unexpected argument '--format' found",
                                 "envkit resolved for CPython 3.11, x86_64-manylinux_2_28"});
  REQUIRE(closure.error().hints().size() == 1);
  CHECK_THAT(closure.error().hints()[0], Catch::Contains("needs uv 0.6.15 or newer"));
}

// Live: PyPI and a real uv ($ENVKIT_UV, uv on PATH, or one pip installs into a scratch venv).
TEST_CASE("resolve_with_uv() resolves for other platforms from PyPI (live)", "[python][uv][live]") {
  if (envkit::test::live_tests_off("reach PyPI")) return;
  TempDir dir;
  // Caches in the scratch folder, not $HOME.
  ScopedEnv uv_cache("UV_CACHE_DIR", (dir.path() / "uv-cache").string());
  ScopedEnv pip_cache("PIP_CACHE_DIR", (dir.path() / "pip-cache").string());
  auto uv = python::find_uv();
  if (!uv) {
    if (envkit::test::program_missing("python3")) return;  // to install uv with
    const auto host = envkit::sys::find_on_path("python3");
    const auto venv = dir.path() / "venv";
    auto made = envkit::sys::run_process({host->string(), "-m", "venv", venv.string()},
                                         {.timeout = std::chrono::minutes(2)});
    REQUIRE(made);
    REQUIRE(made->exit_code == 0);
    auto installed = envkit::sys::run_process(
        {(venv / "bin/python").string(), "-m", "pip", "install", "--quiet", "uv"},
        {.timeout = std::chrono::minutes(5)});
    REQUIRE(installed);
    INFO(installed->err);
    REQUIRE(installed->exit_code == 0);
    ScopedEnv given("ENVKIT_UV", (venv / "bin/uv").string());
    uv = python::find_uv();
  }
  REQUIRE(uv);

  auto windows =
      python::resolve_with_uv(*uv, {.requirements = {"nvidia-cudnn-cu12==9.1.0.70"}},
                              target(UvPlatform::windows_x86_64, Version::parse("3.11").value()));
  REQUIRE(windows);
  bool found = false;
  for (const auto& wheel : windows->wheels) {
    CHECK(wheel.sha256.size() == 64);
    if (wheel.name != "nvidia-cudnn-cu12") continue;
    found = true;
    CHECK(wheel.requested);
    CHECK_THAT(wheel.url, Catch::EndsWith("-win_amd64.whl"));
    CHECK(wheel.sha256 == "6278562929433d68365a07a4a1546c237ba2849852c0d4b2262a486e805b977a");
  }
  CHECK(found);

  auto arm =
      python::resolve_with_uv(*uv, {.requirements = {"anyio==4.0.0"}},
                              target(UvPlatform::linux_aarch64, Version::parse("3.9").value()));
  REQUIRE(arm);
  std::vector<std::string> names;
  for (const auto& wheel : arm->wheels)
    names.push_back(wheel.name);
  // exceptiongroup: anyio needs it below Python 3.11.
  CHECK(std::find(names.begin(), names.end(), "exceptiongroup") != names.end());

  auto impossible =
      python::resolve_with_uv(*uv, {.requirements = {"nvidia-cudnn-cu12==9.1.0.70"}},
                              target(UvPlatform::linux_aarch64, Version::parse("3.11").value()));
  REQUIRE_FALSE(impossible);
  CHECK_THAT(all_causes(impossible.error()), Catch::Contains("nvidia-cudnn-cu12"));
}
