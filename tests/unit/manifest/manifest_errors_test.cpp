// Manifests that do not parse: the exact error a user sees, with file:line:column.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "envkit/manifest/manifest.hpp"

namespace envkit::manifest {
namespace {

using Strings = std::vector<std::string>;

Error error_for(std::string_view text) {
  auto result = parse(text, "envkit.yaml");
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().code() == ErrorCode::input);
  return result.error();
}

constexpr std::string_view kFrameworks =
    "the frameworks are `torch`, `tensorflow`, `tensorflow-gpu` and `jax`";
constexpr std::string_view kIndentationHint =
    "check the indentation: the keys of one mapping, and the `-` items of one list, start in the "
    "same column";

// ------------------------------------------------------------- malformed YAML

TEST_CASE("an unclosed bracket is invalid YAML", "[manifest][errors][yaml]") {
  // Located at the bracket that is not closed, not where the parser noticed.
  const Error error = error_for("platforms: [linux-x86_64\nframework: torch\n");
  CHECK(error.headline() == "envkit.yaml:1:12: invalid YAML: `[` is not closed by `]`");
  CHECK(error.hints().empty());
}

TEST_CASE("an unclosed brace is invalid YAML", "[manifest][errors][yaml]") {
  const Error error = error_for("framework: torch\nsmoke: { steps: 200\n");
  CHECK(error.headline() == "envkit.yaml:2:8: invalid YAML: `{` is not closed by `}`");
}

TEST_CASE("an unclosed quote points at where the string starts", "[manifest][errors][yaml]") {
  // Located where the string opens, not at the end of the file where the parser notices.
  const auto text =
      GENERATE(as<std::string>{}, "name: demo\nframework: \"torch 2.1.*\nrequires:\n  cudnn: 8\n",
               "name: demo\nframework: 'torch 2.1.*\nrequires:\n  cudnn: 8\n\n\n",
               "name: demo\nframework: \"torch 2.1.*");
  CAPTURE(text);
  const Error error = error_for(text);
  CHECK(error.headline() == "envkit.yaml:2:12: invalid YAML: quoted string is not closed");
  CHECK(error.hints() == Strings{"end the string with the quote it starts with"});
}

TEST_CASE("a key indented less than its siblings is invalid YAML", "[manifest][errors][yaml]") {
  const Error error = error_for("system:\n  driver: \">=390\"\n glibc: \">=2.28\"\n");
  CHECK(error.headline() == "envkit.yaml:3:2: invalid YAML: end of map not found");
  CHECK(error.hints() == Strings{std::string(kIndentationHint)});
}

TEST_CASE("a key indented under a scalar is invalid YAML", "[manifest][errors][yaml]") {
  const Error error = error_for("framework: torch\n  requires: cudnn\n");
  CHECK(error.headline() == "envkit.yaml:2:11: invalid YAML: illegal map value");
  CHECK(error.hints() == Strings{"check the indentation, and quote values that contain `: `"});
}

TEST_CASE("a tab in the indentation is named", "[manifest][errors][yaml]") {
  struct Case {
    std::string_view text;
    std::string_view headline;
  };
  const auto [text, headline] = GENERATE(values<Case>({
      {"requires:\n\tcudnn: 8\n",
       "envkit.yaml:2:1: invalid YAML: illegal tab when looking for indentation"},
      {"name: demo\n\tframework: torch\n",
       "envkit.yaml:2:1: invalid YAML: illegal tab when looking for indentation"},
  }));
  CAPTURE(text);
  const Error error = error_for(text);
  CHECK(error.headline() == headline);
  CHECK(error.hints() == Strings{"line 2 is indented with a tab; YAML allows only spaces"});
}

TEST_CASE("nesting too deep for the parser is an error, not a crash", "[manifest][errors][yaml]") {
  // Located at the first bracket past the limit: the top mapping and 63 lists make 64 levels.
  const Error error = error_for("requires: " + std::string(5000, '['));
  CHECK(error.headline() == "envkit.yaml:1:74: invalid YAML: nested too deeply (over 64 levels)");
}

TEST_CASE("a second YAML document is refused", "[manifest][errors][yaml]") {
  const Error error = error_for("framework: torch\n---\nframework: jax\n");
  CHECK(error.headline() == "envkit.yaml:3:1: expected one YAML document, found a second one");
  CHECK(error.hints() == Strings{"remove the `---` line and merge the documents"});
}

TEST_CASE("an unquoted specifier that YAML reads as something else must be quoted",
          "[manifest][errors][yaml]") {
  // `>` starts a folded text block and `!` a tag: without the check, `!=12.0`
  // would silently become an empty value, any version.
  struct Case {
    std::string_view text;
    std::string_view headline;
    std::string_view hint;
  };
  const auto [text, headline, hint] = GENERATE(values<Case>({
      {"requires:\n  cuda: >=12.1\n", "envkit.yaml:2:9: `>=12.1` must be quoted",
       "unquoted, a leading `>` starts a YAML text block; write `\">=12.1\"`"},
      {"requires:\n  cuda: >=12.1,<13  # CUDA 12\n", "envkit.yaml:2:9: `>=12.1,<13` must be quoted",
       "unquoted, a leading `>` starts a YAML text block; write `\">=12.1,<13\"`"},
      {"requires:\n  cuda: !=12.0\n", "envkit.yaml:2:9: `!=12.0` must be quoted",
       "unquoted, a leading `!` is a YAML tag; write `\"!=12.0\"`"},
      {"requires:\n  cuda: !=12.0,<13\n", "envkit.yaml:2:9: `!=12.0,<13` must be quoted",
       "unquoted, a leading `!` is a YAML tag; write `\"!=12.0,<13\"`"},
      {"platforms: [!linux]\n", "envkit.yaml:1:13: `!linux` must be quoted",
       "unquoted, a leading `!` is a YAML tag; write `\"!linux\"`"},
  }));
  CAPTURE(text);
  const Error error = error_for(text);
  CHECK(error.headline() == headline);
  CHECK(error.hints() == Strings{std::string(hint)});
}

// ------------------------------------------------------------ document shape

TEST_CASE("an empty manifest is refused", "[manifest][errors]") {
  const auto text = GENERATE(as<std::string>{}, "", "\n\n", "# just a comment\n", "---\n", "~\n");
  CAPTURE(text);
  const Error error = error_for(text);
  CHECK(error.headline() == "envkit.yaml: manifest is empty");
  CHECK(error.hints() == Strings{"write what the project needs, such as `framework: torch 2.1.*`, "
                                 "or list its packages under `requires:`"});
}

TEST_CASE("a top-level list is not a manifest", "[manifest][errors]") {
  const Error error = error_for("- framework: torch\n- requires: {}\n");
  CHECK(error.headline() ==
        "envkit.yaml:1:1: expected a mapping of manifest keys such as `framework:`, found a list");
  CHECK(error.hints() ==
        Strings{"write one `key: value` per line, such as `framework: torch 2.1.*`"});
}

TEST_CASE("a top-level scalar is not a manifest", "[manifest][errors]") {
  const Error error = error_for("torch 2.1\n");
  CHECK(error.headline() ==
        "envkit.yaml:1:1: expected a mapping of manifest keys such as `framework:`, found `torch "
        "2.1`");
}

TEST_CASE("a key must be a name", "[manifest][errors]") {
  const Error error = error_for("framework: torch\n[cuda]: 12\n");
  CHECK(error.headline() == "envkit.yaml:2:1: expected a key name, found a list");
}

// --------------------------------------------------------------- unknown keys

TEST_CASE("an unknown top-level key suggests the closest one", "[manifest][errors][keys]") {
  const Error error = error_for("name: demo\nframwork: torch\n");
  CHECK(error.headline() == "envkit.yaml:2:1: unknown key `framwork`");
  CHECK(error.hints() == Strings{"did you mean `framework`?"});
}

TEST_CASE("keys are case-sensitive, and the suggestion says how to write them",
          "[manifest][errors][keys]") {
  const Error error = error_for("Platforms: [linux-x86_64]\n");
  CHECK(error.headline() == "envkit.yaml:1:1: unknown key `Platforms`");
  CHECK(error.hints() == Strings{"did you mean `platforms`?"});
}

TEST_CASE("an unknown key with nothing close lists the keys", "[manifest][errors][keys]") {
  const Error error = error_for("framework: torch\nchannels: [conda-forge]\n");
  CHECK(error.headline() == "envkit.yaml:2:1: unknown key `channels`");
  CHECK(error.hints() ==
        Strings{"the keys are `name`, `framework`, `requires`, `external`, `platforms`, "
                "`system`, `smoke`, `python-requirements`, `indexes`, `only-binary` and "
                "`resolution`"});
}

TEST_CASE("a package at the top level belongs under `requires:`", "[manifest][errors][keys]") {
  const Error error = error_for("framework: torch\ncudnn: 8\n");
  CHECK(error.headline() == "envkit.yaml:2:1: unknown key `cudnn`");
  CHECK(error.hints() == Strings{"`cudnn` is a package: list it under `requires:`"});
}

TEST_CASE("an unknown key in `system` suggests the closest one", "[manifest][errors][keys]") {
  const Error error = error_for("system:\n  driver: \">=525\"\n  cuda_arch: [\"8.0\"]\n");
  CHECK(error.headline() == "envkit.yaml:3:3: unknown key `cuda_arch` in `system`");
  CHECK(error.hints() == Strings{"did you mean `cuda-arch`?"});
}

TEST_CASE("an unknown key in `system` with nothing close lists its keys",
          "[manifest][errors][keys]") {
  const Error error = error_for("system:\n  gpu: a100\n");
  CHECK(error.headline() == "envkit.yaml:2:3: unknown key `gpu` in `system`");
  CHECK(error.hints() == Strings{"the keys of `system` are `driver`, `cuda-arch` and `glibc`"});
}

TEST_CASE("an unknown key in `smoke` suggests the closest one", "[manifest][errors][keys]") {
  const Error error = error_for("smoke: { step: 10 }\n");
  CHECK(error.headline() == "envkit.yaml:1:10: unknown key `step` in `smoke`");
  CHECK(error.hints() == Strings{"did you mean `steps`?"});
}

TEST_CASE("a duplicate top-level key names both lines", "[manifest][errors][keys]") {
  const Error error = error_for("framework: torch\nname: demo\nframework: jax\n");
  CHECK(error.headline() == "envkit.yaml:3:1: duplicate key `framework` (first on line 1)");
  CHECK(error.hints() == Strings{"keep one of the two `framework:` entries"});
}

TEST_CASE("a duplicate key inside a section names both lines", "[manifest][errors][keys]") {
  const Error error = error_for("system:\n  driver: \">=525\"\n  glibc: \"2.28\"\n  driver: 550\n");
  CHECK(error.headline() ==
        "envkit.yaml:4:3: duplicate key `driver` in `system` (first on line 2)");
}

// ---------------------------------------------------------------- wrong types

TEST_CASE("`framework` as a list", "[manifest][errors][types]") {
  const Error error = error_for("framework: [torch, \"2.1\"]\n");
  CHECK(error.headline() ==
        "envkit.yaml:1:12: `framework`: expected a framework and an optional version, such as "
        "`torch 2.1.*`, found a list");
}

TEST_CASE("`requires` as a list", "[manifest][errors][types]") {
  const Error error = error_for("requires:\n  - cuda\n  - cudnn\n");
  CHECK(error.headline() ==
        "envkit.yaml:2:3: `requires`: expected a mapping of package names to version specifiers, "
        "found a list");
}

TEST_CASE("a version specifier as a list", "[manifest][errors][types]") {
  const Error error = error_for("requires:\n  cuda: [12.1, 12.2]\n");
  CHECK(error.headline() ==
        "envkit.yaml:2:9: `requires.cuda`: expected a version specifier such as `>=8.9,<9`, "
        "found a list");
}

TEST_CASE("`platforms` as a mapping", "[manifest][errors][types]") {
  const Error error = error_for("platforms:\n  linux: x86_64\n");
  CHECK(error.headline() ==
        "envkit.yaml:2:3: `platforms`: expected a platform or a list of platforms, such as "
        "`[linux-x86_64]`, found a mapping");
}

TEST_CASE("a platform inside the list as a mapping", "[manifest][errors][types]") {
  const Error error = error_for("platforms: [linux-x86_64, {os: linux}]\n");
  CHECK(error.headline() ==
        "envkit.yaml:1:27: `platforms`: expected a platform such as `linux-x86_64`, found a "
        "mapping");
}

TEST_CASE("an empty platform list", "[manifest][errors][types]") {
  const Error error = error_for("platforms: []\n");
  CHECK(error.headline() ==
        "envkit.yaml:1:12: `platforms`: expected at least one platform, found an empty list");
  CHECK(error.hints() == Strings{"leave out `platforms:` to lock for this machine's platform"});
}

TEST_CASE("`smoke.steps` must be a positive integer", "[manifest][errors][types]") {
  struct Case {
    std::string_view steps;
    std::string_view found;
  };
  const auto [steps, found] = GENERATE(values<Case>({
      {"fast", "`fast`"},
      {"0", "`0`"},
      {"-1", "`-1`"},
      {"2.5", "`2.5`"},
      {"1e3", "`1e3`"},
      {"99999999999", "`99999999999`"},
      {"[200]", "a list"},
  }));
  CAPTURE(steps);
  const Error error = error_for("smoke:\n  steps: " + std::string(steps) + "\n");
  CHECK(error.headline() == "envkit.yaml:2:10: `smoke.steps`: expected a positive integer, found " +
                                std::string(found));
  CHECK(error.hints() == Strings{"a number of training steps from 1 to 2147483647, such as `200`"});
}

TEST_CASE("`smoke.steps` with no value", "[manifest][errors][types]") {
  const Error error = error_for("smoke:\n  steps:\n");
  CHECK(error.headline() ==
        "envkit.yaml:2:3: `smoke.steps`: expected a positive integer, found nothing");
}

TEST_CASE("`system` as a string", "[manifest][errors][types]") {
  const Error error = error_for("system: a100\n");
  CHECK(error.headline() ==
        "envkit.yaml:1:9: `system`: expected a mapping with the keys `driver`, `cuda-arch` and "
        "`glibc`, found `a100`");
}

TEST_CASE("`name` as a list, or empty", "[manifest][errors][types]") {
  CHECK(error_for("name: [a, b]\n").headline() ==
        "envkit.yaml:1:7: `name`: expected a project name, found a list");
  CHECK(error_for("name: \"\"\n").headline() ==
        "envkit.yaml:1:7: `name`: expected a project name, found an empty string");
}

TEST_CASE("`python-requirements` as a mapping", "[manifest][errors][types]") {
  const Error error = error_for("python-requirements: {file: requirements.txt}\n");
  CHECK(error.headline() ==
        "envkit.yaml:1:22: `python-requirements`: expected a file name or a list of file names, "
        "found a mapping");
}

TEST_CASE("an external package that is neither a version, `system` nor a path",
          "[manifest][errors][types]") {
  const Error error = error_for("external:\n  python: python3\n");
  CHECK(error.headline() ==
        "envkit.yaml:2:11: `external.python`: expected a version, `system` or a path, found "
        "`python3`");
  CHECK(error.causes() == Strings{"`python3` is not a valid version"});
  CHECK(error.hints() == Strings{"write the version the machine has (`3.6.9`), `system` to find "
                                 "it on the host, or a path such as `/usr/bin/python3`"});
}

// ------------------------------------------------------------------ framework

TEST_CASE("an empty framework", "[manifest][errors][framework]") {
  struct Case {
    std::string_view text;
    std::string_view location;
    std::string_view found;
  };
  const auto [text, location, found] = GENERATE(values<Case>({
      {"framework: \"\"\n", "1:12", "an empty string"},
      {"framework:\n", "1:1", "nothing"},
      {"framework: ~\n", "1:1", "nothing"},
  }));
  CAPTURE(text);
  const Error error = error_for(text);
  CHECK(error.headline() == "envkit.yaml:" + std::string(location) +
                                ": `framework`: expected a framework and an optional version, "
                                "such as `torch 2.1.*`, found " +
                                std::string(found));
  CHECK(error.hints() == Strings{"a project without a Python framework leaves out `framework:` "
                                 "and lists its packages under `requires:`"});
}

TEST_CASE("a framework that is only a specifier", "[manifest][errors][framework]") {
  const Error error = error_for("framework: \">=2.1\"\n");
  CHECK(error.headline() ==
        "envkit.yaml:1:12: `framework`: expected a framework and an optional version, such as "
        "`torch 2.1.*`, found `>=2.1`");
}

TEST_CASE("an unknown framework suggests the closest one", "[manifest][errors][framework]") {
  const Error error = error_for("framework: tensorflw 2.15\n");
  CHECK(error.headline() == "envkit.yaml:1:12: `framework`: unknown framework `tensorflw`");
  CHECK(error.hints() == Strings{"did you mean `tensorflow`?"});
}

TEST_CASE("an unknown framework with nothing close lists the frameworks",
          "[manifest][errors][framework]") {
  const Error error = error_for("framework: mxnet==1.9\n");
  CHECK(error.headline() == "envkit.yaml:1:12: `framework`: unknown framework `mxnet`");
  CHECK(error.hints() == Strings{std::string(kFrameworks)});
}

TEST_CASE("a package that is not a framework", "[manifest][errors][framework]") {
  const Error error = error_for("framework: cuda 12.1\n");
  CHECK(error.headline() == "envkit.yaml:1:12: `framework`: `cuda` is a package, not a framework");
  CHECK(error.hints() == Strings{"list `cuda` under `requires:`; " + std::string(kFrameworks)});
}

// ----------------------------------------------------------------- specifiers

TEST_CASE("a bad clause in a requirement points at the clause", "[manifest][errors][specs]") {
  const Error error = error_for("requires:\n  cuda: \">=12.1,<<13\"\n");
  CHECK(error.headline() ==
        "envkit.yaml:2:17: `requires.cuda`: in `>=12.1,<<13`, `<<13` is not a valid version "
        "specifier");
  CHECK(error.causes() ==
        Strings{"`<13` is not a PEP 440 version: expected a release number at `<13`"});
}

TEST_CASE("the whole error as the command line prints it", "[manifest][errors][specs]") {
  const Error error = error_for("framework: torch 2.1.*\nrequires:\n  cuda: \">=12.1,<<13\"\n");
  CHECK(error.to_string() ==
        "error: envkit.yaml:3:17: `requires.cuda`: in `>=12.1,<<13`, `<<13` is not a valid "
        "version specifier\n"
        "  caused by: `<13` is not a PEP 440 version: expected a release number at `<13`\n");
  CHECK(error.exit_code() == 2);
}

TEST_CASE("a bad framework specifier points at the specifier", "[manifest][errors][specs]") {
  // The column counts the opening quote when there is one.
  struct Case {
    std::string_view text;
    std::string_view location;
  };
  const auto [text, location] = GENERATE(values<Case>({
      {"framework: torch ~=2\n", "1:18"},
      {"framework: \"torch ~=2\"\n", "1:19"},
      {"framework: torch~=2\n", "1:17"},
  }));
  CAPTURE(text);
  const Error error = error_for(text);
  CHECK(error.headline() == "envkit.yaml:" + std::string(location) +
                                ": `framework`: `~=2` is not a valid version specifier");
  CHECK(error.causes() == Strings{"`~=` needs at least two release numbers"});
  CHECK(error.hints() == Strings{"write `~=2.0` (>= that version, same major)"});
}

TEST_CASE("a bad clause after good ones in a framework specifier", "[manifest][errors][specs]") {
  const Error error = error_for("framework: tensorflow >=2.10,<2.11,2.x\n");
  CHECK(error.headline() ==
        "envkit.yaml:1:36: `framework`: in `>=2.10,<2.11,2.x`, `2.x` is not a valid version "
        "specifier");
}

TEST_CASE("a bad framework specifier that repeats the name points at the specifier",
          "[manifest][errors][specs]") {
  const Error error = error_for("framework: torch torch\n");
  CHECK(error.headline() ==
        "envkit.yaml:1:18: `framework`: `torch` is not a valid version specifier");
  CHECK(error.causes() == Strings{"expected a release number at `torch`"});
}

TEST_CASE("a bad driver specifier points inside the quotes", "[manifest][errors][specs]") {
  const Error error = error_for("system:\n  driver: \">=\"\n");
  CHECK(error.headline() ==
        "envkit.yaml:2:12: `system.driver`: `>=` is not a valid version specifier");
  CHECK(error.causes() == Strings{"`>=` has no version"});
}

// ------------------------------------------------------- packages, platforms

TEST_CASE("an unknown package in `requires` suggests the closest one",
          "[manifest][errors][requires]") {
  const Error error = error_for("requires:\n  cuda: 12\n  cudn: 8\n");
  CHECK(error.headline() == "envkit.yaml:3:3: unknown package `cudn` in `requires`");
  CHECK(error.hints() == Strings{"did you mean `cudnn`?"});
}

TEST_CASE("an unknown package with nothing close lists the known packages",
          "[manifest][errors][requires]") {
  const Error error = error_for("external:\n  nccl: system\n");
  CHECK(error.headline() == "envkit.yaml:2:3: unknown package `nccl` in `external`");
  CHECK(error.hints() ==
        Strings{"the known packages are `cuda`, `cudnn`, `python`, `zlib`, `torch`, "
                "`tensorflow`, `tensorflow-gpu` and `jax`"});
}

TEST_CASE("two spellings of one package in `requires`", "[manifest][errors][requires]") {
  const Error error = error_for("requires:\n  torch: 2.1\n  cuda: 12\n  pytorch: 2.2\n");
  CHECK(error.headline() ==
        "envkit.yaml:4:3: duplicate package `torch` in `requires` (first on "
        "line 2)");
  CHECK(error.hints() == Strings{"`pytorch` is another name for `torch`"});
}

TEST_CASE("an unknown platform suggests the closest spelling", "[manifest][errors][platforms]") {
  const Error error = error_for("platforms: [linux-aarch64, linux-x86-64]\n");
  CHECK(error.headline() == "envkit.yaml:1:28: unknown platform `linux-x86-64`");
  CHECK(error.hints() == Strings{"did you mean `linux-x86_64`?"});
}

TEST_CASE("an unsupported platform lists the known ones", "[manifest][errors][platforms]") {
  const Error error = error_for("platforms: macos-arm64\n");
  CHECK(error.headline() == "envkit.yaml:1:12: unknown platform `macos-arm64`");
  CHECK(error.hints() ==
        Strings{"envkit knows `linux-x86_64`, `linux-aarch64` and `windows-x86_64`"});
}

TEST_CASE("a bad compute capability", "[manifest][errors][system]") {
  const Error error = error_for("system:\n  cuda-arch:\n    - \"8.0\"\n    - 86\n");
  CHECK(error.headline() == "envkit.yaml:4:7: `86` is not a GPU compute capability");
  CHECK(error.hints() == Strings{"write major.minor, e.g. `8.6` (or `sm_86`)"});
}

TEST_CASE("a compute capability as a mapping", "[manifest][errors][system]") {
  const Error error = error_for("system:\n  cuda-arch: {a100: 8.0}\n");
  CHECK(error.headline() ==
        "envkit.yaml:2:14: `system.cuda-arch`: expected a compute capability or a list of them, "
        "such as `[\"8.0\", \"9.0\"]`, found a mapping");
}

TEST_CASE("only-binary takes true or false", "[manifest][errors]") {
  const Error error = error_for("framework: torch\nonly-binary: wheels\n");
  CHECK(error.to_string().find("envkit.yaml:2:14") != std::string::npos);
  CHECK(error.to_string().find("`true` or `false`") != std::string::npos);
}

}  // namespace
}  // namespace envkit::manifest
