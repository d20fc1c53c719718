#include "envkit/sys/process.hpp"

#include <catch2/catch.hpp>

#include "support/temp_dir.hpp"

using envkit::sys::ProcessOptions;
using envkit::sys::run_process;

TEST_CASE("run_process captures output and exit code", "[sys][process]") {
  auto result = run_process({"sh", "-c", "echo out; echo err >&2; exit 3"});
  REQUIRE(result);
  CHECK(result->out == "out\n");
  CHECK(result->err == "err\n");
  CHECK(result->exit_code == 3);
  CHECK_FALSE(result->timed_out);
}

TEST_CASE("run_process feeds stdin, sets env and cwd", "[sys][process]") {
  envkit::test::TempDir dir;
  ProcessOptions options;
  options.stdin_data = std::string(200000, 'x');  // larger than a pipe buffer
  options.env = {{"ENVKIT_TEST_VALUE", "hello"}, {"HOME", std::nullopt}};
  options.cwd = dir.path();
  auto result =
      run_process({"sh", "-c", "wc -c; echo \"$ENVKIT_TEST_VALUE ${HOME:-unset}\"; pwd"}, options);
  REQUIRE(result);
  CHECK(result->out == "200000\nhello unset\n" + dir.path().string() + "\n");
}

TEST_CASE("run_process stops a command at its timeout", "[sys][process]") {
  ProcessOptions options;
  options.timeout = std::chrono::milliseconds(200);
  auto result = run_process({"sleep", "5"}, options);
  REQUIRE(result);
  CHECK(result->timed_out);
  CHECK(result->exit_code == 128 + 9);
}

TEST_CASE("run_process reports a missing program as an error", "[sys][process]") {
  auto result = run_process({"envkit-no-such-program"});
  REQUIRE_FALSE(result);
  CHECK(result.error().message() == "`envkit-no-such-program` not found on PATH");
  CHECK(envkit::sys::find_on_path("sh").has_value());
}
