// `envkit export --oci` end to end: two installs of one lock from two caches
// give one image, which umoci unpacks into the prefix's bytes and skopeo copies
// with its digests.
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "envkit/core/sha256.hpp"
#include "envkit/sys/fs.hpp"
#include "envkit/sys/process.hpp"
#include "install_support.hpp"
#include "support/http_server.hpp"
#include "support/temp_dir.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Two packages whose layers the image orders: CUDA, then cuDNN.
std::vector<LockedSpec> two_package_lock(const RedistMirror& mirror, const std::string& base_url) {
  const auto cuda = mirror.add_archive(library_component("cudart", "12.4.127"));
  const auto cudnn = mirror.add_archive(library_component("cudnn", "9.1.0"));
  return {{"cuda", "12.4.1", {lock_artifact(cuda, base_url)}},
          {"cudnn", "9.1.0.70", {lock_artifact(cudnn, base_url)}}};
}

json export_json(const InstallProject& project, const fs::path& out) {
  const auto r = project.envkit({"export", "--oci", out.string(), "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

json index_of(const fs::path& layout) {
  return json::parse(read_text(layout / "index.json"));
}

// Every file and symlink under `root` but .envkit/ (relative path -> content or "-> target").
std::map<std::string, std::string> tree_of(const fs::path& root) {
  std::map<std::string, std::string> out;
  for (fs::recursive_directory_iterator it(root), end; it != end; ++it) {
    const auto relative = it->path().lexically_relative(root).generic_string();
    if (relative.starts_with(".envkit")) continue;
    if (it->is_symlink()) {
      out[relative] = "-> " + fs::read_symlink(it->path()).string();
    } else if (it->is_regular_file()) {
      out[relative] = read_text(it->path());
    }
  }
  return out;
}

TEST_CASE("export --oci: one lock installed from two caches gives one image, as umoci unpacks it",
          "[cli][export]") {
  if (nginx_missing()) return;
  InstallProject first;
  InstallProject second;
  const RedistMirror mirror(first.dir.path() / "www");
  const StaticHttpServer server(mirror.root());
  const auto packages = two_package_lock(mirror, server.url(""));
  first.lock(packages);
  second.lock(packages);
  REQUIRE(first.install().exit_code == 0);
  REQUIRE(second.install().exit_code == 0);

  const auto one = first.dir.path() / "image";
  const auto two = second.dir.path() / "image";
  const auto exported = export_json(first, one);
  CHECK(exported.at("layers") == 3);  // cuda, cudnn, envkit's own
  CHECK(exported.at("built") == 3);
  CHECK(export_json(second, two).at("manifest") == exported.at("manifest"));
  CHECK(index_of(one) == index_of(two));

  // The layers are ordered and named; the config carries what the NVIDIA runtime reads.
  const auto manifest_hex = exported.at("manifest").get<std::string>().substr(7);
  const auto manifest = json::parse(read_text(one / "blobs" / "sha256" / manifest_hex));
  CHECK(manifest.at("layers").at(0).at("annotations").at("dev.envkit.package") == "cuda 12.4.1");
  CHECK(manifest.at("layers").at(1).at("annotations").at("dev.envkit.package") == "cudnn 9.1.0.70");
  CHECK(manifest.at("annotations").at("dev.envkit.lock.sha256") ==
        core::sha256_hex(read_text(first.root / "envkit.lock")));
  const auto config = json::parse(read_text(
      one / "blobs" / "sha256" / manifest.at("config").at("digest").get<std::string>().substr(7)));
  const auto env = config.at("config").at("Env");
  CHECK(std::find(env.begin(), env.end(), "NVIDIA_REQUIRE_CUDA=cuda>=12.4") != env.end());
  CHECK(std::find(env.begin(), env.end(), "CUDA_HOME=/opt/envkit") != env.end());
  CHECK(std::find(env.begin(), env.end(), "NVIDIA_VISIBLE_DEVICES=all") != env.end());

  // A second export of the same lock compresses nothing; --archive is the layout as one tar.
  const auto archive = first.dir.path() / "image.tar";
  const auto r = first.envkit({"export", "--oci", (first.dir.path() / "again").string(),
                               "--archive", archive.string(), "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto again = json::parse(r.out);
  CHECK(again.at("built") == 0);
  CHECK(again.at("cached") == 3);
  CHECK(again.at("manifest") == exported.at("manifest"));
  REQUIRE(fs::exists(archive));

  // zstd layers are other blobs of the same tars.
  const auto zstd = first.dir.path() / "zstd";
  const auto compressed = first.envkit({"export", "--oci", zstd.string(), "--compress", "zstd"});
  REQUIRE(compressed.exit_code == 0);
  CHECK(first.envkit({"export", "--verify", zstd.string()}).exit_code == 0);

  const auto verified = first.envkit({"export", "--verify", one.string() + ":latest"});
  INFO(verified.err);
  CHECK(verified.exit_code == 0);

  if (program_missing("umoci")) return;  // the case is skipped: the rest needs umoci
  const auto bundle = first.dir.path() / "bundle";
  const auto unpacked = sys::run_process(
      {"umoci", "unpack", "--rootless", "--image", one.string() + ":latest", bundle.string()});
  REQUIRE(unpacked);
  INFO(unpacked->err);
  REQUIRE(unpacked->exit_code == 0);
  const auto rootfs = bundle / "rootfs" / "opt" / "envkit";
  auto expected = tree_of(first.prefix() / "");
  expected["envkit.lock"] = read_text(first.root / "envkit.lock");
  auto got = tree_of(rootfs);
  CHECK(got.erase("activate.sh") == 1);
  CHECK(got == expected);
  CHECK(fs::exists(rootfs / ".envkit" / "receipts" / "cudnn.json"));
  // envkit reads the unpacked environment where it is, as it reads a prefix...
  const auto doctor = first.envkit({"doctor", "--json", "--prefix", rootfs.string()});
  INFO(doctor.out + doctor.err);
  const auto prefix_findings = doctor_messages(doctor, "prefix");
  REQUIRE(prefix_findings.size() == 1);
  CHECK_THAT(prefix_findings.front(), Catch::Contains("match"));
  CHECK(doctor_messages(doctor, "cache").empty());
  const auto listed = first.envkit({"list", "--prefix", rootfs.string()});
  INFO(listed.out + listed.err);
  CHECK(listed.exit_code == 0);
  CHECK_THAT(listed.out + listed.err, Catch::Contains("cudnn"));
  const auto ran =
      first.envkit({"run", "--prefix", rootfs.string(), "--", "sh", "-c", "echo $CUDA_HOME"});
  INFO(ran.err);
  CHECK(ran.exit_code == 0);
  CHECK_THAT(ran.out, Catch::Contains(rootfs.string()));
  // ...and never changes it.
  const auto refused = first.install({"--prefix", rootfs.string(), "--reinstall"});
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Catch::Contains("unpacked from an image"));

  if (program_missing("skopeo")) return;  // the case is skipped: the rest needs skopeo
  const auto copy = first.dir.path() / "copy";
  const auto copied = sys::run_process(
      {"skopeo", "copy", "oci:" + one.string() + ":latest", "oci:" + copy.string() + ":latest"});
  REQUIRE(copied);
  INFO(copied->err);
  REQUIRE(copied->exit_code == 0);
  CHECK(index_of(copy).at("manifests").at(0).at("digest") == exported.at("manifest"));
  const auto from_archive = first.dir.path() / "from-archive";
  const auto read =
      sys::run_process({"skopeo", "copy", "oci-archive:" + archive.string() + ":latest",
                        "oci:" + from_archive.string() + ":latest"});
  REQUIRE(read);
  INFO(read->err);
  REQUIRE(read->exit_code == 0);
  CHECK(index_of(from_archive).at("manifests").at(0).at("digest") == exported.at("manifest"));
}

TEST_CASE("export --oci --base puts a base image's layers first, by digest, under the environment",
          "[cli][export]") {
  if (nginx_missing()) return;
  InstallProject base_project;
  InstallProject project;
  const RedistMirror mirror(project.dir.path() / "www");
  const StaticHttpServer server(mirror.root());
  const auto packages = two_package_lock(mirror, server.url(""));
  // The base: an image of its own (cuda only), as `skopeo copy docker://debian:12 oci:base:12`
  // would leave one.
  base_project.lock({packages.front()});
  REQUIRE(base_project.install().exit_code == 0);
  const auto base = base_project.dir.path() / "base";
  REQUIRE(base_project.envkit({"export", "--oci", base.string(), "--ref", "12"}).exit_code == 0);
  const auto base_manifest = json::parse(
      read_text(base / "blobs" / "sha256" /
                index_of(base).at("manifests").at(0).at("digest").get<std::string>().substr(7)));

  project.lock(packages);
  REQUIRE(project.install().exit_code == 0);
  const auto out = project.dir.path() / "image";
  const auto r =
      project.envkit({"export", "--oci", out.string(), "--base", base.string() + ":12", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto manifest = json::parse(read_text(
      out / "blobs" / "sha256" / json::parse(r.out).at("manifest").get<std::string>().substr(7)));
  const auto& base_layers = base_manifest.at("layers");
  REQUIRE(manifest.at("layers").size() == base_layers.size() + 3);
  for (std::size_t i = 0; i < base_layers.size(); ++i) {
    CHECK(manifest.at("layers").at(i).at("digest") == base_layers.at(i).at("digest"));
    CHECK(fs::exists(out / "blobs" / "sha256" /
                     base_layers.at(i).at("digest").get<std::string>().substr(7)));
  }
  CHECK(project.envkit({"export", "--verify", out.string()}).exit_code == 0);
  const auto missing = project.envkit(
      {"export", "--oci", out.string(), "--base", (project.dir.path() / "none").string() + ":12"});
  CHECK(missing.exit_code != 0);
}

TEST_CASE("export --oci refuses a prefix that is not what envkit.lock says", "[cli][export]") {
  if (nginx_missing()) return;
  InstallProject project;
  const RedistMirror mirror(project.dir.path() / "www");
  const StaticHttpServer server(mirror.root());
  auto packages = two_package_lock(mirror, server.url(""));
  project.lock({packages.front()});
  REQUIRE(project.install().exit_code == 0);
  project.lock(packages);  // cudnn locked, not installed

  const auto out = project.dir.path() / "image";
  const auto r = project.envkit({"export", "--oci", out.string()});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("does not match envkit.lock") &&
                        Catch::Contains("cudnn 9.1.0.70") &&
                        Catch::Contains("run `envkit install`"));
  CHECK_FALSE(fs::exists(out));

  const auto other =
      project.envkit({"export", "--oci", out.string(), "--platform", "linux-aarch64"});
  CHECK(other.exit_code == 2);
  CHECK_THAT(other.err, Catch::Contains("cannot export linux-aarch64"));
}

}  // namespace
}  // namespace envkit::test
