#include "envkit/activation/exec.hpp"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>

#include "envkit/sys/fs.hpp"
#include "support/temp_dir.hpp"

namespace envkit::activation {
namespace {

namespace fs = std::filesystem;

// exec_command replaces the process, so it runs in a forked child: the
// child's exit status is the command's, or the failure's exit code.
int exec_in_child(const std::vector<std::string>& argv, const Environment& environment) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const auto failure = exec_command(argv, environment);
    ::_exit(failure.exit_code);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

void script(const test::TempDir& dir, const std::string& relative, const std::string& body,
            mode_t mode = 0755) {
  const auto path = dir.write(relative, body);
  ::chmod(path.c_str(), mode);
}

TEST_CASE("the command is looked up on the new environment's PATH", "[activation]") {
  test::TempDir dir;
  script(dir, "bin/hello", "#!/bin/sh\necho \"$GREETING\" > \"$OUT\"\nexit 7\n");
  const auto out = dir.path() / "out.txt";
  const Environment environment = {{"PATH", (dir.path() / "bin").string() + ":/usr/bin:/bin"},
                                   {"GREETING", "hi there"},
                                   {"OUT", out.string()}};
  CHECK(exec_in_child({"hello"}, environment) == 7);
  CHECK(sys::read_file(out).value() == "hi there\n");
}

TEST_CASE("a file without #! runs with /bin/sh, as execvp does", "[activation]") {
  test::TempDir dir;
  script(dir, "bin/plain", "exit 5\n");
  CHECK(exec_in_child({"plain"}, {{"PATH", (dir.path() / "bin").string()}}) == 5);
}

TEST_CASE("a folder of PATH without the command is passed over", "[activation]") {
  test::TempDir dir;
  script(dir, "a/tool", "#!/bin/sh\nexit 1\n", 0644);  // not executable: skipped
  script(dir, "b/tool", "#!/bin/sh\nexit 3\n");
  const auto path =
      "/nonexistent:" + (dir.path() / "a").string() + ":" + (dir.path() / "b").string();
  CHECK(exec_in_child({"tool"}, {{"PATH", path}}) == 3);
}

TEST_CASE("a command that is nowhere gives 127 and names it", "[activation]") {
  const auto failure = exec_command({"envkit-no-such-command"}, {{"PATH", "/nonexistent"}});
  CHECK(failure.exit_code == 127);
  CHECK(failure.error.message() == "command not found: `envkit-no-such-command`");
}

TEST_CASE("a command that is there but cannot run gives 126", "[activation]") {
  test::TempDir dir;
  script(dir, "bin/tool", "#!/bin/sh\n", 0644);
  const auto failure = exec_command({"tool"}, {{"PATH", (dir.path() / "bin").string()}});
  CHECK(failure.exit_code == 126);
  CHECK(failure.error.message() == "cannot run `" + (dir.path() / "bin" / "tool").string() + "`");
  script(dir, "bin/broken", "#!/nonexistent/interpreter\n");
  CHECK(exec_command({(dir.path() / "bin" / "broken").string()}, {}).exit_code == 126);
}

TEST_CASE("the command does not inherit envkit's ignored SIGPIPE", "[activation]") {
  test::TempDir dir;
  const auto out = dir.path() / "status";
  const auto previous = std::signal(SIGPIPE, SIG_IGN);  // as envkit's main() does
  const int code =
      exec_in_child({"/bin/sh", "-c", "grep SigIgn /proc/self/status > " + out.string()},
                    {{"PATH", "/usr/bin:/bin"}});
  std::signal(SIGPIPE, previous);
  REQUIRE(code == 0);
  const auto text = sys::read_file(out).value();
  const auto mask = std::stoull(text.substr(text.find(':') + 1), nullptr, 16);
  CHECK((mask & (1ULL << (SIGPIPE - 1))) == 0);
}

TEST_CASE("a failed exec gives envkit its own signal handling back", "[activation]") {
  const auto previous = std::signal(SIGPIPE, SIG_IGN);
  CHECK(exec_command({"envkit-no-such-command"}, {{"PATH", "/nonexistent"}}).exit_code == 127);
  CHECK(std::signal(SIGPIPE, previous) == SIG_IGN);
}

}  // namespace
}  // namespace envkit::activation
