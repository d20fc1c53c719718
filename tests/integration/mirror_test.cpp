// `envkit mirror --out DIR` end to end: the lock's artifacts land at
// DIR/HOST/PATH, nginx serves DIR, and `install --mirror` works from it with
// the original hosts gone.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "envkit/core/sha256.hpp"
#include "envkit/sys/fs.hpp"
#include "install_support.hpp"
#include "isolated_project.hpp"
#include "support/fault_server.hpp"
#include "support/http_server.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using Catch::Contains;
using nlohmann::json;

// An artifact that is only a file to keep (a runfile installer).
specs::Artifact runfile_artifact(const RedistMirror& origin, const std::string& base_url) {
  const std::string content = "#!/bin/sh\necho installer\n";
  const std::string relative = "local_installers/cuda_11.2.2_linux.run";
  fs::create_directories((origin.root() / relative).parent_path());
  std::ofstream(origin.root() / relative) << content;
  specs::Artifact artifact;
  artifact.component = "cuda";
  artifact.kind = specs::ArtifactKind::runfile;
  artifact.url = base_url + "/" + relative;
  artifact.sha256 = core::sha256_hex(content);
  artifact.size = content.size();
  artifact.format = "run";
  artifact.layout = specs::Layout::none;
  return artifact;
}

// Where the mirror keeps an artifact of `server`: DIR/127.0.0.1:PORT/PATH.
fs::path mirrored(const fs::path& out, const std::string& url) {
  const auto host_and_path = url.substr(url.find("://") + 3);
  return out / host_and_path;
}

TEST_CASE("install works from a mirror made by `envkit mirror` while the origin is down",
          "[cli][mirror]") {
  if (nginx_missing()) return;
  IsolatedProject project;
  const RedistMirror www(project.dir.path() / "origin");
  const auto foo = www.add_archive(library_component("foo", "1.2.3"));
  const auto rt = www.add_wheel(library_component("cudart", "13.0.96"), "nvidia_cuda_runtime");
  const auto bar = www.add_archive(library_component("bar", "2.0.0"));
  std::optional<StaticHttpServer> origin(std::in_place, www.root());
  const auto base = origin->url("");
  const auto runfile = runfile_artifact(www, base);
  project.write(project.root / "envkit.lock",
                lock_text({{specs::Platform::linux_x86_64,
                            {{"cuda", "13.0.2", {lock_artifact(foo, base)}},
                             {"cudnn", "9.1.0", {lock_artifact(rt, base)}}}},
                           {specs::Platform::linux_aarch64,
                            {{"cudnn", "9.1.0", {lock_artifact(bar, base)}},
                             {"legacy", "11.2.2", {runfile}}}}}));
  const auto out = project.dir.path() / "mirror";

  const auto r = project.envkit({"mirror", "--out", out.string(), "--json", "--jobs", "2"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto report = json::parse(r.out);
  CHECK(report.at("out") == out.string());
  CHECK(report.at("files") == 4);
  CHECK(report.at("skipped") == 0);
  CHECK(report.at("bytes") == foo.size + rt.size + bar.size + *runfile.size);
  CHECK(read_text(mirrored(out, lock_artifact(foo, base).url)) ==
        read_text(www.root() / foo.relative_path));
  CHECK(read_text(mirrored(out, lock_artifact(rt, base).url)) ==
        read_text(www.root() / rt.relative_path));
  CHECK(fs::exists(mirrored(out, runfile.url)));
  CHECK_FALSE(fs::exists(out / ".tmp"));

  // The origin goes away; the mirror folder, served by any static server, stands in.
  origin.reset();
  const StaticHttpServer served(out);
  const auto installed =
      project.envkit({"install", "--frozen", "--mirror", served.url(""), "--json"});
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);
  CHECK(read_text(project.prefix() / "lib" / "libfoo.so") == "foo library 1.2.3\n");
  CHECK(read_text(project.prefix() / "lib" / "libcudart.so.13.0.96") == "cudart library 13.0.96\n");
  CHECK_THAT(served.access_log(), Contains("200 /127.0.0.1:"));

  // A second run finds everything in place: nothing to download, no origin needed.
  const auto again = project.envkit({"mirror", "--out", out.string(), "--json"});
  INFO(again.err);
  REQUIRE(again.exit_code == 0);
  CHECK(json::parse(again.out).at("files") == 0);
  CHECK(json::parse(again.out).at("skipped") == 4);
}

TEST_CASE("a corrupt file in the mirror is found and downloaded again", "[cli][mirror]") {
  if (nginx_missing()) return;
  IsolatedProject project;
  const RedistMirror www(project.dir.path() / "origin");
  const auto foo = www.add_archive(library_component("foo", "1.2.3"));
  const auto bar = www.add_archive(library_component("bar", "2.0.0"));
  const StaticHttpServer origin(www.root());
  const auto base = origin.url("");
  project.write(project.root / "envkit.lock",
                lock_text({{"cuda", "12.4.1", {lock_artifact(foo, base)}},
                           {"cudnn", "9.1.0", {lock_artifact(bar, base)}}}));
  const auto out = project.dir.path() / "mirror";
  REQUIRE(project.envkit({"mirror", "--out", out.string()}).exit_code == 0);

  const auto file = mirrored(out, lock_artifact(foo, base).url);
  project.write(file, "not an archive");
  const auto r = project.envkit({"mirror", "--out", out.string(), "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto report = json::parse(r.out);
  CHECK(report.at("files") == 1);
  CHECK(report.at("skipped") == 1);
  REQUIRE(report.at("repaired").size() == 1);
  CHECK_THAT(report.at("repaired").at(0).get<std::string>(), Contains(foo.sha256));
  CHECK_THAT(r.err, Contains(core::sha256_hex("not an archive")));
  CHECK(read_text(file) == read_text(www.root() / foo.relative_path));
}

TEST_CASE("a checksum mismatch leaves nothing at the file's place and names both hashes",
          "[cli][mirror]") {
  IsolatedProject project;
  const RedistMirror www(project.dir.path() / "origin");
  const auto good = www.add_archive(library_component("foo", "1.2.3"));
  FaultServer server;
  server.serve("/" + good.relative_path, read_text(www.root() / good.relative_path),
               {.wrong_bytes = true});
  const auto artifact = lock_artifact(good, server.url(""));
  project.write(project.root / "envkit.lock", lock_text({{"cuda", "12.4.1", {artifact}}}));
  const auto out = project.dir.path() / "mirror";

  const auto r = project.envkit({"mirror", "--out", out.string()});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("checksum mismatch"));
  CHECK_THAT(r.err, Contains(good.sha256));
  CHECK_THAT(r.err, Contains(artifact.url));
  CHECK_FALSE(fs::exists(mirrored(out, artifact.url)));
  CHECK_FALSE(fs::exists(out / ".tmp"));
}

TEST_CASE("mirror --platform and --packaging narrow what is mirrored", "[cli][mirror]") {
  if (nginx_missing()) return;
  IsolatedProject project;
  const RedistMirror www(project.dir.path() / "origin");
  const auto runtime = library_component("cudart", "13.0.96");
  const auto archive = www.add_archive(runtime);
  const auto wheel = www.add_wheel(runtime, "nvidia_cuda_runtime");
  const auto bar = www.add_archive(library_component("bar", "2.0.0"));
  const StaticHttpServer origin(www.root());
  const auto base = origin.url("");
  project.write(
      project.root / "envkit.lock",
      lock_text(
          {{specs::Platform::linux_x86_64,
            {{"cuda", "13.0.2", {lock_artifact(archive, base), lock_artifact(wheel, base)}}}},
           {specs::Platform::linux_aarch64, {{"cudnn", "9.1.0", {lock_artifact(bar, base)}}}}}));
  const auto out = project.dir.path() / "mirror";

  const auto r = project.envkit({"mirror", "--out", out.string(), "--platform", "linux-x86_64",
                                 "--packaging", "wheel", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(json::parse(r.out).at("files") == 1);
  CHECK(fs::exists(mirrored(out, lock_artifact(wheel, base).url)));
  CHECK_FALSE(fs::exists(mirrored(out, lock_artifact(archive, base).url)));
  CHECK_FALSE(fs::exists(mirrored(out, lock_artifact(bar, base).url)));

  const auto aarch64 =
      project.envkit({"mirror", "--out", out.string(), "--platform", "linux-aarch64", "--json"});
  REQUIRE(aarch64.exit_code == 0);
  CHECK(json::parse(aarch64.out).at("files") == 1);
  CHECK(fs::exists(mirrored(out, lock_artifact(bar, base).url)));

  const auto absent =
      project.envkit({"mirror", "--out", out.string(), "--platform", "windows-x86_64"});
  CHECK(absent.exit_code == 2);
  CHECK_THAT(absent.err, Contains("no platform `windows-x86_64`"));
  CHECK_THAT(absent.err, Contains("linux-aarch64, linux-x86_64"));
  CHECK(project.envkit({"mirror", "--out", out.string(), "--packaging", "deb"}).exit_code == 2);
}

TEST_CASE("mirror needs a lock and an --out folder", "[cli][mirror]") {
  IsolatedProject project;
  const auto out = project.dir.path() / "mirror";
  const auto r = project.envkit({"mirror", "--out", out.string()});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("envkit.lock does not exist"));
  CHECK_THAT(r.err, Contains("envkit lock"));
  CHECK(project.envkit({"mirror"}).exit_code == 2);
}

}  // namespace
}  // namespace envkit::test
