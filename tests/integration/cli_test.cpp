// The command line as a user meets it: flags, help, exit codes, error style.
#include <catch2/catch.hpp>

#include "support/envkit_runner.hpp"

using envkit::test::run_envkit;

TEST_CASE("envkit --version prints the version", "[cli]") {
  const auto r = run_envkit({.args = {"--version"}});
  CHECK(r.exit_code == 0);
  CHECK(r.out == "envkit 0.1.0\n");
}

TEST_CASE("a command that downloads nothing starts without loading libcurl or libarchive",
          "[cli]") {
  // libcurl's ~20 libraries were 5 ms of every start, libarchive's (libxml2,
  // ICU) ~2 ms (envkit/sys/lazy_library.hpp). The loader's own trace names
  // each library it loads.
  const auto r = run_envkit({.args = {"--version"}, .env = {{"LD_DEBUG", "files"}}});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("libc.so.6"));
  CHECK_THAT(r.err, !Catch::Contains("libcurl") && !Catch::Contains("libarchive"));
}

TEST_CASE("envkit --help lists the commands and exit codes", "[cli]") {
  const auto r = run_envkit({.args = {"--help"}});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out,
             Catch::Contains("init") && Catch::Contains("debug") && Catch::Contains("--json") &&
                 Catch::Contains("-C") && Catch::Contains("Exit codes: 0 success") &&
                 Catch::Contains("ENVKIT_OVERRIDE_DRIVER") && Catch::Contains("docs/cli.md"));
}

TEST_CASE("every command has --help", "[cli]") {
  for (auto args :
       std::vector<std::vector<std::string>>{{"init", "--help"},
                                             {"debug", "--help"},
                                             {"debug", "specs", "--help"},
                                             {"recipes", "--help"},
                                             {"recipes", "list", "--help"},
                                             {"recipes", "show", "--help"},
                                             {"recipes", "check", "--help"},
                                             {"recipes", "import", "--help"},
                                             {"recipes", "import", "nvidia-redist", "--help"},
                                             {"recipes", "import", "pypi-nvidia", "--help"},
                                             {"recipes", "import", "pypi-torch", "--help"},
                                             {"recipes", "import", "upstream", "--help"}}) {
    INFO(args[0]);
    const auto r = run_envkit({.args = args});
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("Usage"));
  }
}

TEST_CASE("usage errors exit 2 in envkit's error style", "[cli]") {
  SECTION("an unknown flag") {
    const auto r = run_envkit({.args = {"init", "--bogus"}});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err,
               Catch::StartsWith("error: The following argument was not expected: --bogus\n"));
    CHECK_THAT(r.err, Catch::Contains("hint: run `envkit init --help` to see the usage"));
  }
  SECTION("an unknown command") {
    const auto r = run_envkit({.args = {"frobnicate"}});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::StartsWith("error: unknown command `frobnicate`\n"));
    CHECK_THAT(r.err, Catch::Contains("hint: run `envkit --help` to see the usage"));
  }
  SECTION("a misspelt command gets a suggestion") {
    const auto r = run_envkit({.args = {"-C", "/tmp", "iint"}});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("error: unknown command `iint`\nhint: did you mean `init`?"));
  }
  SECTION("no command at all") {
    const auto r = run_envkit({.args = {}});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("error: "));
  }
  SECTION("a bad --color value") {
    const auto r = run_envkit({.args = {"--color", "sometimes", "debug", "specs"}});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("sometimes"));
  }
  SECTION("with --json the error is also on stdout as JSON") {
    const auto r = run_envkit({.args = {"init", "--bogus", "--json"}});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.out, Catch::StartsWith("{\"error\":"));
  }
}

TEST_CASE("colour only when asked, never with NO_COLOR", "[cli]") {
  const auto plain = run_envkit({.args = {"init", "--bogus"}});
  CHECK_THAT(plain.err, !Catch::Contains("\x1b["));
  const auto forced = run_envkit({.args = {"--color=always", "init", "--bogus"}});
  CHECK_THAT(forced.err, Catch::StartsWith("\x1b[1;31merror:"));
}
