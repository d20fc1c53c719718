// Exported images through a real registry (Debian's docker-registry) with
// skopeo, as a site pushes them: the digests survive the round trip, and a
// second environment that shares packages uploads only its own layers.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "envkit/sys/process.hpp"
#include "install_support.hpp"
#include "support/http_server.hpp"
#include "support/registry_server.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string exported_manifest(const InstallProject& project, const fs::path& layout) {
  const auto r = project.envkit({"export", "--oci", layout.string(), "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out).at("manifest").get<std::string>();
}

sys::ProcessOutput skopeo_copy(const std::string& from, const std::string& to) {
  auto copied = sys::run_process(
      {"skopeo", "copy", "--dest-tls-verify=false", "--src-tls-verify=false", from, to});
  REQUIRE(copied);
  INFO(copied->out + copied->err);
  REQUIRE(copied->exit_code == 0);
  return *copied;
}

TEST_CASE(
    "skopeo pushes an exported image to a registry and back with its digests, and a second "
    "environment uploads only its own layers",
    "[cli][export][registry]") {
  if (nginx_missing() || program_missing("skopeo") || program_missing("docker-registry")) return;
  InstallProject small;
  InstallProject bigger;
  const RedistMirror mirror(small.dir.path() / "www");
  const StaticHttpServer server(mirror.root());
  const auto cuda = mirror.add_archive(library_component("cudart", "12.4.127"));
  const auto cudnn = mirror.add_archive(library_component("cudnn", "9.1.0"));
  const auto nccl = mirror.add_archive(library_component("nccl", "2.21.5"));
  const std::vector<LockedSpec> shared = {
      {"cuda", "12.4.1", {lock_artifact(cuda, server.url(""))}},
      {"cudnn", "9.1.0.70", {lock_artifact(cudnn, server.url(""))}}};
  auto more = shared;
  more.push_back({"nccl", "2.21.5", {lock_artifact(nccl, server.url(""))}});
  small.lock(shared);
  bigger.lock(more);
  REQUIRE(small.install().exit_code == 0);
  REQUIRE(bigger.install().exit_code == 0);
  const auto small_image = small.dir.path() / "image";
  const auto bigger_image = bigger.dir.path() / "image";
  const auto small_manifest = exported_manifest(small, small_image);
  const auto bigger_manifest = exported_manifest(bigger, bigger_image);

  const RegistryServer registry;
  const auto repository = "docker://" + registry.host() + "/team/env";
  skopeo_copy("oci:" + small_image.string() + ":latest", repository + ":small");
  const int uploads_before = registry.requests("POST", "/blobs/uploads/");
  CHECK(uploads_before == 4);  // cuda, cudnn, envkit's layer, the config
  skopeo_copy("oci:" + bigger_image.string() + ":latest", repository + ":bigger");
  // cuda's and cudnn's layers were there: nccl's layer, envkit's and the config are new.
  CHECK(registry.requests("POST", "/blobs/uploads/") - uploads_before == 3);

  // Back from the registry: the manifest is the one envkit wrote, byte for byte.
  const auto back = small.dir.path() / "back";
  skopeo_copy(repository + ":bigger", "oci:" + back.string() + ":bigger");
  const auto index = json::parse(read_text(back / "index.json"));
  CHECK(index.at("manifests").at(0).at("digest") == bigger_manifest);
  CHECK(small.envkit({"export", "--verify", back.string() + ":bigger"}).exit_code == 0);
  CHECK(small_manifest != bigger_manifest);
}

}  // namespace
}  // namespace envkit::test
