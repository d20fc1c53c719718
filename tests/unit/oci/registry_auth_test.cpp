#include "envkit/oci/registry_auth.hpp"

#include <array>
#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "envkit/core/sha256.hpp"
#include "envkit/net/transport.hpp"
#include "support/fault_server.hpp"
#include "support/quick_transport.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"

namespace envkit::test {
namespace {

using Catch::Contains;
namespace fs = std::filesystem;

std::string read_stream(net::ByteStream& stream, std::string& error) {
  std::string out;
  std::array<std::byte, 4096> buffer{};
  while (true) {
    auto got = stream.read(buffer);
    if (!got) {
      error = got.error().message();
      for (const auto& cause : got.error().causes())
        error += "\n" + cause;
      return out;
    }
    if (*got == 0) return out;
    out.append(reinterpret_cast<const char*>(buffer.data()), *got);
  }
}

fs::path docker_config(const TempDir& dir, const std::string& host, const std::string& login) {
  return dir.write("docker/config.json", R"({"auths": {")" + host + R"(": {"auth": ")" +
                                             oci::base64_encode(login) + R"("}}})");
}

bool any_head_contains(const std::vector<std::string>& heads, const std::string& text) {
  for (const auto& head : heads) {
    if (head.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST_CASE("base64 and WWW-Authenticate challenges read as registries write them",
          "[oci][registry]") {
  CHECK(oci::base64_encode("user:pass") == "dXNlcjpwYXNz");
  CHECK(oci::base64_encode("ab") == "YWI=");
  CHECK(oci::base64_decode("dXNlcjpwYXNz") == "user:pass");
  CHECK(oci::base64_decode("YWI=") == "ab");
  CHECK_FALSE(oci::base64_decode("not base64!"));
  const auto challenge = oci::parse_challenge(
      R"(Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/x:pull")");
  REQUIRE(challenge);
  CHECK(challenge->scheme == "bearer");
  CHECK(challenge->params.at("realm") == "https://auth.docker.io/token");
  CHECK(challenge->params.at("service") == "registry.docker.io");
  CHECK(challenge->params.at("scope") == "repository:library/x:pull");
  CHECK(oci::parse_challenge(R"(Basic realm="envkit-test")")->scheme == "basic");
  CHECK(
      oci::registry_error(
          R"({"errors":[{"code":"UNAUTHORIZED","message":"authentication required","detail":null}]})") ==
      "UNAUTHORIZED: authentication required");
  CHECK(oci::registry_error("<html>404</html>").empty());
}

TEST_CASE("registry credentials come from the first file that has the host", "[oci][registry]") {
  const TempDir dir;
  const auto podman = dir.write("auth.json", R"({"auths": {"other.lan": {"auth": "YTpi"}}})");
  const auto docker = docker_config(dir, "https://registry.lan:5000/v1/", "me:s3cret:with:colons");
  auto found =
      oci::find_credentials("registry.lan:5000", {dir.path() / "missing.json", podman, docker});
  REQUIRE(found);
  REQUIRE(*found);
  CHECK((*found)->username == "me");
  CHECK((*found)->password == "s3cret:with:colons");
  CHECK((*found)->file == docker);
  auto none = oci::find_credentials("registry.lan", {podman, docker});
  REQUIRE(none);
  CHECK_FALSE(*none);

  const auto helper = dir.write("helper.json", R"({"credsStore": "desktop"})");
  auto helped = oci::find_credentials("registry.lan", {helper});
  REQUIRE_FALSE(helped);
  CHECK_THAT(helped.error().message(), Contains("docker-credential-desktop"));
  const auto broken = dir.write("broken.json", "{not json");
  REQUIRE_FALSE(oci::find_credentials("registry.lan", {broken}));
}

TEST_CASE("credential files: REGISTRY_AUTH_FILE or podman's, then DOCKER_CONFIG or ~/.docker",
          "[oci][registry]") {
  const TempDir dir;
  std::vector<fs::path> files;
  {
    const ScopedEnv auth_file("REGISTRY_AUTH_FILE", (dir.path() / "auth.json").string());
    const ScopedEnv docker("DOCKER_CONFIG", (dir.path() / "docker").string());
    files = oci::credential_files();
  }
  REQUIRE(files.size() == 2);
  CHECK(files[0] == dir.path() / "auth.json");
  CHECK(files[1] == dir.path() / "docker" / "config.json");
  const ScopedEnv runtime("XDG_RUNTIME_DIR", dir.path().string());
  const ScopedEnv home("HOME", (dir.path() / "home").string());
  const ScopedEnv no_file("REGISTRY_AUTH_FILE", std::nullopt);
  const ScopedEnv no_docker("DOCKER_CONFIG", std::nullopt);
  files = oci::credential_files();
  REQUIRE(files.size() == 2);
  CHECK(files[0] == dir.path() / "containers" / "auth.json");
  CHECK(files[1] == dir.path() / "home" / ".docker" / "config.json");
}

// A registry behind a token service, as Docker Hub, GitLab and Harbor run them:
// the blob answers 401 with a Bearer challenge, the realm gives a token for the
// Basic credentials, and the blob then redirects to storage on another host.
struct TokenRegistry {
  FaultServer registry, storage;
  std::string body = "the artifact's bytes";
  std::string sha256 = core::sha256_hex(body);
  std::string token = "t0ken-" + std::string(20, 'x');
  std::string login = "me:pa55word";
  std::string blob_path = "/v2/team/envkit/blobs/sha256:" + sha256;

  TokenRegistry() {
    const auto realm = registry.url("/token");
    registry.serve("/token", R"({"token": ")" + token + R"(", "expires_in": 300})",
                   {.authorization = "Basic " + oci::base64_encode(login),
                    .challenge = R"(Basic realm="token")",
                    .error_body = R"({"errors":[{"code":"UNAUTHORIZED","message":"bad login"}]})"});
    // Storage is reached by another name than the registry: libcurl must not carry the token.
    const auto storage_url =
        "http://localhost:" + std::to_string(storage.port()) + "/bucket/blob?X-Signature=abc";
    registry.serve(
        blob_path, "",
        {.authorization = "Bearer " + token,
         .challenge = "Bearer realm=\"" + realm +
                      R"(",service="test-registry",scope="repository:team/envkit:pull")",
         .error_body =
             R"({"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]})",
         .redirect_to = storage_url});
    storage.serve("/bucket/blob", body);
  }
  [[nodiscard]] net::RegistryRepo repo() const {
    return *net::parse_registry("oci://127.0.0.1:" + std::to_string(registry.port()) +
                                "/team/envkit");
  }
};

TEST_CASE("a blob behind a token service downloads with the token, which storage never sees",
          "[oci][registry]") {
  const TempDir dir;
  TokenRegistry site;
  const auto config =
      docker_config(dir, "127.0.0.1:" + std::to_string(site.registry.port()), site.login);
  auto options = quick_transport();
  options.authorizer =
      std::make_shared<oci::RegistryAuth>(std::vector{site.repo()}, "pull", std::vector{config});
  net::Transport transport(options);
  auto stream = transport.open({.urls = {site.repo().blob_url(site.sha256)},
                                .expected_size = site.body.size(),
                                .label = "blob"});
  std::string error;
  CHECK(read_stream(*stream, error) == site.body);
  CHECK(error.empty());

  const auto heads = site.registry.heads();
  CHECK(any_head_contains(
      heads, "GET /token?service=test-registry&scope=repository%3Ateam%2Fenvkit%3Apull"));
  CHECK(any_head_contains(heads, "Authorization: Basic " + oci::base64_encode(site.login)));
  CHECK(any_head_contains(heads, "Authorization: Bearer " + site.token));
  const auto storage = site.storage.heads();
  REQUIRE(storage.size() == 1);
  CHECK_THAT(storage[0], !Contains("Authorization"));
  CHECK_THAT(storage[0], !Contains(site.token));
}

TEST_CASE(
    "refused registry credentials are named with the registry's error and a hint, never shown",
    "[oci][registry]") {
  const TempDir dir;
  TokenRegistry site;
  const auto host = "127.0.0.1:" + std::to_string(site.registry.port());
  const auto config = docker_config(dir, host, "me:wrong-password");
  auto options = quick_transport();
  options.authorizer =
      std::make_shared<oci::RegistryAuth>(std::vector{site.repo()}, "pull", std::vector{config});
  net::Transport transport(options);
  auto stream = transport.open({.urls = {site.repo().blob_url(site.sha256)}, .label = "blob"});
  std::string error;
  CHECK(read_stream(*stream, error).empty());
  CHECK_THAT(error, Contains("HTTP 401"));
  CHECK_THAT(error, Contains("UNAUTHORIZED: authentication required"));
  CHECK_THAT(error, Contains("bad login"));  // the token service's own words
  CHECK_THAT(error, Contains("docker login " + host));
  CHECK_THAT(error, Contains(config.string()));
  CHECK_THAT(error, !Contains("wrong-password"));
  CHECK_THAT(error, !Contains(oci::base64_encode("me:wrong-password")));
  CHECK(site.storage.heads().empty());
}

TEST_CASE(
    "a registry that refuses (403) or keeps failing (503) is named with its URL, status and "
    "error, and the next URL serves the blob",
    "[oci][registry]") {
  const TempDir dir;
  const std::string body = "the artifact's bytes\n";
  const auto sha256 = core::sha256_hex(body);
  FaultServer registry;
  FaultServer origin;
  origin.serve("/artifact.whl", body);
  const auto repo =
      *net::parse_registry("oci://127.0.0.1:" + std::to_string(registry.port()) + "/team/envkit");
  struct Case {
    int status;
    std::string error;
    std::string said;
  };
  const std::array cases = {
      Case{403, R"({"errors":[{"code":"DENIED","message":"requested access is denied"}]})",
           "DENIED: requested access is denied"},
      Case{503, R"({"errors":[{"code":"UNAVAILABLE","message":"storage is down"}]})",
           "UNAVAILABLE: storage is down"}};
  for (const auto& failing : cases) {
    INFO(failing.status);
    registry.serve("/v2/team/envkit/blobs/sha256:" + sha256, body,
                   {.fail_first = 1000, .fail_status = failing.status, .fail_body = failing.error});
    auto options = quick_transport();
    options.authorizer = std::make_shared<oci::RegistryAuth>(
        std::vector{repo}, "pull", std::vector{dir.path() / "no-config.json"});
    net::Transport transport(options);
    std::vector<std::pair<std::string, std::string>> failed;
    auto stream =
        transport.open({.urls = {repo.blob_url(sha256), origin.url("/artifact.whl")},
                        .expected_size = body.size(),
                        .label = "blob",
                        .on_url_failed = [&](const std::string& url, const std::string& reason) {
                          failed.emplace_back(url, reason);
                        }});
    std::string error;
    CHECK(read_stream(*stream, error) == body);
    CHECK(error.empty());
    REQUIRE(failed.size() == 1);
    CHECK(failed[0].first == repo.blob_url(sha256));
    CHECK_THAT(failed[0].second, Contains("HTTP " + std::to_string(failing.status)));
    CHECK_THAT(failed[0].second, Contains(failing.said));
    if (failing.status == 403) CHECK_THAT(failed[0].second, Contains("docker login 127.0.0.1:"));
  }
}

}  // namespace
}  // namespace envkit::test
