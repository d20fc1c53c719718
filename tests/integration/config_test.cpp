// envkit's configuration end to end: config.yaml files (user and project),
// ENVKIT_* variables and flags, as `envkit config list` shows them and as
// `install`, `mirror` and `cache` use them.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "envkit/sys/fs.hpp"
#include "install_support.hpp"
#include "isolated_project.hpp"
#include "support/http_server.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using Catch::Contains;
using nlohmann::json;

// name -> {"value", "source"} of `envkit config list --json`.
std::map<std::string, json> listed(const sys::ProcessOutput& r) {
  std::map<std::string, json> out;
  const auto parsed = json::parse(r.out);
  for (const auto& setting : parsed.at("settings"))
    out[setting.at("name").get<std::string>()] = setting;
  return out;
}

TEST_CASE("config list shows each value and where it came from", "[cli][config]") {
  IsolatedProject project;
  project.write(project.user_config(), "packaging: wheel\njobs: 2\nlink-mode: hardlink\n");
  project.write(project.project_config(), "# the team's\njobs: 3\nmirrors: [http://m.lan/a]\n");
  const auto cache = project.dir.path() / "flag-cache";
  const auto r = project.envkit({"config", "list", "--json", "--cache-dir", cache.string()},
                                {{"ENVKIT_LINK_MODE", "copy"}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto settings = listed(r);
  CHECK(settings.size() == 8);
  CHECK(settings["jobs"].at("value") == 3);
  CHECK(settings["jobs"].at("source") == project.project_config().string() + ":2");
  CHECK(settings["mirrors"].at("value") == json::array({"http://m.lan/a"}));
  CHECK(settings["packaging"].at("value") == "wheel");
  CHECK(settings["packaging"].at("source") == project.user_config().string() + ":1");
  CHECK(settings["link-mode"].at("value") == "copy");
  CHECK(settings["link-mode"].at("source") == "env ENVKIT_LINK_MODE");
  CHECK(settings["cache-dir"].at("value") == cache.string());
  CHECK(settings["cache-dir"].at("source") == "flag");
  CHECK(settings["index-url"].at("source") == "default");
  CHECK(settings["compile-bytecode"].at("value") == false);
  CHECK(settings["compile-bytecode"].at("source") == "default");
  CHECK(settings["index-ttl"].at("value") == 600);
  CHECK(settings["index-ttl"].at("source") == "default");

  // For people: one line per setting, on stdout, with its source.
  const auto human = project.envkit({"config", "list"});
  REQUIRE(human.exit_code == 0);
  CHECK_THAT(human.out, Contains("jobs"));
  CHECK_THAT(human.out, Contains(project.project_config().string() + ":2"));
  CHECK_THAT(human.out, Contains("cache-dir"));
  CHECK_THAT(human.out, Contains((project.dir.path() / "xdg-cache" / "envkit").string()));
  CHECK_THAT(human.err, Contains(project.user_config().string()));
}

TEST_CASE("without XDG_CONFIG_HOME the user file is ~/.config/envkit/config.yaml",
          "[cli][config]") {
  IsolatedProject project;
  project.write(project.home / ".config" / "envkit" / "config.yaml", "jobs: 5\n");
  const auto r = project.envkit({"config", "list", "--json"}, {{"XDG_CONFIG_HOME", std::nullopt}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(listed(r)["jobs"].at("value") == 5);
}

TEST_CASE("unknown keys and bad values are input errors naming file:line:column", "[cli][config]") {
  IsolatedProject project;
  project.write(project.project_config(), "jobs: 4\nmirors: [http://m]\n");
  const auto r = project.envkit({"install", "--frozen"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains(project.project_config().string() + ":2:1: unknown key `mirors`"));
  CHECK_THAT(r.err, Contains("did you mean `mirrors`?"));

  project.write(project.project_config(), "jobs: 4\n");
  project.write(project.user_config(), "packaging: wheels\n");
  const auto bad = project.envkit({"config", "list"});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Contains(project.user_config().string() + ":1:12: `packaging`: expected"));

  fs::remove(project.user_config());
  const auto variable = project.envkit({"cache", "info"}, {{"ENVKIT_JOBS", "0"}});
  CHECK(variable.exit_code == 2);
  CHECK_THAT(variable.err, Contains("ENVKIT_JOBS: expected a whole number from 1 to 64"));

  // The download tuning variables too: a value that is not a number is not ignored.
  project.write(project.root / "envkit.lock", lock_text(std::vector<LockedSpec>{}));
  const auto retries = project.envkit({"install", "--frozen"}, {{"ENVKIT_RETRIES", "lots"}});
  CHECK(retries.exit_code == 2);
  CHECK_THAT(retries.err, Contains("ENVKIT_RETRIES: expected a whole number, found `lots`"));
}

TEST_CASE("a one-byte `,` config.yaml, manifest or lock fails at once with its location",
          "[cli][config]") {
  // yaml-cpp 0.7 allocated without bound on it (jbeder/yaml-cpp#1040), and
  // every command reads config.yaml.
  IsolatedProject project;
  project.write(project.root / "envkit.yaml", "framework: torch 2.1.*\n");
  project.write(project.project_config(), ",");
  const std::string where = project.project_config().string() + ":1:1: invalid YAML: `,` cannot ";
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"config", "list"}, std::vector<std::string>{"lock"}}) {
    const auto r = project.envkit(command);
    CAPTURE(command.front());
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains(where + "start a value"));
  }

  fs::remove(project.project_config());
  project.write(project.root / "envkit.yaml", ",");
  const auto manifest = project.envkit({"lock"});
  CHECK(manifest.exit_code == 2);
  CHECK_THAT(manifest.err, Contains("envkit.yaml:1:1: invalid YAML: `,` cannot start a value"));

  project.write(project.root / "envkit.lock", ",");
  const auto lock = project.envkit({"install", "--frozen"});
  CHECK(lock.exit_code == 2);
  CHECK_THAT(lock.err, Contains("envkit.lock:1:1: invalid YAML: `,` cannot start a value"));
}

TEST_CASE("install takes its mirrors from the configuration, --mirror replaces them",
          "[cli][config][install]") {
  if (nginx_missing()) return;
  IsolatedProject project;
  const RedistMirror origin(project.dir.path() / "origin");
  const auto built = origin.add_archive(library_component("foo", "1.2.3"));
  // The lock's host serves nothing; the configured mirror has the file.
  const std::string original = "http://downloads.invalid/redist";
  copy_to_mirror(origin, built, project.dir.path() / "mirror", original);
  const StaticHttpServer mirror(project.dir.path() / "mirror");
  const auto empty = project.dir.path() / "empty";
  fs::create_directories(empty);
  const StaticHttpServer empty_mirror(empty);
  project.write(project.root / "envkit.lock",
                lock_text({{"cuda", "12.4.1", {lock_artifact(built, original)}}}));
  project.write(project.user_config(), "mirrors: [" + mirror.url("") + "]\n");

  // A flag's mirrors replace the configured ones: only the empty mirror and the origin are asked.
  const auto replaced = project.envkit({"install", "--frozen", "--mirror", empty_mirror.url("")});
  CHECK(replaced.exit_code == 1);
  CHECK_THAT(replaced.err, Contains(empty_mirror.url("/downloads.invalid/")));
  CHECK_THAT(replaced.err, !Contains(mirror.url("/downloads.invalid/")));

  // So does the variable; an empty one means no mirrors at all.
  const auto none = project.envkit({"install", "--frozen"}, {{"ENVKIT_MIRRORS", ""}});
  CHECK(none.exit_code == 1);
  CHECK_THAT(none.err, !Contains(mirror.url("/downloads.invalid/")));

  const auto r = project.envkit({"install", "--frozen", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(sys::read_file(project.prefix() / "lib" / "libfoo.so").value() == "foo library 1.2.3\n");
  CHECK_THAT(mirror.access_log(), Contains("200 /downloads.invalid/redist/"));
}

TEST_CASE("install takes packaging and link mode from the configuration",
          "[cli][config][install]") {
  if (nginx_missing()) return;
  IsolatedProject project;
  const RedistMirror www(project.dir.path() / "www");
  const auto runtime = library_component("cudart", "13.0.96");
  const auto archive = www.add_archive(runtime);
  const auto wheel = www.add_wheel(runtime, "nvidia_cuda_runtime");
  const StaticHttpServer server(www.root());
  project.write(project.root / "envkit.lock",
                lock_text({{"cuda",
                            "13.0.2",
                            {lock_artifact(archive, server.url("")),
                             lock_artifact(wheel, server.url(""))}}}));
  project.write(project.project_config(), "packaging: wheel\nlink-mode: copy\n");
  const auto r = project.envkit({"install", "--frozen", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto report = json::parse(r.out);
  CHECK(report.at("added") == json::array({"cuda 13.0.2 (wheel)"}));
  CHECK(report.at("link_mode") == "copy");

  // The flag wins over the file (in a fresh prefix: an installed packaging that still
  // matches the lock is kept).
  const auto elsewhere = project.dir.path() / "second-env";
  const auto flagged =
      project.envkit({"install", "--frozen", "--json", "--prefix", elsewhere.string(),
                      "--packaging", "archive", "--link-mode", "auto"});
  INFO(flagged.err);
  REQUIRE(flagged.exit_code == 0);
  CHECK(json::parse(flagged.out).at("added") == json::array({"cuda 13.0.2 (archive)"}));
}

TEST_CASE("the cache folder: --cache-dir over ENVKIT_CACHE_DIR over config.yaml", "[cli][config]") {
  IsolatedProject project;
  project.write(project.project_config(), "cache-dir: cache\n");
  const auto path_of = [](const sys::ProcessOutput& r) {
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return json::parse(r.out).at("path").get<std::string>();
  };
  const auto store = [](const fs::path& cache) { return (cache / "store" / "v1").string(); };
  // Relative to the file's folder.
  CHECK(path_of(project.envkit({"cache", "info", "--json"})) ==
        store(project.root / ".envkit" / "cache"));
  const auto from_env = project.dir.path() / "env-cache";
  CHECK(path_of(project.envkit({"cache", "info", "--json"},
                               {{"ENVKIT_CACHE_DIR", from_env.string()}})) == store(from_env));
  const auto from_flag = project.dir.path() / "flag-cache";
  CHECK(path_of(project.envkit({"cache", "info", "--json", "--cache-dir", from_flag.string()},
                               {{"ENVKIT_CACHE_DIR", from_env.string()}})) == store(from_flag));
}

}  // namespace
}  // namespace envkit::test
