#include "envkit/python/interpreters.hpp"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "support/temp_dir.hpp"

using envkit::python::interpreter_version;
using envkit::test::TempDir;

namespace {

// An executable script that says it is Python `version`, as `-c` would.
std::filesystem::path fake_python(const TempDir& dir, const std::string& name,
                                  const std::string& version) {
  auto path = dir.write("bin/" + name, "#!/bin/sh\necho " + version + "\n");
  ::chmod(path.c_str(), 0755);
  return path;
}

}  // namespace

TEST_CASE("interpreter_version asks the interpreter itself", "[python][interpreters]") {
  TempDir dir;
  CHECK(interpreter_version(fake_python(dir, "python3.8", "3.8.18"))->original() == "3.8.18");
  CHECK_FALSE(interpreter_version(dir.path() / "bin/absent").has_value());
  CHECK_FALSE(interpreter_version(fake_python(dir, "python3.9", "garbage")).has_value());
}

TEST_CASE("machine_interpreters takes what each executable says, not what its name claims",
          "[python][interpreters]") {
  TempDir dir;
  fake_python(dir, "python3.8", "3.8.18");
  fake_python(dir, "python3.7", "3.9.18");  // a python3.7 that is 3.9: refused, named
  fake_python(dir, "python3.12", "3.12.1");
  fake_python(dir, "pythonista", "3.10.0");  // not a Python interpreter's name
  ::setenv("ENVKIT_PYTHON_SEARCH_PATH", (dir.path() / "bin").c_str(), 1);
  const auto search = envkit::python::search_interpreters();
  REQUIRE(search.found.size() == 2);
  CHECK(search.found[0].version.original() == "3.12.1");  // newest first
  CHECK(search.found[1].path.filename() == "python3.8");
  CHECK(search.found[1].source == "ENVKIT_PYTHON_SEARCH_PATH");
  REQUIRE(search.refused.size() == 1);
  CHECK_THAT(search.refused[0], Catch::Contains("python3.7") && Catch::Contains("3.9.18"));
}

// CTest runs each case in a process of its own: the search below is this process's first.
TEST_CASE("machine_interpreter answers the newest interpreter of the minor asked for",
          "[python][interpreters]") {
  TempDir dir;
  fake_python(dir, "python3.8", "3.8.18");
  fake_python(dir, "python3", "3.12.1");
  ::setenv("ENVKIT_PYTHON_SEARCH_PATH", (dir.path() / "bin").c_str(), 1);
  auto minor = envkit::python::machine_interpreter(*envkit::specs::Version::parse("3.8.5"));
  REQUIRE(minor);
  CHECK(minor->version.original() == "3.8.18");
  CHECK(envkit::python::machine_interpreter(*envkit::specs::Version::parse("3.12"))->path ==
        dir.path() / "bin/python3");
  CHECK_FALSE(envkit::python::machine_interpreter(*envkit::specs::Version::parse("3.6")));
}
