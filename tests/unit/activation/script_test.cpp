#include "envkit/activation/script.hpp"

#include <catch2/catch.hpp>

#include "envkit/sys/process.hpp"
#include "support/skip.hpp"

namespace envkit::activation {
namespace {

const std::vector<Assignment> kChanges = {
    {.name = "ENVKIT_PREFIX", .value = "/p q/env"},
    {.name = "PATH", .value = "/p q/env/bin:/usr/bin:/bin", .list = true},
    {.name = "CUDA_HOME", .value = "/p q/env"},
    {.name = "PYTHONHOME"},
};

// Runs `script` in a shell and returns what it printed; empty when that shell
// is not installed here.
std::optional<std::string> run_in(const std::string& shell, const std::string& script,
                                  const std::map<std::string, std::optional<std::string>>& env) {
  if (!sys::find_on_path(shell)) return std::nullopt;
  auto ran = sys::run_process({shell, "-c", script}, {.env = env});
  REQUIRE(ran);
  INFO(ran->err);
  REQUIRE(ran->exit_code == 0);
  return ran->out;
}

TEST_CASE("parse_shell takes a name or a $SHELL path", "[activation]") {
  CHECK(parse_shell("bash") == Shell::bash);
  CHECK(parse_shell("/usr/bin/zsh") == Shell::zsh);
  CHECK(parse_shell("/usr/local/bin/fish") == Shell::fish);
  CHECK_FALSE(parse_shell("tcsh"));
  CHECK_FALSE(parse_shell(""));
}

TEST_CASE("quote keeps spaces, quotes, dollars and backslashes literal", "[activation]") {
  CHECK(quote(Shell::bash, "/a b") == "'/a b'");
  CHECK(quote(Shell::bash, "it's $HOME\\") == R"('it'\''s $HOME\')");
  CHECK(quote(Shell::zsh, "it's") == R"('it'\''s')");
  CHECK(quote(Shell::fish, "it's $HOME\\") == R"('it\'s $HOME\\')");
  CHECK(quote(Shell::bash, "") == "''");
}

TEST_CASE("the fish script sets lists as lists and restores what was there", "[activation]") {
  const auto script = activation_script(Shell::fish, "/p q/env", kChanges);
  CHECK(script ==
        "# envkit: the environment of '/p q/env' for fish.\n"
        "# Load it with: envkit activate --shell fish | source; leave it with: envkit_deactivate\n"
        "if functions -q envkit_deactivate; envkit_deactivate; end\n"
        "set -q ENVKIT_PREFIX; and set -g _ENVKIT_OLD_ENVKIT_PREFIX $ENVKIT_PREFIX\n"
        "set -gx ENVKIT_PREFIX '/p q/env'\n"
        "set -q PATH; and set -g _ENVKIT_OLD_PATH $PATH\n"
        "set -gx PATH '/p q/env/bin' '/usr/bin' '/bin'\n"
        "set -q CUDA_HOME; and set -g _ENVKIT_OLD_CUDA_HOME $CUDA_HOME\n"
        "set -gx CUDA_HOME '/p q/env'\n"
        "set -q PYTHONHOME; and set -g _ENVKIT_OLD_PYTHONHOME $PYTHONHOME\n"
        "set -q PYTHONHOME; and set -e PYTHONHOME\n"
        "function envkit_deactivate --description 'Leave the envkit environment'\n"
        "    if set -q _ENVKIT_OLD_ENVKIT_PREFIX\n"
        "        set -gx ENVKIT_PREFIX $_ENVKIT_OLD_ENVKIT_PREFIX\n"
        "        set -e _ENVKIT_OLD_ENVKIT_PREFIX\n"
        "    else\n"
        "        set -e ENVKIT_PREFIX\n"
        "    end\n"
        "    if set -q _ENVKIT_OLD_PATH\n"
        "        set -gx PATH $_ENVKIT_OLD_PATH\n"
        "        set -e _ENVKIT_OLD_PATH\n"
        "    else\n"
        "        set -e PATH\n"
        "    end\n"
        "    if set -q _ENVKIT_OLD_CUDA_HOME\n"
        "        set -gx CUDA_HOME $_ENVKIT_OLD_CUDA_HOME\n"
        "        set -e _ENVKIT_OLD_CUDA_HOME\n"
        "    else\n"
        "        set -e CUDA_HOME\n"
        "    end\n"
        "    if set -q _ENVKIT_OLD_PYTHONHOME\n"
        "        set -gx PYTHONHOME $_ENVKIT_OLD_PYTHONHOME\n"
        "        set -e _ENVKIT_OLD_PYTHONHOME\n"
        "    else\n"
        "        set -e PYTHONHOME\n"
        "    end\n"
        "    functions -e envkit_deactivate\n"
        "end\n");
}

TEST_CASE("the fish script is valid fish, where fish is installed", "[activation]") {
  if (test::program_missing("fish")) return;
  const auto script = activation_script(Shell::fish, "/p q/env", kChanges);
  const auto out = run_in(
      "fish", script + "printf '%s\\n' $CUDA_HOME \"$PATH\"; envkit_deactivate; echo $CUDA_HOME",
      {{"CUDA_HOME", "/usr/local/cuda"}});
  CHECK(out == "/p q/env\n/p q/env/bin:/usr/bin:/bin\n/usr/local/cuda\n");
}

// What a bash or zsh user sees: the values while activated, then the previous
// ones (set, empty or unset) after envkit_deactivate.
void check_posix_shell(Shell shell, const std::string& binary) {
  if (test::program_missing(binary)) return;
  const auto script = activation_script(shell, "/p q/env", kChanges);
  const std::string show =
      "printf '%s|%s|%s|%s\\n' \"$PATH\" \"$CUDA_HOME\" \"${ENVKIT_PREFIX-unset}\" "
      "\"${PYTHONHOME-unset}\";";
  const auto out = run_in(binary,
                          script + show + "envkit_deactivate;" + show +
                              "typeset -f envkit_deactivate >/dev/null || echo gone",
                          {{"PATH", "/usr/bin:/bin"},
                           {"CUDA_HOME", ""},
                           {"ENVKIT_PREFIX", std::nullopt},
                           {"PYTHONHOME", "/opt/py"}});
  REQUIRE(out);
  CHECK(*out ==
        "/p q/env/bin:/usr/bin:/bin|/p q/env|/p q/env|unset\n"
        "/usr/bin:/bin||unset|/opt/py\n"
        "gone\n");
}

TEST_CASE("the bash script activates and deactivates in a real bash", "[activation]") {
  check_posix_shell(Shell::bash, "bash");
}

TEST_CASE("the zsh script activates and deactivates in a real zsh", "[activation]") {
  check_posix_shell(Shell::zsh, "zsh");
}

TEST_CASE("activating twice in one shell still restores the first values", "[activation]") {
  const auto script = activation_script(Shell::bash, "/p q/env", kChanges);
  const auto out = run_in("bash",
                          "set -u; " + script + script +
                              "envkit_deactivate; printf '%s|%s\\n' \"$PATH\" \"$CUDA_HOME\"",
                          {{"PATH", "/usr/bin:/bin"}, {"CUDA_HOME", "/usr/local/cuda"}});
  REQUIRE(out);
  CHECK(*out == "/usr/bin:/bin|/usr/local/cuda\n");
}

TEST_CASE("values with quotes and dollars survive the shell", "[activation]") {
  const std::vector<Assignment> changes = {{.name = "CUDA_HOME", .value = "/it's $HOME `x` \\n"}};
  const auto out = run_in(
      "bash", activation_script(Shell::bash, "/p", changes) + "printf '%s' \"$CUDA_HOME\"", {});
  REQUIRE(out);
  CHECK(*out == "/it's $HOME `x` \\n");
}

TEST_CASE("a newline in the prefix cannot turn the comment into code", "[activation]") {
  const std::string prefix = "/p\necho INJECTED";
  const std::vector<Assignment> changes = {{.name = "CUDA_HOME", .value = prefix}};
  const auto script = activation_script(Shell::bash, prefix, changes);
  CHECK_THAT(script,
             Catch::StartsWith("# envkit: the environment of '/p?echo INJECTED' for bash.\n"));
  const auto out = run_in("bash", script + "printf '%s' \"$CUDA_HOME\"", {});
  REQUIRE(out);
  CHECK(*out == prefix);  // the value itself keeps its newline, quoted
  CHECK_THAT(activation_script(Shell::fish, prefix, changes),
             Catch::StartsWith("# envkit: the environment of '/p?echo INJECTED' for fish.\n"));
}

}  // namespace
}  // namespace envkit::activation
