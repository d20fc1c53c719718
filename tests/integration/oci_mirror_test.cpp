// `envkit mirror --oci-push` and `install --mirror oci://` against a real
// registry (Debian's docker-registry, distribution 2.8) on 127.0.0.1.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "envkit/net/fetch.hpp"
#include "envkit/oci/registry_credentials.hpp"
#include "install_support.hpp"
#include "isolated_project.hpp"
#include "support/http_server.hpp"
#include "support/registry_server.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using Catch::Contains;
using nlohmann::json;

// Whether docker-registry (and htpasswd, for a login) is missing; records the skip.
bool registry_missing(bool with_login = false,
                      std::source_location where = std::source_location::current()) {
  return program_missing("docker-registry", where) ||
         (with_login && program_missing("htpasswd", where));
}

// What the registry tests set: no credentials but the ones a test names.
std::map<std::string, std::optional<std::string>> no_credentials(const fs::path& docker_config) {
  return {{"DOCKER_CONFIG", docker_config.string()},
          {"REGISTRY_AUTH_FILE", std::nullopt},
          {"XDG_RUNTIME_DIR", std::nullopt},
          {"no_proxy", "127.0.0.1,localhost"}};
}

// A lock of three artifacts on two platforms, served by nginx.
struct PushedProject {
  IsolatedProject project;
  RedistMirror www{project.dir.path() / "origin"};
  BuiltArtifact foo = www.add_archive(library_component("foo", "1.2.3"));
  BuiltArtifact rt = www.add_wheel(library_component("cudart", "13.0.96"), "nvidia_cuda_runtime");
  BuiltArtifact bar = www.add_archive(library_component("bar", "2.0.0"));
  std::optional<StaticHttpServer> origin{std::in_place, www.root()};
  std::string base = origin->url("");

  PushedProject() {
    project.write(project.root / "envkit.lock",
                  lock_text({{specs::Platform::linux_x86_64,
                              {{"cuda", "13.0.2", {lock_artifact(foo, base)}},
                               {"cudnn", "9.1.0", {lock_artifact(rt, base)}}}},
                             {specs::Platform::linux_aarch64,
                              {{"cudnn", "9.1.0", {lock_artifact(bar, base)}}}}}));
  }
};

TEST_CASE(
    "a lock pushed to a registry installs from it with the origin gone, and a second "
    "push uploads nothing",
    "[cli][mirror][registry]") {
  if (nginx_missing() || registry_missing()) return;
  PushedProject p;
  const RegistryServer registry;
  const auto env = no_credentials(p.project.dir.path() / "docker");
  const auto target = registry.host() + "/team/envkit";

  const auto pushed = p.project.envkit({"mirror", "--oci-push", target, "--json"}, env);
  INFO(pushed.err);
  REQUIRE(pushed.exit_code == 0);
  const auto report = json::parse(pushed.out);
  CHECK(report.at("uploaded") == 3);
  CHECK(report.at("uploaded_bytes") == p.foo.size + p.rt.size + p.bar.size);
  CHECK(report.at("present") == 0);
  const auto tag = report.at("tag").get<std::string>();
  CHECK_THAT(tag, Catch::StartsWith("envkit-lock-"));

  // The manifest keeps every blob, each titled with its file name.
  const auto manifest = net::fetch(
      "http://" + target.substr(0, target.find('/')) + "/v2/team/envkit/manifests/" + tag,
      {.headers = {"Accept: application/vnd.oci.image.manifest.v1+json"}});
  REQUIRE(manifest);
  REQUIRE(manifest->status == 200);
  const auto layers = json::parse(manifest->body).at("layers");
  CHECK(layers.size() == 3);
  CHECK(json::parse(manifest->body).at("artifactType") == "application/vnd.envkit.lock.v1+json");
  CHECK(layers.dump().find("org.opencontainers.image.title") != std::string::npos);

  const int uploads = registry.requests("POST", "/blobs/uploads/");
  CHECK(uploads == 4);  // the three artifacts and the empty config
  const auto again = p.project.envkit({"mirror", "--oci-push", target, "--json"}, env);
  INFO(again.err);
  REQUIRE(again.exit_code == 0);
  CHECK(json::parse(again.out).at("uploaded") == 0);
  CHECK(json::parse(again.out).at("present") == 3);
  CHECK(registry.requests("POST", "/blobs/uploads/") == uploads);

  p.origin.reset();
  const auto installed =
      p.project.envkit({"install", "--frozen", "--mirror", "oci://" + target, "--json"}, env);
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);
  CHECK(read_text(p.project.prefix() / "lib" / "libfoo.so") == "foo library 1.2.3\n");
  CHECK(read_text(p.project.prefix() / "lib" / "libcudart.so.13.0.96") ==
        "cudart library 13.0.96\n");
  CHECK(registry.requests("GET", "/blobs/sha256:" + p.foo.sha256) >= 1);
  CHECK(registry.requests("GET", "/blobs/sha256:" + p.rt.sha256) >= 1);
  CHECK_THAT(installed.err, !Contains("warning"));
}

TEST_CASE("a registry with a login takes docker's config.json, and never shows the credentials",
          "[cli][mirror][registry]") {
  if (nginx_missing() || registry_missing(/*with_login=*/true)) return;
  PushedProject p;
  const RegistryServer registry(RegistryLogin{.user = "envkit", .password = "s3cret-pw"});
  const auto docker = p.project.dir.path() / "docker";
  const auto env = no_credentials(docker);
  const auto target = registry.host() + "/team/envkit";
  const auto write_login = [&](const std::string& login) {
    p.project.write(docker / "config.json", R"({"auths": {")" + registry.host() +
                                                R"(": {"auth": ")" + oci::base64_encode(login) +
                                                R"("}}})");
  };
  const auto shows_secret = [&](const sys::ProcessOutput& r, const std::string& login) {
    const auto all = r.out + r.err;
    return all.find(login.substr(login.find(':') + 1)) != std::string::npos ||
           all.find(oci::base64_encode(login)) != std::string::npos;
  };

  write_login("envkit:wrong");
  const auto refused = p.project.envkit({"mirror", "--oci-push", target}, env);
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.err, Contains("HTTP 401"));
  CHECK_THAT(refused.err, Contains("docker login " + registry.host()));
  CHECK_THAT(refused.err, Contains("no manifest was written"));
  CHECK_FALSE(shows_secret(refused, "envkit:wrong"));
  CHECK(registry.requests("PUT", "/manifests/") == 0);

  write_login("envkit:s3cret-pw");
  const auto pushed = p.project.envkit({"mirror", "--oci-push", target, "--json"}, env);
  INFO(pushed.err);
  REQUIRE(pushed.exit_code == 0);
  CHECK(json::parse(pushed.out).at("uploaded") == 3);
  CHECK_FALSE(shows_secret(pushed, "envkit:s3cret-pw"));

  p.origin.reset();
  const auto installed =
      p.project.envkit({"install", "--frozen", "--mirror", "oci://" + target}, env);
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);
  CHECK(read_text(p.project.prefix() / "lib" / "libfoo.so") == "foo library 1.2.3\n");
  CHECK_FALSE(shows_secret(installed, "envkit:s3cret-pw"));
}

TEST_CASE("a blob the registry lacks comes from the origin, and the install says so",
          "[cli][mirror][registry]") {
  if (nginx_missing() || registry_missing()) return;
  PushedProject p;
  const RegistryServer registry;
  const auto env = no_credentials(p.project.dir.path() / "docker");
  const auto target = registry.host() + "/team/envkit";
  REQUIRE(p.project.envkit({"mirror", "--oci-push", target}, env).exit_code == 0);

  // A lock with one more artifact than the registry holds.
  const auto baz = p.www.add_archive(library_component("baz", "3.0.0"));
  p.project.write(p.project.root / "envkit.lock",
                  lock_text({{"cuda", "13.0.2", {lock_artifact(p.foo, p.base)}},
                             {"cudnn", "9.1.0", {lock_artifact(baz, p.base)}}}));
  const auto pushed_log = p.origin->access_log().size();  // the push read the origin
  const auto installed =
      p.project.envkit({"install", "--frozen", "--mirror", "oci://" + target}, env);
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);
  CHECK(read_text(p.project.prefix() / "lib" / "libbaz.so") == "baz library 3.0.0\n");
  CHECK_THAT(installed.err, Contains("/v2/team/envkit/blobs/sha256:" + baz.sha256));
  CHECK_THAT(installed.err, Contains("HTTP 404"));
  CHECK_THAT(installed.err, Contains("BLOB_UNKNOWN"));
  const auto install_log = p.origin->access_log().substr(pushed_log);
  CHECK(install_log.find(baz.relative_path) != std::string::npos);
  CHECK(install_log.find(p.foo.relative_path) == std::string::npos);
}

TEST_CASE("mirror takes one of --out and --oci-push, and a registry name it can use",
          "[cli][mirror][registry]") {
  IsolatedProject project;
  project.write(project.root / "envkit.lock", lock_text(std::vector<LockedSpec>{}));
  const auto both = project.envkit({"mirror", "--out", "x", "--oci-push", "r.lan/team"});
  CHECK(both.exit_code == 2);
  CHECK_THAT(both.err, Contains("one of --out DIR and --oci-push"));
  const auto bad = project.envkit({"mirror", "--oci-push", "r.lan/Team"});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Contains("not a registry repository"));
  const auto bad_mirror = project.envkit({"install", "--frozen", "--mirror", "oci://r.lan"});
  CHECK(bad_mirror.exit_code == 2);
  CHECK_THAT(bad_mirror.err, Contains("names no repository"));
}

}  // namespace
}  // namespace envkit::test
