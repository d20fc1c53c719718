#include "envkit/python/interpreter.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "envkit/sys/process.hpp"
#include "python_test_support.hpp"

namespace {

namespace fs = std::filesystem;
namespace python = envkit::python;
using envkit::specs::Version;
using envkit::specs::VersionSpec;
using envkit::test::ScopedEnv;
using envkit::test::TempDir;
using envkit::test::write_fake_python;
using envkit::test::write_tool;

Version v(std::string_view text) {
  return Version::parse(text).value();
}

std::string all_causes(const envkit::Error& error) {
  std::string out;
  for (const auto& cause : error.causes())
    out += cause + "\n";
  return out;
}

std::string all_hints(const envkit::Error& error) {
  std::string out;
  for (const auto& hint : error.hints())
    out += hint + "\n";
  return out;
}

}  // namespace

TEST_CASE("inspect() reads the host's python3", "[python][interpreter]") {
  const auto host = envkit::sys::find_on_path("python3");
  if (!host) {
    WARN("skipped: no python3 on PATH");
    return;
  }
  auto python = python::inspect(*host);
  REQUIRE(python);
  CHECK(python->path == *host);  // as found, not resolved
  CHECK(python->version.major() == 3);
  CHECK(python->implementation == "cpython");
  CHECK_FALSE(python->platform_tag.empty());
  // The probe agrees with `python3 --version`.
  auto version = envkit::sys::run_process({host->string(), "--version"});
  REQUIRE(version);
  CHECK_THAT(version->out + version->err, Catch::Contains(python->version.original()));
  INFO(python->description());
  CHECK_THAT(python->description(), Catch::StartsWith("CPython 3."));
}

TEST_CASE("inspect() reads a stand-in interpreter's answer", "[python][interpreter]") {
  TempDir dir;
  auto old = python::inspect(write_fake_python(dir, "old/python3", "3.10.12", "21.3.1"));
  REQUIRE(old);
  CHECK(old->version == v("3.10.12"));
  REQUIRE(old->pip);
  CHECK(*old->pip == v("21.3.1"));
  CHECK(old->platform_tag == "linux-x86_64");

  auto without_pip = python::inspect(write_fake_python(dir, "bare/python3", "3.12.0rc1", ""));
  REQUIRE(without_pip);
  CHECK_FALSE(without_pip->pip);
  CHECK(without_pip->version.original() == "3.12.0rc1");
}

TEST_CASE("inspect() errors name the interpreter and quote what it printed",
          "[python][interpreter]") {
  TempDir dir;
  SECTION("it exits 1") {
    const auto path = write_tool(dir, "broken/python3", "",
                                 "Fatal Python error: init_fs_encoding\n"
                                 "ModuleNotFoundError: No module named 'encodings'",
                                 1);
    auto python = python::inspect(path);
    REQUIRE_FALSE(python);
    CHECK(python.error().message() == "`" + path.string() + "` did not start");
    REQUIRE(python.error().causes().size() == 1);
    CHECK(python.error().causes()[0] ==
          "it exited with code 1 and printed `Fatal Python error: init_fs_encoding | "
          "ModuleNotFoundError: No module named 'encodings'`");
  }
  SECTION("it prints something else") {
    const auto path = write_tool(dir, "odd/python3", "Hello, world");
    auto python = python::inspect(path);
    REQUIRE_FALSE(python);
    CHECK(python.error().message() == "`" + path.string() + "` is not a Python envkit can use");
    CHECK_THAT(all_causes(python.error()), Catch::Contains("`Hello, world`"));
  }
  SECTION("it does not exist") {
    auto python = python::inspect(dir.path() / "nothing/python3");
    REQUIRE_FALSE(python);
    CHECK(python.error().message() ==
          "`" + (dir.path() / "nothing/python3").string() + "` does not exist");
  }
  SECTION("it is not executable") {
    const auto path = dir.write("plain/python3", "not a program");
    auto python = python::inspect(path);
    REQUIRE_FALSE(python);
    CHECK(python.error().message() == "`" + path.string() + "` did not start");
    CHECK_THAT(all_causes(python.error()), Catch::Contains("ermission denied"));
  }
}

TEST_CASE("find_resolver() takes the first qualifying candidate, preferred ones first",
          "[python][interpreter]") {
  TempDir dir;
  fs::create_directories(dir.path() / "empty-path");
  ScopedEnv path("PATH", (dir.path() / "empty-path").string());
  const auto old_pip = write_fake_python(dir, "a/python3", "3.11.7", "21.3.1");
  const auto good = write_fake_python(dir, "b/python3", "3.11.7", "23.2.1");
  const auto also_good = write_fake_python(dir, "c/python3", "3.12.1", "24.0");

  auto chosen =
      python::find_resolver({dir.path() / "prefix/bin/python3", old_pip, good, also_good});
  REQUIRE(chosen);
  CHECK(chosen->path == good);
  CHECK(chosen->version == v("3.11.7"));
  CHECK(*chosen->pip == v("23.2.1"));

  SECTION("a Python spec passes over interpreters outside it") {
    auto in_spec =
        python::find_resolver({old_pip, good, also_good}, VersionSpec::parse(">=3.12").value());
    REQUIRE(in_spec);
    CHECK(in_spec->path == also_good);
  }
}

TEST_CASE("find_resolver() looks on PATH: python3, python, then python3.14 ... python3.8",
          "[python][interpreter]") {
  TempDir dir;
  write_fake_python(dir, "bin/python3", "3.11.2", "");       // Debian's, without pip
  write_fake_python(dir, "bin/python", "2.7.18", "20.3.4");  // too old
  const auto wanted = write_fake_python(dir, "bin/python3.10", "3.10.12", "22.2");
  write_fake_python(dir, "bin/python3.9", "3.9.18", "23.0");  // later in the order
  ScopedEnv path("PATH", (dir.path() / "bin").string());
  auto chosen = python::find_resolver({});
  REQUIRE(chosen);
  CHECK(chosen->path == wanted);
}

TEST_CASE("find_resolver() lists every refused candidate and why, with hints",
          "[python][interpreter]") {
  TempDir dir;
  const auto bin = dir.path() / "bin";
  const auto debian = write_fake_python(dir, "bin/python3", "3.11.2", "");
  const auto broken = write_tool(dir, "opt/python3", "",
                                 "error while loading shared libraries: "
                                 "libpython3.11.so.1.0",
                                 127);
  const auto old_pip = write_fake_python(dir, "venv/bin/python3", "3.10.12", "21.3.1");
  const auto ancient = write_fake_python(dir, "bin/python3.8", "3.6.9", "21.3.1");
  // The same file under a second name is tried once.
  fs::create_symlink(debian, bin / "python3.11");
  ScopedEnv path("PATH", bin.string());

  auto chosen = python::find_resolver({dir.path() / "prefix/bin/python3", broken, old_pip});
  REQUIRE_FALSE(chosen);
  const auto& error = chosen.error();
  CHECK(error.message() == "no Python here can resolve the Python requirements");
  const std::vector<std::string> expected = {
      "envkit resolves with pip: it needs Python 3.8 or newer with pip 22.2 or newer",
      "`" + (dir.path() / "prefix/bin/python3").string() + "` does not exist",
      "`" + broken.string() +
          "` did not start: it exited with code 127 and printed `error while loading shared "
          "libraries: libpython3.11.so.1.0`",
      "`" + old_pip.string() +
          "`: Python 3.10.12 has pip 21.3.1, older than 22.2 (pip writes `--report` since 22.2)",
      "`" + debian.string() + "`: Python 3.11.2 has no pip",
      "`" + ancient.string() + "`: Python 3.6.9 is older than 3.8",
      "not on PATH: `python`, `python3.14`, `python3.13`, `python3.12`, `python3.10`, "
      "`python3.9`",
  };
  CHECK(error.causes() == expected);
  const std::string hints = all_hints(error);
  CHECK_THAT(hints,
             Catch::Contains("upgrade pip: `" + old_pip.string() + " -m pip install -U pip`"));
  CHECK_THAT(hints,
             Catch::Contains("install pip: `" + debian.string() + " -m ensurepip --upgrade`"));
}

TEST_CASE("find_resolver() explains a Python spec nothing here meets", "[python][interpreter]") {
  TempDir dir;
  fs::create_directories(dir.path() / "empty-path");
  ScopedEnv path("PATH", (dir.path() / "empty-path").string());
  const auto good = write_fake_python(dir, "b/python3", "3.11.7", "23.2.1");
  auto chosen = python::find_resolver({good}, VersionSpec::parse(">=3.12,<3.13").value());
  REQUIRE_FALSE(chosen);
  CHECK(chosen.error().causes().at(1) == "`" + good.string() +
                                             "`: Python 3.11.7 is not in `>=3.12,<3.13` (the "
                                             "Python the environment asks for)");
  CHECK_THAT(all_hints(chosen.error()), Catch::Contains("install Python `>=3.12,<3.13` with pip"));
}

TEST_CASE("find_resolver() finds the host's Python with pip, when there is one",
          "[python][interpreter]") {
  auto chosen = python::find_resolver({});
  if (!chosen) {
    WARN("skipped: no Python with pip 22.2 or newer here: " << chosen.error().to_string());
    return;
  }
  CHECK(chosen->version >= python::minimum_python());
  REQUIRE(chosen->pip);
  CHECK(*chosen->pip >= python::minimum_pip());
}
