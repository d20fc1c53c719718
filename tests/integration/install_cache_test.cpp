// The cache against an unlucky or careless user: a file written through a
// prefix's hard link, a disk that fills while a record is written, and
// `cache clean` while an install links from the cache.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "envkit/core/sha256.hpp"
#include "envkit/sys/file_lock.hpp"
#include "envkit/sys/fs.hpp"
#include "install_support.hpp"
#include "support/fault_server.hpp"
#include "support/http_server.hpp"
#include "support/temp_dir.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// doctor's findings of `id`, their messages.
TEST_CASE(
    "a file written through a prefix's hard link is found, kept from new prefixes, and "
    "repaired",
    "[cli][install][cache]") {
  if (nginx_missing()) return;
  InstallProject project;
  const RedistMirror mirror(project.dir.path() / "www");
  const auto foo = mirror.add_archive(library_component("foo", "1.2.3"));
  const StaticHttpServer server(mirror.root());
  project.lock({{"cuda", "12.4.1", {lock_artifact(foo, server.url(""))}}});
  const auto first = project.install({"--link-mode", "hardlink"});
  INFO(first.err);
  REQUIRE(first.exit_code == 0);

  // 0444 stops no owner who chmods first, and no root: the cache's copy is the same inode.
  const auto library = project.prefix() / "lib" / "libfoo.so.1.2.3";
  const std::string original = "foo library 1.2.3\n";
  REQUIRE(read_text(library) == original);
  ::chmod(library.c_str(), 0644);
  std::ofstream(library, std::ios::trunc) << "FOO LIBRARY 1.2.3\n";  // the same length

  // doctor names the package and the file whose cache copy changed.
  auto doctor = project.envkit({"doctor", "--json"});
  INFO(doctor.out + doctor.err);
  auto cache_findings = doctor_messages(doctor, "cache");
  REQUIRE(cache_findings.size() == 1);
  CHECK_THAT(cache_findings.front(), Catch::Contains("cuda 12.4.1"));
  CHECK_THAT(cache_findings.front(), Catch::Contains("lib/libfoo.so.1.2.3 (modified)"));
  // cache verify hashes it: broken, exit 1.
  auto verify = project.envkit({"cache", "verify", "--json"});
  CHECK(verify.exit_code == 1);
  auto report = json::parse(verify.out);
  CHECK(report.at("entries") == 1);
  REQUIRE(report.at("broken").size() == 1);
  CHECK(report.at("broken")[0].at("package") == "cuda");
  CHECK(report.at("broken")[0].at("problems") == json{"lib/libfoo.so.1.2.3 (modified)"});

  // A new prefix gets the original bytes: the entry is unpacked again.
  const auto other = project.dir.path() / "other";
  const auto second = project.install({"--prefix", other.string(), "--link-mode", "hardlink"});
  INFO(second.err);
  REQUIRE(second.exit_code == 0);
  CHECK_THAT(second.err, Catch::Contains("the cache's copy changed"));
  CHECK(read_text(other / "lib" / "libfoo.so.1.2.3") == original);
  CHECK(project.envkit({"cache", "verify"}).exit_code == 0);

  // The first prefix still holds the changed file; --reinstall puts the original back.
  doctor = project.envkit({"doctor", "--json"});
  CHECK(doctor_messages(doctor, "cache").empty());
  auto prefix_findings = doctor_messages(doctor, "prefix");
  REQUIRE(prefix_findings.size() == 1);
  CHECK_THAT(prefix_findings.front(), Catch::Contains("lib/libfoo.so.1.2.3 (modified)"));
  const auto repaired = project.install({"--reinstall", "--link-mode", "hardlink"});
  INFO(repaired.err);
  REQUIRE(repaired.exit_code == 0);
  CHECK(read_text(library) == original);
  doctor = project.envkit({"doctor", "--json"});
  CHECK(doctor_messages(doctor, "cache").empty());
  prefix_findings = doctor_messages(doctor, "prefix");
  REQUIRE(prefix_findings.size() == 1);
  CHECK_THAT(prefix_findings.front(), Catch::Contains("match"));
}

TEST_CASE(
    "a disk that fills while a record is written leaves no entry, and leftovers are counted "
    "and cleaned",
    "[cli][install][cache]") {
  if (nginx_missing()) return;
  InstallProject project;
  const RedistMirror mirror(project.dir.path() / "www");
  const auto foo = mirror.add_archive(library_component("foo", "1.2.3"));
  const StaticHttpServer server(mirror.root());
  project.lock({{"cuda", "12.4.1", {lock_artifact(foo, server.url(""))}}});
  // The record's write goes to /dev/full (a test-only seam): ENOSPC from the kernel.
  const auto full = project.install({}, {{"ENVKIT_TEST_FAIL_WRITE", "/store/v1/entries/."}});
  CHECK(full.exit_code == 1);
  CHECK_THAT(full.err, Catch::Contains("No space left on device"));
  CHECK_THAT(full.err, Catch::Contains(project.entries().string()));
  CHECK_FALSE(fs::exists(project.prefix()));
  CHECK(project.entry_folders() == 0);

  // What a kill -9 between unpacking and the record leaves: counted, then cleaned by an install.
  fs::create_directories(project.entries() / "0123abcd-deadbeef" / "lib");
  std::ofstream(project.entries() / "0123abcd-deadbeef" / "lib" / "libbig.so")
      << std::string(1 << 16, 'x');
  auto info = json::parse(project.envkit({"cache", "info", "--json"}).out);
  CHECK(info.at("entries") == 0);
  CHECK(info.at("incomplete") == 1);
  CHECK_THAT(project.envkit({"cache", "info"}).out, Catch::Contains("incomplete: 1"));
  const auto r = project.install();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(read_text(project.prefix() / "lib" / "libfoo.so") == "foo library 1.2.3\n");
  info = json::parse(project.envkit({"cache", "info", "--json"}).out);
  CHECK(info.at("entries") == 1);
  CHECK(info.at("incomplete") == 0);
  CHECK_FALSE(fs::exists(project.entries() / "0123abcd-deadbeef"));

  // And `cache prune` removes one too, saying so.
  fs::create_directories(project.cache / "store" / "v1" / "tmp" / "0123abcd-deadbeef.build");
  const auto pruned = project.envkit({"cache", "prune", "--json"});
  REQUIRE(pruned.exit_code == 0);
  CHECK(json::parse(pruned.out).at("incomplete") == 1);
  CHECK(json::parse(pruned.out).at("removed") == 0);
}

TEST_CASE("a disk that fills while the cache unpacks is an error naming the cache's folder",
          "[cli][install][cache]") {
  if (nginx_missing()) return;
  InstallProject project;
  const SmallDisk disk(project.dir.path() / "small");
  if (small_disk_missing(disk)) return;
  const RedistMirror mirror(project.dir.path() / "www");
  auto big = library_component("big", "1.0.0");
  big.files.push_back({.path = "lib/libbig-data.so", .content = incompressible(3 << 20, 7)});
  const auto large = mirror.add_archive(big);
  const StaticHttpServer server(mirror.root());
  project.lock({{"cuda", "12.4.1", {lock_artifact(large, server.url(""))}}});
  const auto cache = project.dir.path() / "small" / "cache";
  const auto r = run_envkit({.args = {"-C", project.root.string(), "--cache-dir", cache.string(),
                                      "install", "--frozen"}});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("No space left on device"));
  CHECK_THAT(r.err, Catch::Contains((cache / "store" / "v1" / "tmp").string()));
  CHECK_THAT(r.err, Catch::Contains("free some disk space"));
  // Nothing of it is left: no entry, no staging.
  const auto info =
      run_envkit({.args = {"--cache-dir", cache.string(), "cache", "info", "--json"}});
  REQUIRE(info.exit_code == 0);
  CHECK(json::parse(info.out).at("entries") == 0);
  CHECK(json::parse(info.out).at("incomplete") == 0);
}

// The id of the one entry in `cache` (its record, store/v1/entries/ID.json).
std::string only_entry_id(const fs::path& cache) {
  std::vector<std::string> ids;
  for (const auto& record : fs::directory_iterator(cache / "store" / "v1" / "entries")) {
    const auto name = record.path().filename().string();
    if (!name.starts_with('.') && name.ends_with(".json")) ids.push_back(record.path().stem());
  }
  REQUIRE(ids.size() == 1);
  return ids.front();
}

// Whether a running envkit holds entry `id` in use: its shared lock on the entry's
// use lock refuses the exclusive one `cache clean` tries (Cache::claim_for_removal).
bool entry_in_use(const fs::path& cache, const std::string& id) {
  const auto use_lock = cache / "store" / "v1" / "locks" / (id + ".use");
  return !sys::FileLock::try_acquire(use_lock, sys::FileLock::Mode::exclusive).ok();
}

TEST_CASE("cache clean during an install leaves the entries it links alone",
          "[cli][install][cache]") {
  if (nginx_missing()) return;
  InstallProject project;
  const RedistMirror mirror(project.dir.path() / "www");
  const auto foo = mirror.add_archive(library_component("foo", "1.2.3"));
  auto slow_component = library_component("slow", "1.0.0");
  const auto noise = incompressible(1 << 20, 2024);  // the download takes a while
  slow_component.files.push_back({.path = "lib/libslow-data.so", .content = noise});
  const auto slow = mirror.add_archive(slow_component);
  const StaticHttpServer server(mirror.root());
  FaultServer slow_server;
  const auto slow_path = "/" + slow.relative_path;
  slow_server.serve(slow_path, read_text(mirror.root() / slow.relative_path),
                    {.chunk_delay = std::chrono::milliseconds(40)});

  // foo is in the cache (another prefix installed it); the install below links it from there.
  project.lock({{"cuda", "12.4.1", {lock_artifact(foo, server.url(""))}}});
  REQUIRE(project.install({"--prefix", (project.dir.path() / "first").string()}).exit_code == 0);
  project.lock({{"cuda", "12.4.1", {lock_artifact(foo, server.url(""))}},
                {"cudnn", "9.1.0", {lock_artifact(slow, slow_server.url(""))}}});
  auto installing = std::async(std::launch::async, [&] { return project.install(); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (slow_server.requests(slow_path) == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(slow_server.requests(slow_path) > 0);
  // The install's other worker takes foo's entry (found in the cache): wait until it holds it.
  const auto foo_id = only_entry_id(project.cache);
  while (!entry_in_use(project.cache, foo_id) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  INFO("the install did not take foo's cache entry " << foo_id << " within 20 s");
  REQUIRE(entry_in_use(project.cache, foo_id));

  const auto cleaned = project.envkit({"cache", "clean", "--json"});
  INFO(cleaned.err);
  REQUIRE(cleaned.exit_code == 0);
  const auto report = json::parse(cleaned.out);
  // foo is linked from: left alone, and said so (the slow one, being made, is no entry yet).
  CHECK(report.at("removed") == 0);
  CHECK(report.at("in_use") == 1);
  CHECK_THAT(cleaned.err, Catch::Contains("1 in use by a running envkit left alone"));
  CHECK(report.at("incomplete") == 0);

  const auto installed = installing.get();
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);
  CHECK(read_text(project.prefix() / "lib" / "libfoo.so") == "foo library 1.2.3\n");
  CHECK(read_text(project.prefix() / "lib" / "libslow-data.so") == noise);
  // Once the install is done, clean takes them.
  CHECK(json::parse(project.envkit({"cache", "clean", "--json"}).out).at("removed") == 2);
}

}  // namespace
}  // namespace envkit::test

namespace envkit::test {
namespace {

// Every file under `root` with its content (a link as "-> TARGET"), by relative path.
std::map<std::string, std::string> files_under(const fs::path& root) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    const auto relative = fs::relative(entry.path(), root).generic_string();
    if (entry.is_symlink()) {
      files[relative] = "-> " + fs::read_symlink(entry.path()).string();
    } else if (entry.is_regular_file()) {
      files[relative] = read_text(entry.path());
    }
  }
  return files;
}

TEST_CASE("a wheel downloading slowly unpacks as it arrives into the prefix a fast one makes",
          "[cli][install][cache]") {
  if (nginx_missing()) return;
  InstallProject slow_project;
  InstallProject fast_project;
  const RedistMirror mirror(slow_project.dir.path() / "www");
  auto runtime = library_component("cudart", "13.0.96");
  runtime.files.push_back({.path = "lib/libcudart-data.so", .content = incompressible(1 << 20, 7)});
  for (int i = 0; i < 20; ++i) {
    runtime.files.push_back(
        {.path = "include/h" + std::to_string(i) + ".h", .content = std::to_string(i) + "\n"});
  }
  const auto wheel = mirror.add_wheel(runtime, "nvidia_cuda_runtime");
  const auto bytes = read_text(mirror.root() / wheel.relative_path);
  const StaticHttpServer fast_server(mirror.root());
  FaultServer slow_server;
  const auto path = "/" + wheel.relative_path;
  // About a second: 5 ms per 16 KiB.
  slow_server.serve(path, bytes, {.chunk_delay = std::chrono::milliseconds(5)});
  slow_project.lock({{"cuda", "13.0.2", {lock_artifact(wheel, slow_server.url(""))}}});
  fast_project.lock({{"cuda", "13.0.2", {lock_artifact(wheel, fast_server.url(""))}}});
  const auto slow = slow_project.install();
  INFO(slow.err);
  REQUIRE(slow.exit_code == 0);
  REQUIRE(fast_project.install().exit_code == 0);
  const auto slow_files = files_under(slow_project.prefix());
  const auto fast_files = files_under(fast_project.prefix());
  CHECK(slow_files.size() > 20);
  for (const auto& [file, content] : fast_files) {
    INFO(file);
    REQUIRE(slow_files.contains(file));
    // The receipts name the URL, which is another server's.
    if (content.find(fast_server.url("")) != std::string::npos) continue;
    CHECK(slow_files.at(file) == content);
  }
  CHECK(fs::status(slow_project.prefix() / "lib/libcudart-data.so").permissions() ==
        fs::status(fast_project.prefix() / "lib/libcudart-data.so").permissions());
}

TEST_CASE("a wheel unpacked as it arrives but not the locked bytes leaves nothing behind",
          "[cli][install][cache]") {
  if (nginx_missing()) return;
  InstallProject project;
  const RedistMirror mirror(project.dir.path() / "www");
  auto runtime = library_component("cudart", "13.0.96");
  runtime.files.push_back({.path = "lib/libcudart-data.so", .content = incompressible(1 << 19, 8)});
  const auto wheel = mirror.add_wheel(runtime, "nvidia_cuda_runtime");
  FaultServer server;
  // The middle byte flipped: the entries before it unpack fine, and are thrown away.
  server.serve("/" + wheel.relative_path, read_text(mirror.root() / wheel.relative_path),
               {.wrong_bytes = true, .chunk_delay = std::chrono::milliseconds(2)});
  project.lock({{"cuda", "13.0.2", {lock_artifact(wheel, server.url(""))}}});
  const auto wrong = project.install();
  CHECK(wrong.exit_code == 1);
  CHECK_THAT(wrong.err, Catch::Contains("checksum mismatch"));
  CHECK_FALSE(fs::exists(project.prefix()));
  CHECK((!fs::exists(project.entries()) || fs::is_empty(project.entries())));
  // No staging folder or spooled download is left in the cache either.
  std::vector<std::string> left;
  for (const auto& entry : fs::recursive_directory_iterator(project.cache)) {
    const auto name = entry.path().filename().string();
    if (name.find("staging") != std::string::npos || name.ends_with(".download")) {
      left.push_back(entry.path().string());
    }
  }
  CHECK(left.empty());
}

TEST_CASE("a wheel that cannot be unpacked as it downloads is fetched again and unpacked whole",
          "[cli][install][cache]") {
  if (nginx_missing()) return;
  InstallProject streamed_project;
  InstallProject project;
  const RedistMirror mirror(project.dir.path() / "www");
  auto runtime = library_component("cudart", "13.0.96");
  runtime.files.push_back({.path = "lib/libcudart-data.so", .content = incompressible(1 << 19, 9)});
  auto wheel = mirror.add_wheel(runtime, "nvidia_cuda_runtime");
  const auto path = mirror.root() / wheel.relative_path;
  const StaticHttpServer streamed_server(mirror.root());
  streamed_project.lock({{"cuda", "13.0.2", {lock_artifact(wheel, streamed_server.url(""))}}});
  REQUIRE(streamed_project.install().exit_code == 0);
  // The same wheel as Python's zipfile writes it to a pipe: each entry's
  // sizes in a data descriptor after its data, which no reader can know as
  // the bytes arrive.
  const auto rewrite =
      "python3 -c 'import sys,zipfile\n"
      "src=zipfile.ZipFile(sys.argv[1])\n"
      "out=zipfile.ZipFile(sys.stdout.buffer,\"w\",zipfile.ZIP_DEFLATED)\n"
      "[out.writestr(i,src.read(i)) for i in src.infolist()]\n"
      "out.close()' " +
      path.string() + " | cat > " + path.string() + ".piped";
  REQUIRE(std::system(rewrite.c_str()) == 0);
  fs::rename(path.string() + ".piped", path);
  wheel.sha256 = core::sha256_file(path).value();
  FaultServer server;
  server.serve("/" + wheel.relative_path, read_text(path));
  project.lock({{"cuda", "13.0.2", {lock_artifact(wheel, server.url(""))}}});
  const auto installed = project.install();
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);
  CHECK(server.requests("/" + wheel.relative_path) == 2);
  CHECK(read_text(project.prefix() / "lib/libcudart-data.so") ==
        read_text(streamed_project.prefix() / "lib/libcudart-data.so"));
  CHECK(fs::status(project.prefix() / "lib/libcudart-data.so").permissions() ==
        fs::status(streamed_project.prefix() / "lib/libcudart-data.so").permissions());
}

}  // namespace
}  // namespace envkit::test
