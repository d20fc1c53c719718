#include "envkit/project/marker.hpp"

#include <catch2/catch.hpp>

namespace {

namespace project = envkit::project;
using project::Truth;

Truth on_linux(std::string_view marker) {
  return project::evaluate_marker(marker, project::linux_cpython_environment());
}

Truth on_linux_python(std::string_view marker, std::string version) {
  auto environment = project::linux_cpython_environment();
  environment.emplace("python_version", version);
  environment.emplace("python_full_version", version + ".0");
  return project::evaluate_marker(marker, environment);
}

}  // namespace

TEST_CASE("platform markers are decided for a Linux target", "[project]") {
  CHECK(on_linux("sys_platform == 'win32'") == Truth::no);
  CHECK(on_linux("sys_platform == \"linux\"") == Truth::yes);
  CHECK(on_linux("platform_system != 'Windows' and os_name == 'posix'") == Truth::yes);
  CHECK(on_linux("sys_platform == 'darwin' or sys_platform == 'win32'") == Truth::no);
  CHECK(on_linux("'linux' in sys_platform") == Truth::yes);
  CHECK(on_linux("sys_platform not in 'win32 cygwin'") == Truth::yes);
  CHECK(on_linux("") == Truth::yes);
}

TEST_CASE("markers on what the target does not yet fix stay undecided", "[project]") {
  CHECK(on_linux("python_version < '3.9'") == Truth::unknown);
  CHECK(on_linux("platform_machine == 'aarch64'") == Truth::unknown);
  CHECK(on_linux("extra == 'cuda'") == Truth::unknown);
  // Kleene logic: a false side decides `and`, a true side decides `or`.
  CHECK(on_linux("python_version < '3.9' and sys_platform == 'win32'") == Truth::no);
  CHECK(on_linux("python_version < '3.9' or sys_platform == 'linux'") == Truth::yes);
}

TEST_CASE("python_version compares as a version, not as text", "[project]") {
  CHECK(on_linux_python("python_version >= '3.9'", "3.10") == Truth::yes);
  CHECK(on_linux_python("python_version < \"3.9\"", "3.10") == Truth::no);
  CHECK(on_linux_python("'3.8' < python_version", "3.10") == Truth::yes);
  CHECK(on_linux_python("python_full_version == '3.10.*'", "3.10") == Truth::yes);
  CHECK(on_linux_python("(python_version < '3.9') and sys_platform == 'linux'", "3.8") ==
        Truth::yes);
}

TEST_CASE("a marker that does not parse is undecided, never an error", "[project]") {
  CHECK(on_linux("sys_platform ==") == Truth::unknown);
  CHECK(on_linux("no_such_variable == 'x'") == Truth::unknown);
  CHECK(on_linux("(sys_platform == 'linux'") == Truth::unknown);
}
