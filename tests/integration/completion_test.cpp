// `envkit completion`: the scripts complete what a user types, in the shell itself.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "envkit/core/text.hpp"
#include "envkit/sys/process.hpp"
#include "support/envkit_runner.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

namespace envkit::test {
namespace {

// The script `envkit completion <shell>` prints, written to a file in `dir`.
std::filesystem::path completion_script(const TempDir& dir, const std::string& shell) {
  const auto r = run_envkit({.args = {"completion", shell}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return dir.write("envkit." + shell, r.out);
}

// What bash offers for the command line `words`, the last one being completed, in `cwd`.
std::vector<std::string> bash_offers(const std::filesystem::path& script,
                                     const std::vector<std::string>& words,
                                     const std::filesystem::path& cwd) {
  std::string array;
  for (const auto& word : words)
    array += " '" + word + "'";
  const auto program = "source '" + script.string() + "'\nCOMP_WORDS=(" + array +
                       ")\nCOMP_CWORD=" + std::to_string(words.size() - 1) +
                       "\n_envkit\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n";
  auto run = sys::run_process({"bash", "--norc", "--noprofile", "-c", program}, {.cwd = cwd});
  REQUIRE(run);
  INFO(run->err);
  REQUIRE(run->exit_code == 0);
  std::vector<std::string> offers;
  for (const auto& line : text::split(run->out, '\n'))
    if (!line.empty()) offers.emplace_back(line);
  return offers;
}

}  // namespace

TEST_CASE("bash completes commands, subcommands, flags and folders", "[cli][completion]") {
  if (program_missing("bash")) return;
  const TempDir dir;
  const auto script = completion_script(dir, "bash");
  std::filesystem::create_directories(dir.path() / "project-a");
  const auto& cwd = dir.path();

  CHECK(bash_offers(script, {"envkit", "ins"}, cwd) == std::vector<std::string>{"install"});
  const auto top = bash_offers(script, {"envkit", ""}, cwd);
  for (const char* command : {"init", "lock", "install", "doctor", "smoke", "run", "completion"})
    CHECK(std::find(top.begin(), top.end(), command) != top.end());
  // Nested commands, after envkit's own flags.
  const auto importers = bash_offers(script, {"envkit", "-q", "recipes", "import", ""}, cwd);
  CHECK(std::find(importers.begin(), importers.end(), "nvidia-redist") != importers.end());
  CHECK(std::find(importers.begin(), importers.end(), "pypi-torch") != importers.end());
  // A command's flags, and envkit's own after the command.
  CHECK(bash_offers(script, {"envkit", "install", "--lo"}, cwd) ==
        std::vector<std::string>{"--locked"});
  CHECK(bash_offers(script, {"envkit", "install", "--js"}, cwd) ==
        std::vector<std::string>{"--json"});
  // -C takes a folder.
  CHECK(bash_offers(script, {"envkit", "-C", "proj"}, cwd) ==
        std::vector<std::string>{"project-a"});
}

TEST_CASE("zsh and fish read their scripts, and an unknown shell is a usage error",
          "[cli][completion]") {
  const TempDir dir;
  for (const std::string shell : {"zsh", "fish"}) {
    const auto script = completion_script(dir, shell);
    if (program_missing(shell)) continue;  // the case is skipped; the other shell is checked
    // Parse only (-n): both refuse a script with a syntax error.
    auto run = sys::run_process({shell, "-n", script.string()});
    REQUIRE(run);
    INFO(run->err);
    CHECK(run->exit_code == 0);
  }
  const auto fish = run_envkit({.args = {"completion", "fish"}});
  CHECK_THAT(fish.out, Catch::Contains("complete -c envkit -n '__fish_use_subcommand' -a install"));
  CHECK_THAT(fish.out, Catch::Contains("-l locked"));

  const auto r = run_envkit({.args = {"completion", "tcsh"}});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("tcsh"));
}

}  // namespace envkit::test
