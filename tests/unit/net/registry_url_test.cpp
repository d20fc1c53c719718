#include "envkit/net/registry_url.hpp"

#include <catch2/catch.hpp>

#include "envkit/net/transport.hpp"

namespace envkit::net {
namespace {

TEST_CASE("oci:// names a registry repository: https, plain http only on this machine",
          "[net][registry]") {
  auto remote = parse_registry("oci://registry.lan:5000/team/envkit");
  REQUIRE(remote);
  CHECK(remote->base == "https://registry.lan:5000");
  CHECK(remote->host == "registry.lan:5000");
  CHECK(remote->repository == "team/envkit");
  CHECK(remote->blob_url(std::string(64, 'a')) ==
        "https://registry.lan:5000/v2/team/envkit/blobs/sha256:" + std::string(64, 'a'));
  CHECK(parse_registry("oci://127.0.0.1:5000/r")->base == "http://127.0.0.1:5000");
  CHECK(parse_registry("oci://localhost/r")->base == "http://localhost");
  CHECK(parse_registry("oci+https://127.0.0.1:5000/r")->base == "https://127.0.0.1:5000");
  CHECK(parse_registry("oci+http://registry.lan/r")->base == "http://registry.lan");
}

TEST_CASE("a registry repository is refused when the distribution spec would refuse it",
          "[net][registry]") {
  CHECK_FALSE(parse_registry("oci://registry.lan"));
  CHECK_FALSE(parse_registry("oci://registry.lan/"));
  CHECK_FALSE(parse_registry("oci://registry.lan/Team/envkit"));
  CHECK_FALSE(parse_registry("oci://registry.lan/team/-envkit"));
  CHECK_FALSE(parse_registry("registry.lan/team"));  // a mirror says oci://
  CHECK(parse_registry("registry.lan/team", /*bare_allowed=*/true));
  CHECK_FALSE(parse_registry("https://registry.lan/team", /*bare_allowed=*/true));
  CHECK(parse_registry("oci://r.lan/a__b.c-d/e_f"));
  const auto with_login = parse_registry("oci://me:secret@registry.lan/team");
  REQUIRE_FALSE(with_login);
  CHECK(with_login.error().message().find("secret") == std::string::npos);
  CHECK(with_login.error().message().find("docker/config.json") != std::string::npos);
}

TEST_CASE("a registry mirror keeps an artifact as the blob of its sha256", "[net][registry]") {
  const std::string sha(64, 'b');
  const std::string url = "https://developer.download.nvidia.com/x/a.tar.xz";
  CHECK(artifact_mirror_url("oci://127.0.0.1:5000/team/envkit", url, sha) ==
        "http://127.0.0.1:5000/v2/team/envkit/blobs/sha256:" + sha);
  CHECK(artifact_mirror_url("http://m.lan/files", url, sha) ==
        mirror_url("http://m.lan/files", url));
  CHECK(is_registry_mirror("OCI://r/x"));
  CHECK_FALSE(is_registry_mirror("http://r/x"));
}

}  // namespace
}  // namespace envkit::net
