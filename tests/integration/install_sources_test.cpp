// `envkit install` decides where each package comes from before it downloads
// anything (docs/install.md#sources-and-reachability): the real binary against
// nginx, where a host that does not answer is a closed 127.0.0.1 port or an
// `.invalid` name, and the machine's own Python and zlib stand in.
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "envkit/core/text.hpp"
#include "envkit/net/reachability.hpp"
#include "envkit/sys/process.hpp"
#include "install_support.hpp"
#include "support/http_server.hpp"
#include "support/skip.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using Catch::Contains;
using nlohmann::json;

// A base URL where nothing listens: connections are refused at once.
std::string closed_base() {
  return "http://127.0.0.1:" + std::to_string(free_port());
}

std::string host_of(const std::string& base) {
  return base.substr(base.find("://") + 3);
}

lock::LockedPackage sourced_package(const std::string& name, const std::string& version,
                                    std::vector<specs::Artifact> artifacts,
                                    std::map<std::string, std::string> requires_ = {}) {
  return {.name = name,
          .version = specs::Version::parse(version).value(),
          .build = "",
          .external = std::nullopt,
          .requires_ = std::move(requires_),
          .artifacts = std::move(artifacts)};
}

void write_sources_lock(const InstallProject& project, std::vector<lock::LockedPackage> packages) {
  lock::Lockfile lockfile;
  lockfile.manifest_hash = "sha256:" + std::string(64, '0');
  lockfile.system.source = specs::FactSource::none;
  lockfile.platforms.push_back(
      {.platform = specs::Platform::linux_x86_64, .packages = std::move(packages)});
  std::ofstream(project.root / "envkit.lock") << lock::write(lockfile);
}

// A python-build-standalone archive of `version` at `base` (never served: its host is down).
specs::Artifact standalone_archive(const std::string& base, const std::string& version) {
  specs::Artifact artifact;
  artifact.component = "python";
  artifact.kind = specs::ArtifactKind::archive;
  artifact.url = base + "/cpython-" + version + "-x86_64-unknown-linux-gnu-install_only.tar.gz";
  artifact.sha256 = std::string(64, 'c');
  artifact.size = 1000;
  artifact.format = "tar.gz";
  artifact.layout = specs::Layout::python_standalone;
  return artifact;
}

// zlib's source tarball at `base` (never served).
specs::Artifact zlib_source(const std::string& base) {
  specs::Artifact artifact;
  artifact.component = "zlib";
  artifact.kind = specs::ArtifactKind::source;
  artifact.url = base + "/zlib-1.3.1.tar.gz";
  artifact.sha256 = std::string(64, 'd');
  artifact.format = "tar.gz";
  artifact.layout = specs::Layout::source_tree;
  return artifact;
}

// The lines of nginx's access log that asked for a file, not for the root
// (the root is how a host is asked whether it answers).
std::vector<std::string> file_requests(const StaticHttpServer& server) {
  std::vector<std::string> lines;
  const auto log = server.access_log();
  for (const auto line : text::split(log, '\n')) {
    if (!line.empty() && !line.ends_with(" /")) lines.emplace_back(line);
  }
  return lines;
}

TEST_CASE("install takes wheels where the archives' host does not answer, before downloading",
          "[cli][install][sources]") {
  if (nginx_missing()) return;
  InstallProject project;
  const RedistMirror www(project.dir.path() / "www");
  const FixtureComponent runtime{
      .name = "cuda_cudart",
      .version = "13.0.96",
      .files = {{.path = "lib/libcudart.so.13", .content = "runtime\n"},
                {.path = "include/cuda_runtime_api.h", .content = "// api\n"}}};
  const auto archive = www.add_archive(runtime);
  const auto wheel = www.add_wheel(runtime, "nvidia_cuda_runtime");
  const StaticHttpServer pypi(www.root());
  const auto nvidia = closed_base();
  project.lock(
      {{"cuda", "13.0.2", {lock_artifact(archive, nvidia), lock_artifact(wheel, pypi.url(""))}}});

  // `packaging: auto`, the default: wheels, said with -v and in --json.
  const auto started = std::chrono::steady_clock::now();
  const auto r = project.install({"--json", "-v"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(30));
  const auto report = json::parse(r.out);
  CHECK(report.at("added") == json::array({"cuda 13.0.2 (wheel)"}));
  CHECK(report.at("fell_back").empty());
  REQUIRE(report.at("sources").size() == 1);
  const auto& source = report.at("sources").at(0);
  CHECK(source.at("package") == "cuda");
  CHECK(source.at("from") == "wheel");
  const auto why = source.at("why").get<std::string>();
  CHECK_THAT(why, Contains("its archive cannot be had: " + host_of(nvidia) + " is not reachable"));
  CHECK_THAT(why, Contains(host_of(pypi.url("")) + " answers"));
  CHECK_THAT(r.err, Contains("source: cuda 13.0.2: wheels (" + why + ")"));
  CHECK(read_text(project.prefix() / "lib" / "libcudart.so.13") == "runtime\n");
  CHECK_THAT(pypi.access_log(), Contains(" 200 /" + wheel.relative_path));

  // Asked for archives, it takes the wheels all the same, and says so without -v.
  const auto expected = "cuda: installed from wheels, its archives were unreachable (" +
                        host_of(nvidia) + " is not reachable (";
  const auto asked = project.install(
      {"--packaging", "archive", "--prefix", (project.dir.path() / "archives-asked").string()});
  INFO(asked.err);
  REQUIRE(asked.exit_code == 0);
  CHECK_THAT(asked.err, Contains(expected));
  CHECK_THAT(asked.err, !Contains("source: "));  // the decisions are -v's
  const auto as_json = project.install({"--json", "--packaging", "archive", "--prefix",
                                        (project.dir.path() / "archives-asked-json").string()});
  REQUIRE(as_json.exit_code == 0);
  const auto fell_back = json::parse(as_json.out).at("fell_back");
  REQUIRE(fell_back.size() == 1);
  CHECK_THAT(fell_back.at(0).get<std::string>(), Catch::StartsWith(expected));
}

TEST_CASE("where nothing is reachable install names every artifact and changes nothing",
          "[cli][install][sources]") {
  if (nginx_missing()) return;
  InstallProject project;
  const RedistMirror www(project.dir.path() / "www");
  const auto foo = www.add_archive(library_component("foo", "1.2.3"));
  const auto bar = www.add_archive(library_component("bar", "2.0.0"));
  const StaticHttpServer server(www.root());
  project.lock({{"cuda", "12.4.1", {lock_artifact(foo, server.url(""))}}});
  REQUIRE(project.install().exit_code == 0);
  const auto generation = fs::read_symlink(project.prefix());
  const int entries = project.entry_folders();
  const auto served = file_requests(server);

  // The next lock adds a package from nginx, and three it cannot have.
  const auto nvidia = closed_base();
  const std::string pypi = "http://files.pythonhosted.invalid/packages";
  const auto github = closed_base();
  const auto cudnn_archive = lock_artifact(bar, nvidia);
  auto cudnn_wheel =
      lock_artifact(www.add_wheel(library_component("cudnn", "9.1.0"), "nvidia_cudnn"), pypi);
  cudnn_wheel.component = cudnn_archive.component;
  const auto python = standalone_archive(github, "3.4.10");
  write_sources_lock(
      project,
      {sourced_package("cuda", "12.4.1",
                       {lock_artifact(foo, server.url("")), lock_artifact(bar, server.url(""))}),
       sourced_package("cudnn", "9.1.0", {cudnn_archive, cudnn_wheel}),
       sourced_package("python", "3.4.10", {python})});
  const auto lock_before = read_text(project.root / "envkit.lock");
  const auto no_pythons = project.dir.path() / "no-pythons";
  fs::create_directories(no_pythons);
  const std::map<std::string, std::optional<std::string>> env = {
      {"ENVKIT_PYTHON_SEARCH_PATH", no_pythons.string()}};

  const auto r = project.install({"--json"}, env);
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("error: cannot install cudnn 9.1.0 and python 3.4.10: this machine "
                             "reaches no source of them (nothing was downloaded or changed)"));
  // Every artifact, with its URL and why.
  CHECK_THAT(r.err, Contains("cudnn 9.1.0: bar archive " + cudnn_archive.url + " — " +
                             host_of(nvidia) + ": Failed to connect to 127.0.0.1"));
  CHECK_THAT(r.err, Contains("cudnn 9.1.0: bar wheel " + cudnn_wheel.url +
                             " — files.pythonhosted.invalid: Could not resolve host: "
                             "files.pythonhosted.invalid"));
  CHECK_THAT(r.err,
             Contains("python 3.4.10: archive " + python.url + " — " + host_of(github) + ": "));
  CHECK_THAT(r.err, Contains("python 3.4.10: this machine has no Python 3.4 to stand in for it "
                             "(looked in ENVKIT_PYTHON_SEARCH_PATH=" +
                             no_pythons.string() + ")"));
  CHECK_THAT(r.err, Contains("hint: a mirror that has these files: `envkit install --mirror URL`"));
  CHECK_THAT(r.err, Contains("hint: on a machine that reaches "));
  CHECK_THAT(r.err, Contains("`envkit mirror --out DIR`"));
  // --json carries the same.
  const auto error = json::parse(r.out);
  CHECK(error.at("exit_code") == 1);
  CHECK(error.at("causes").size() == 4);

  // Nothing downloaded, nothing changed: no new cache entry, no file asked of
  // nginx, the prefix on its generation with its files, the lock as it was.
  CHECK(project.entry_folders() == entries);
  CHECK(file_requests(server) == served);
  CHECK(fs::read_symlink(project.prefix()) == generation);
  CHECK(read_text(project.prefix() / "lib" / "libfoo.so") == "foo library 1.2.3\n");
  CHECK_FALSE(fs::exists(project.prefix() / "lib" / "libbar.so"));
  CHECK(read_text(project.root / "envkit.lock") == lock_before);

  // --offline asks no host: the cache only, as before.
  InstallProject offline;
  fs::copy_file(project.root / "envkit.lock", offline.root / "envkit.lock");
  const auto cache_only = offline.install({"--offline"}, env);
  CHECK(cache_only.exit_code == 1);
  CHECK_THAT(cache_only.err, Contains("--offline: some artifacts are not in the cache"));
  CHECK_FALSE(fs::exists(offline.cache / "net" / "reachability.json"));
}

// The real executable behind `python3` on PATH, and its version.
std::optional<std::pair<fs::path, std::string>> python3_on_path() {
  auto run = sys::run_process(
      {"python3", "-c",
       "import sys; print(sys.executable); print('%d.%d.%d' % sys.version_info[:3])"});
  if (!run || run->exit_code != 0) return std::nullopt;
  const auto lines = text::split(text::trim(run->out), '\n');
  if (lines.size() != 2) return std::nullopt;
  return std::pair{fs::canonical(std::string(lines[0])), std::string(lines[1])};
}

TEST_CASE("the machine's interpreter of the lock's minor stands in for a Python it cannot download",
          "[cli][install][sources][python]") {
  if (host_python_missing()) return;
  const auto python = python3_on_path();
  REQUIRE(python);
  const auto& [executable, version] = *python;
  const auto minor = version.substr(0, version.rfind('.'));
  InstallProject project;
  // The "machine": one folder, with that interpreter as python3.
  const auto pythons = project.dir.path() / "machine-bin";
  fs::create_directories(pythons);
  fs::create_symlink(executable, pythons / "python3");
  const std::map<std::string, std::optional<std::string>> env = {
      {"ENVKIT_PYTHON_SEARCH_PATH", pythons.string()}};
  const auto github = closed_base();
  const auto locked = minor + ".99";  // a release of that minor this machine does not have
  write_sources_lock(project,
                     {sourced_package("python", locked, {standalone_archive(github, locked)})});

  const auto r = project.install({"--json", "-v"}, env);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto report = json::parse(r.out);
  const auto stand_in = "python " + locked + ": the machine's " + (pythons / "python3").string() +
                        " (" + version + ") stands in: " + host_of(github) + " is not reachable";
  CHECK(report.at("stand_ins") == json::array({stand_in}));
  CHECK_THAT(r.err, Contains(stand_in));
  CHECK(report.at("sources").at(0).at("from") == "machine");
  CHECK_THAT(r.err, Contains("source: python " + locked + ": the machine's own ("));
  // The prefix is a venv of it.
  CHECK(fs::exists(project.prefix() / "pyvenv.cfg"));
  auto ran = sys::run_process({(project.prefix() / "bin" / "python3").string(), "-c",
                               "import sys; print(sys.prefix != sys.base_prefix)"});
  REQUIRE(ran);
  CHECK(ran->out == "True\n");
  const auto list = json::parse(project.envkit({"list", "--json"}, env).out);
  CHECK(list.at("packages").at(0).at("packaging") == "venv");
  CHECK(list.at("packages").at(0).at("version") == locked);

  // Installed as the lock says: nothing more to do, and no host asked.
  const auto again = project.install({"--json"}, env);
  INFO(again.err);
  REQUIRE(again.exit_code == 0);
  CHECK(json::parse(again.out).at("changed") == false);

  // A minor the machine does not have: named among what cannot be had.
  InstallProject older;
  const auto old_locked = std::string("3.4.10");
  write_sources_lock(
      older, {sourced_package("python", old_locked, {standalone_archive(github, old_locked)})});
  const auto failed = older.install({}, env);
  CHECK(failed.exit_code == 1);
  CHECK_THAT(failed.err, Contains("python 3.4.10: archive " + github + "/cpython-3.4.10"));
  CHECK_THAT(failed.err, Contains("python 3.4.10: this machine has no Python 3.4 to stand in"));
  CHECK_FALSE(fs::exists(older.prefix()));
}

// libz.so.1 as the loader's cache names it, and the version its real file's name says.
std::optional<std::pair<std::string, std::string>> loader_zlib() {
  auto run = sys::run_process({"/sbin/ldconfig", "-p"});
  if (!run || run->exit_code != 0) return std::nullopt;
  for (const auto line : text::split(run->out, '\n')) {
    if (line.find("libz.so.1 ") == std::string_view::npos ||
        line.find("x86-64") == std::string_view::npos)
      continue;
    const auto path = std::string(text::trim(line.substr(line.find("=> ") + 3)));
    const auto real = fs::canonical(path).filename().string();  // libz.so.1.2.13
    return std::pair{path, real.substr(std::string_view("libz.so.").size())};
  }
  return std::nullopt;
}

TEST_CASE(
    "the machine's zlib stands in for a zlib it cannot download, when it is what the lock "
    "needs",
    "[cli][install][sources]") {
  if (nginx_missing()) return;
  const auto zlib = loader_zlib();
  if (!zlib) {
    skip_test(SkipKind::expected, "ldconfig names no x86-64 libz.so.1 here");
    return;
  }
  InstallProject project;
  const RedistMirror www(project.dir.path() / "www");
  const auto cudnn = www.add_archive(library_component("cudnn", "9.1.0"));
  const StaticHttpServer server(www.root());
  const auto zlib_net = closed_base();
  write_sources_lock(
      project,
      {sourced_package("cudnn", "9.1.0", {lock_artifact(cudnn, server.url(""))}, {{"zlib", ""}}),
       sourced_package("zlib", "1.3.1", {zlib_source(zlib_net)})});
  const auto r = project.install({"--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto stand_ins = json::parse(r.out).at("stand_ins");
  REQUIRE(stand_ins.size() == 1);
  const auto line = stand_ins.at(0).get<std::string>();
  CHECK_THAT(line, Catch::StartsWith("zlib 1.3.1: the machine's "));
  CHECK_THAT(line, Catch::EndsWith(" (" + zlib->second + ") stands in: " + host_of(zlib_net) +
                                   " is not reachable"));
  CHECK(fs::canonical(
            line.substr(std::string_view("zlib 1.3.1: the machine's ").size(),
                        line.find(" (") - std::string_view("zlib 1.3.1: the machine's ").size())) ==
        fs::canonical(zlib->first));
  CHECK(read_text(project.prefix() / "lib" / "libcudnn.so") == "cudnn library 9.1.0\n");
  CHECK_FALSE(fs::exists(project.prefix() / "lib" / "libz.so.1"));
  const auto list = json::parse(project.envkit({"list", "--json"}).out);
  bool listed = false;
  for (const auto& package : list.at("packages")) {
    if (package.at("name") != "zlib") continue;
    listed = true;
    CHECK(package.at("packaging") == "machine");
    CHECK(package.at("files") == 0);
  }
  CHECK(listed);
  // doctor finds the prefix as the lock says, the stand-in included.
  const auto prefix_findings = doctor_messages(project.envkit({"doctor", "--json"}), "prefix");
  REQUIRE(prefix_findings.size() == 1);
  CHECK_THAT(prefix_findings[0], Contains("match the lock and the receipts"));
  const auto again = project.install({"--json"});
  REQUIRE(again.exit_code == 0);
  CHECK(json::parse(again.out).at("changed") == false);

  // A lock that needs a newer zlib than the machine's: it cannot stand in.
  InstallProject newer;
  write_sources_lock(newer,
                     {sourced_package("cudnn", "9.1.0", {lock_artifact(cudnn, server.url(""))},
                                      {{"zlib", ">=99"}}),
                      sourced_package("zlib", "1.3.1", {zlib_source(zlib_net)})});
  const auto refused = newer.install();
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.err, Contains("zlib 1.3.1: source " + zlib_net + "/zlib-1.3.1.tar.gz — " +
                                   host_of(zlib_net) + ": "));
  CHECK_THAT(refused.err, Contains("zlib 1.3.1: the machine's zlib " + zlib->second + " (") &&
                              Contains(") cannot stand in: cudnn 9.1.0 needs zlib >=99"));
  CHECK_FALSE(fs::exists(newer.prefix()));
}

// Whether `host` answers an HTTP request from here at all (any status), as curl sees it.
bool curl_reaches(const std::string& host) {
  auto probe = sys::run_process(
      {"curl", "-sS", "-o", "/dev/null", "-I", "--max-time", "10", "https://" + host + "/"},
      {.timeout = std::chrono::seconds(20)});
  return probe && probe->exit_code == 0;
}

TEST_CASE(
    "live: an install on this machine's own network decides its sources before "
    "downloading",
    "[cli][install][sources][live]") {
  if (live_tests_off("lock CUDA 12.4's runtime, Python 3.11 and zlib and install them from "
                     "whatever this machine reaches (a few MB from PyPI where NVIDIA's host "
                     "does not answer)"))
    return;
  if (program_missing("curl")) return;
  InstallProject project;
  std::ofstream(project.root / "envkit.yaml")
      << "requires:\n  cuda: \"12.4\"\n  python: \"3.11\"\n  zlib:\nsystem:\n  driver: 550.54.15\n";
  const auto locked = project.envkit({"lock"});
  INFO(locked.err);
  REQUIRE(locked.exit_code == 0);
  // CUDA's runtime alone, as archive and wheel: the decision, not a gigabyte of libraries.
  auto lockfile = lock::load(project.root / "envkit.lock");
  REQUIRE(lockfile);
  std::map<std::string, std::string> host_of_package;
  for (auto& platform : lockfile->platforms) {
    for (auto& package : platform.packages) {
      std::erase_if(package.artifacts, [](const specs::Artifact& a) {
        return !a.component.empty() && a.component.starts_with("cuda_") &&
               a.component != "cuda_cudart";
      });
      std::erase_if(package.artifacts, [](const specs::Artifact& a) {
        return a.component.starts_with("lib") || a.component.starts_with("nsight");
      });
      for (const auto& artifact : package.artifacts) {
        host_of_package[package.name + "/" + std::string(specs::to_string(artifact.kind))] =
            net::reachability_host(artifact.url);
      }
    }
  }
  std::ofstream(project.root / "envkit.lock") << lock::write(*lockfile);
  const auto nvidia = host_of_package.at("cuda/archive");
  const auto github = host_of_package.at("python/archive");
  const auto zlib_host = host_of_package.at("zlib/source");

  const auto r = project.install({"-v", "--json"});
  INFO(r.err);
  if (!curl_reaches(github) && !curl_reaches("files.pythonhosted.org")) {
    // Nothing at all: the error, with nothing downloaded.
    CHECK(r.exit_code == 1);
    return;
  }
  REQUIRE(r.exit_code == 0);
  const auto report = json::parse(r.out);
  std::map<std::string, json> sources;
  for (const auto& source : report.at("sources"))
    sources[source.at("package").get<std::string>()] = source;
  const auto why = [&](const std::string& package) {
    return sources.at(package).at("why").get<std::string>();
  };
  if (curl_reaches(nvidia)) {
    CHECK(sources.at("cuda").at("from") == "archive");
  } else {
    CHECK(sources.at("cuda").at("from") == "wheel");
    CHECK_THAT(why("cuda"), Contains(nvidia + " is not reachable"));
    CHECK_THAT(why("cuda"), Contains("files.pythonhosted.org answers"));
    CHECK(fs::exists(project.prefix() / "lib" / "libcudart.so.12"));
  }
  const auto stand_ins = report.at("stand_ins").dump();
  if (curl_reaches(github)) {
    CHECK(sources.at("python").at("from") == "archive");
  } else {
    CHECK(sources.at("python").at("from") == "machine");
    CHECK_THAT(stand_ins, Contains("stands in: " + github + " is not reachable"));
    CHECK(fs::exists(project.prefix() / "pyvenv.cfg"));
  }
  if (curl_reaches(zlib_host)) {
    CHECK(sources.at("zlib").at("from") == "source");
  } else {
    CHECK(sources.at("zlib").at("from") == "machine");
    CHECK_THAT(stand_ins, Contains("stands in: " + zlib_host + " is not reachable"));
  }
  CHECK_THAT(r.err, Contains("source: cuda 12.4.1: "));
  auto python = sys::run_process({(project.prefix() / "bin" / "python3").string(), "-c",
                                  "import sys; print('%d.%d' % sys.version_info[:2])"});
  REQUIRE(python);
  CHECK(python->out == "3.11\n");

  const auto again = project.install({"--json"});
  REQUIRE(again.exit_code == 0);
  CHECK(json::parse(again.out).at("changed") == false);
}

}  // namespace
}  // namespace envkit::test
