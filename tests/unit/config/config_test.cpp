#include "envkit/config/config.hpp"

#include <catch2/catch.hpp>
#include <map>

#include "envkit/sys/fs.hpp"
#include "support/envkit_runner.hpp"
#include "support/temp_dir.hpp"

namespace envkit::config {
namespace {

namespace fs = std::filesystem;
using Catch::Contains;
using Catch::StartsWith;

// An environment of exactly these variables.
Lookup environment(std::map<std::string, std::string> values) {
  return [values = std::move(values)](const env::Variable& variable) -> std::optional<std::string> {
    const auto it = values.find(std::string(variable.name));
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

const Lookup kNothing = environment({});

// How the page's table names a variable: "| `ENVKIT_JOBS` |".
std::string fmt_row(std::string_view name) {
  return "| `" + std::string(name) + "` |";
}

Settings from_file(std::string_view text, const fs::path& file = "/p/.envkit/config.yaml",
                   const Lookup& lookup = kNothing) {
  Settings settings;
  auto applied = apply_file(settings, text, file, lookup);
  INFO((applied ? "" : applied.error().to_string()));
  REQUIRE(applied.ok());
  return settings;
}

Error file_error(std::string_view text) {
  Settings settings;
  auto applied = apply_file(settings, text, "/p/.envkit/config.yaml", kNothing);
  REQUIRE_FALSE(applied.ok());
  return applied.error();
}

Error env_error(std::map<std::string, std::string> values) {
  Settings settings;
  auto applied = apply_environment(settings, environment(std::move(values)));
  REQUIRE_FALSE(applied.ok());
  return applied.error();
}

TEST_CASE(
    "defaults: no mirrors, 8 jobs, the default cache, pip's index, auto link mode and packaging",
    "[config]") {
  const Settings settings;
  CHECK(settings.mirrors.value.empty());
  CHECK(settings.jobs.value == 8);
  CHECK_FALSE(settings.cache_dir.value);
  CHECK_FALSE(settings.index_url.value);
  CHECK(settings.link_mode.value == "auto");
  CHECK(settings.packaging.value == "auto");
  CHECK_FALSE(settings.compile_bytecode.value);
  CHECK(settings.jobs.source == "default");
}

TEST_CASE("a config file sets every key and names file:line as the source", "[config]") {
  const auto settings = from_file(
      "# team settings\n"
      "mirrors:\n"
      "  - http://mirror.lan/envkit\n"
      "  - file:///srv/mirror\n"
      "jobs: 16\n"
      "cache-dir: /scratch/envkit\n"
      "index-url: https://pypi.lan/simple\n"
      "link-mode: copy\n"
      "packaging: wheel\n"
      "compile-bytecode: true\n");
  CHECK(settings.mirrors.value ==
        std::vector<std::string>{"http://mirror.lan/envkit", "file:///srv/mirror"});
  CHECK(settings.mirrors.source == "/p/.envkit/config.yaml:2");
  CHECK(settings.jobs.value == 16);
  CHECK(settings.jobs.source == "/p/.envkit/config.yaml:5");
  CHECK(settings.cache_dir.value == fs::path("/scratch/envkit"));
  CHECK(settings.index_url.value == "https://pypi.lan/simple");
  CHECK(settings.link_mode.value == "copy");
  CHECK(settings.packaging.value == "wheel");
  CHECK(settings.packaging.source == "/p/.envkit/config.yaml:9");
  CHECK(settings.compile_bytecode.value);
  CHECK(settings.compile_bytecode.source == "/p/.envkit/config.yaml:10");
}

TEST_CASE("one mirror may be written without a list, an empty list means none", "[config]") {
  CHECK(from_file("mirrors: http://m\n").mirrors.value == std::vector<std::string>{"http://m"});
  auto settings = from_file("mirrors: [http://a]\n");
  auto applied = apply_file(settings, "mirrors: []\n", "/p/.envkit/config.yaml", kNothing);
  REQUIRE(applied.ok());
  CHECK(settings.mirrors.value.empty());
  CHECK(settings.mirrors.source == "/p/.envkit/config.yaml:1");
  CHECK(from_file("mirrors:\n").mirrors.value.empty());
}

TEST_CASE("an empty file or one of only comments sets nothing", "[config]") {
  CHECK(from_file("").jobs.source == "default");
  CHECK(from_file("# nothing yet\n").jobs.source == "default");
}

TEST_CASE("a relative cache-dir is relative to the file's folder, ~/ is $HOME", "[config]") {
  CHECK(from_file("cache-dir: cache\n").cache_dir.value == fs::path("/p/.envkit/cache"));
  CHECK(from_file("cache-dir: ../shared/cache\n").cache_dir.value == fs::path("/p/shared/cache"));
  CHECK(from_file("cache-dir: ~/envkit-cache\n", "/p/.envkit/config.yaml",
                  environment({{"HOME", "/home/ada"}}))
            .cache_dir.value == fs::path("/home/ada/envkit-cache"));
}

TEST_CASE("unknown keys are input errors at file:line:column, with a suggestion", "[config]") {
  const auto error = file_error("jobs: 4\nmirors: [http://m]\n");
  CHECK(error.code() == ErrorCode::input);
  CHECK(error.headline() == "/p/.envkit/config.yaml:2:1: unknown key `mirors`");
  CHECK_THAT(error.to_string(), Contains("did you mean `mirrors`?"));
  CHECK_THAT(error.to_string(), Contains("`index-url`"));
}

TEST_CASE("bad values are input errors pointing at the value", "[config]") {
  CHECK(file_error("jobs: many\n").headline() ==
        "/p/.envkit/config.yaml:1:7: `jobs`: expected a whole number from 1 to 64, found `many`");
  CHECK_THAT(file_error("jobs: 0\n").headline(), Contains("found `0`"));
  CHECK_THAT(file_error("jobs: 65\n").headline(), Contains("found `65`"));
  CHECK_THAT(file_error("jobs: [1, 2]\n").headline(), Contains("found a list"));
  CHECK(file_error("jobs:\n").headline() ==
        "/p/.envkit/config.yaml:1:1: `jobs`: expected a whole number from 1 to 64, found nothing");

  const auto mode = file_error("\nlink-mode: hardlnk\n");
  CHECK(mode.headline() ==
        "/p/.envkit/config.yaml:2:12: `link-mode`: expected `auto`, `reflink`, `hardlink` or "
        "`copy`, found `hardlnk`");
  CHECK_THAT(mode.to_string(), Contains("did you mean `hardlink`?"));

  CHECK(file_error("mirrors:\n  - http://ok\n  - not a url\n").headline() ==
        "/p/.envkit/config.yaml:3:5: `mirrors`: expected a URL such as "
        "`http://mirror.lan/envkit`, found `not a url`");
  CHECK_THAT(file_error("packaging: {a: 1}\n").headline(), Contains("found a mapping"));
  CHECK_THAT(file_error("index-url: pypi.org\n").headline(),
             Contains("`index-url`: expected a URL"));
  CHECK(file_error("compile-bytecode: yes\n").headline() ==
        "/p/.envkit/config.yaml:1:19: `compile-bytecode`: expected `true`, `false`, `1` or `0`, "
        "found `yes`");
}

TEST_CASE("malformed YAML, duplicate keys and a non-mapping are located errors", "[config]") {
  CHECK_THAT(file_error("jobs: [1\n").headline(), StartsWith("/p/.envkit/config.yaml:"));
  CHECK_THAT(file_error("jobs: 1\njobs: 2\n").headline(),
             Contains("2:1: duplicate key `jobs` (first on line 1)"));
  CHECK_THAT(file_error("- jobs: 1\n").headline(),
             Contains("1:1: expected a mapping of settings such as `jobs: 8`, found a list"));
}

TEST_CASE("every setting has its ENVKIT_ variable", "[config]") {
  Settings settings;
  REQUIRE(
      apply_environment(settings, environment({{"ENVKIT_MIRRORS", "http://a, http://b  http://c"},
                                               {"ENVKIT_JOBS", "3"},
                                               {"ENVKIT_CACHE_DIR", "/c"},
                                               {"ENVKIT_INDEX_URL", "https://i/simple"},
                                               {"ENVKIT_LINK_MODE", "hardlink"},
                                               {"ENVKIT_PACKAGING", "wheel"},
                                               {"ENVKIT_COMPILE_BYTECODE", "1"}}))
          .ok());
  CHECK(settings.mirrors.value == std::vector<std::string>{"http://a", "http://b", "http://c"});
  CHECK(settings.mirrors.source == "env ENVKIT_MIRRORS");
  CHECK(settings.jobs.value == 3);
  CHECK(settings.jobs.source == "env ENVKIT_JOBS");
  CHECK(settings.cache_dir.value == fs::path("/c"));
  CHECK(settings.index_url.value == "https://i/simple");
  CHECK(settings.link_mode.value == "hardlink");
  CHECK(settings.packaging.value == "wheel");
  CHECK(settings.compile_bytecode.value);
  for (const auto& key : kKeys) {
    INFO(key.name);
    CHECK(std::find_if(std::begin(env::kAll), std::end(env::kAll), [&](const env::Variable& v) {
            return v.name == key.variable->name;
          }) != std::end(env::kAll));
  }
}

TEST_CASE("an empty variable is unset, but an empty ENVKIT_MIRRORS means no mirrors", "[config]") {
  auto settings = from_file("jobs: 4\nmirrors: [http://m]\n");
  REQUIRE(
      apply_environment(settings, environment({{"ENVKIT_JOBS", ""}, {"ENVKIT_MIRRORS", ""}})).ok());
  CHECK(settings.jobs.value == 4);
  CHECK(settings.mirrors.value.empty());
  CHECK(settings.mirrors.source == "env ENVKIT_MIRRORS");
}

TEST_CASE("a bad variable is an input error naming it", "[config]") {
  const auto error = env_error({{"ENVKIT_JOBS", "lots"}});
  CHECK(error.code() == ErrorCode::input);
  CHECK(error.headline() == "ENVKIT_JOBS: expected a whole number from 1 to 64, found `lots`");
  CHECK_THAT(env_error({{"ENVKIT_PACKAGING", "wheels"}}).to_string(),
             Contains("did you mean `wheel`?"));
  CHECK_THAT(env_error({{"ENVKIT_MIRRORS", "http://ok,mirror.lan"}}).headline(),
             Contains("found `mirror.lan`"));
  CHECK_THAT(env_error({{"ENVKIT_COMPILE_BYTECODE", "on"}}).to_string(),
             Contains("ENVKIT_COMPILE_BYTECODE: expected `true`, `false`, `1` or `0`, found `on`"));
}

TEST_CASE("precedence: variable over project file over user file over default", "[config]") {
  const test::TempDir dir;
  const auto user = dir.write("xdg/envkit/config.yaml",
                              "jobs: 2\npackaging: wheel\nlink-mode: copy\nmirrors: [http://u]\n");
  const auto project = dir.write("project/.envkit/config.yaml", "jobs: 3\npackaging: archive\n");
  const auto lookup = environment({{"XDG_CONFIG_HOME", (dir.path() / "xdg").string()},
                                   {"HOME", (dir.path() / "home").string()},
                                   {"ENVKIT_JOBS", "4"}});
  const auto files = Files::of(dir.path() / "project", lookup);
  CHECK(files.user == user);
  CHECK(files.project == project);
  auto settings = load(files, lookup);
  REQUIRE(settings.ok());
  CHECK(settings->jobs.value == 4);
  CHECK(settings->jobs.source == "env ENVKIT_JOBS");
  CHECK(settings->packaging.value == "archive");
  CHECK(settings->packaging.source == project.string() + ":2");
  CHECK(settings->link_mode.value == "copy");
  CHECK(settings->link_mode.source == user.string() + ":3");
  CHECK(settings->mirrors.value == std::vector<std::string>{"http://u"});
  CHECK(settings->index_url.source == "default");

  set_by_flag(settings->jobs, 5);
  CHECK(settings->jobs.value == 5);
  CHECK(settings->jobs.source == "flag");
}

TEST_CASE("the user file is ~/.config/envkit/config.yaml without XDG_CONFIG_HOME", "[config]") {
  CHECK(Files::of("/p", environment({{"HOME", "/home/ada"}})).user ==
        fs::path("/home/ada/.config/envkit/config.yaml"));
  CHECK(Files::of("/p", environment({{"HOME", "/home/ada"}, {"XDG_CONFIG_HOME", ""}})).user ==
        fs::path("/home/ada/.config/envkit/config.yaml"));
  CHECK_FALSE(Files::of("/p", kNothing).user);
  CHECK(Files::of("/p", kNothing).project == fs::path("/p/.envkit/config.yaml"));
}

TEST_CASE("missing files are skipped, a bad one fails the load", "[config]") {
  const test::TempDir dir;
  const Files files{.user = dir.path() / "none.yaml", .project = dir.path() / "nor-this.yaml"};
  auto settings = load(files, kNothing);
  REQUIRE(settings.ok());
  CHECK(settings->jobs.source == "default");

  dir.write("project/.envkit/config.yaml", "jbos: 3\n");
  auto failed = load(Files::of(dir.path() / "project", kNothing), kNothing);
  REQUIRE_FALSE(failed.ok());
  CHECK_THAT(failed.error().headline(), Contains("config.yaml:1:1: unknown key `jbos`"));
}

TEST_CASE("docs/config.md lists every ENVKIT_ variable envkit reads", "[config]") {
  const auto page = sys::read_file(test::source_dir() / "docs" / "config.md");
  REQUIRE(page.ok());
  for (const auto& variable : env::kAll) {
    if (!variable.name.starts_with("ENVKIT_")) continue;
    INFO(variable.name);
    CHECK_THAT(*page, Contains(fmt_row(variable.name)));
  }
}

}  // namespace
}  // namespace envkit::config

TEST_CASE("a flag's values are checked as the config file's, naming the flag", "[config]") {
  envkit::config::Settings settings;
  const auto bad = envkit::config::apply_flag(settings, envkit::config::kMirrors, "--mirror",
                                              {"http://mirror.lan/envkit", "not-a-url"});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().exit_code() == 2);
  CHECK_THAT(bad.error().message(), Catch::StartsWith("`--mirror`: expected a URL such as") &&
                                        Catch::EndsWith(", found `not-a-url`"));
  CHECK(settings.mirrors.value.empty());

  REQUIRE(envkit::config::apply_flag(settings, envkit::config::kMirrors, "--mirror",
                                     {"http://mirror.lan/envkit"})
              .ok());
  CHECK(settings.mirrors.value == std::vector<std::string>{"http://mirror.lan/envkit"});
  CHECK(settings.mirrors.source == "flag");
}
