// Where each package comes from, decided before downloading
// (install/sources.hpp): the decision against answers a fake network gives, and
// a real cache in a temporary folder.
#include "envkit/install/sources.hpp"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <set>

#include "envkit/core/text.hpp"
#include "support/temp_dir.hpp"

namespace envkit::install {
namespace {

namespace fs = std::filesystem;
using namespace store;
using Catch::Contains;
using specs::ArtifactKind;
using test::TempDir;

specs::Artifact artifact_on(const std::string& base, const std::string& component,
                            ArtifactKind kind, char sha) {
  specs::Artifact a;
  a.component = component;
  a.kind = kind;
  a.url = base + "/" + component + (kind == ArtifactKind::wheel ? ".whl" : ".tar.xz");
  a.sha256 = std::string(64, sha);
  a.format = kind == ArtifactKind::wheel ? "whl" : "tar.xz";
  a.layout =
      kind == ArtifactKind::wheel ? specs::Layout::nvidia_wheel : specs::Layout::nvidia_redist;
  return a;
}

lock::LockedPackage locked_package(const std::string& name, const std::string& version,
                                   std::vector<specs::Artifact> artifacts,
                                   std::map<std::string, std::string> requires_ = {}) {
  return {.name = name,
          .version = specs::Version::parse(version).value(),
          .build = "",
          .external = std::nullopt,
          .requires_ = std::move(requires_),
          .artifacts = std::move(artifacts)};
}

constexpr std::string_view kNvidia = "https://developer.download.nvidia.com/redist";
constexpr std::string_view kPypi = "https://files.pythonhosted.org/packages";
constexpr std::string_view kGithub = "https://github.com/astral-sh/python-build-standalone";

// CUDA 12.4.1 as NVIDIA's archives and as its wheels.
lock::PlatformLock cuda_both() {
  return {.platform = specs::Platform::linux_x86_64,
          .packages = {locked_package(
              "cuda", "12.4.1",
              {artifact_on(std::string(kNvidia), "cuda_cudart", ArtifactKind::archive, '1'),
               artifact_on(std::string(kPypi), "cuda_cudart", ArtifactKind::wheel, '2'),
               artifact_on(std::string(kNvidia), "cuda_nvcc", ArtifactKind::archive, '3'),
               artifact_on(std::string(kPypi), "cuda_nvcc", ArtifactKind::wheel, '4')})}};
}

// A network where the hosts in `down` do not answer, and the questions it got.
struct FakeNetwork {
  std::set<std::string> down;
  bool kept = false;  // its answers come from an earlier install's
  std::vector<std::vector<std::string>> asked;

  SourceProbe probe() {
    SourceProbe probe;
    probe.reach = [this](const std::vector<std::string>& urls) {
      asked.push_back(urls);
      std::map<std::string, net::HostReachability> answers;
      for (const auto& url : urls) {
        const auto host = net::reachability_host(url);
        const bool answers_here = !down.contains(host);
        answers[host] = {.host = host,
                         .reachable = answers_here,
                         .reason = answers_here ? "" : "Could not resolve host: " + host,
                         .cached = kept};
      }
      return answers;
    };
    probe.python = [](const specs::Version& version) -> Result<MachineOffer> {
      return Error::failed(fmt::format("this machine has no Python {}.{} to stand in for it",
                                       version.major(), version.minor()));
    };
    probe.pythons = [] { return std::vector<MachineOffer>{}; };
    probe.zlib = []() -> Result<MachineOffer> { return Error::failed("no libz.so.1"); };
    return probe;
  }
};

InstallPlan plan_of(const lock::PlatformLock& lock, Packaging preferred = Packaging::archive) {
  return plan_install(lock, std::nullopt, preferred).value();
}

TEST_CASE("sources: an archive host that does not answer gives wheels before any download",
          "[store][sources]") {
  TempDir dir;
  const Cache cache(dir.path() / "cache");
  const auto lock = cuda_both();
  FakeNetwork network{.down = {"developer.download.nvidia.com"}};

  auto plan = plan_of(lock);
  auto sources = decide_sources(plan, lock, cache, {.auto_packaging = true}, network.probe());
  REQUIRE(sources);
  const auto& cuda = plan.packages.at(0);
  CHECK(cuda.packaging == Packaging::wheel);
  REQUIRE(cuda.artifacts.size() == 2);
  CHECK(cuda.artifacts[0].kind == ArtifactKind::wheel);
  CHECK_FALSE(cuda.fallback);
  REQUIRE(sources->decisions.size() == 1);
  const auto& decision = sources->decisions[0];
  CHECK(decision.from == "wheel");
  CHECK_THAT(decision.why, Contains("its archives cannot be had: developer.download.nvidia.com is "
                                    "not reachable (Could not resolve host: "
                                    "developer.download.nvidia.com)"));
  CHECK_THAT(decision.why, Contains("files.pythonhosted.org answers"));
  CHECK(decision_line(decision) == "cuda 12.4.1: wheels (" + decision.why + ")");
  // `packaging: auto` chose: nothing fell back.
  CHECK(sources->fell_back.empty());
  CHECK(sources->stand_ins.empty());

  // Asked for archives, the install says it took wheels instead.
  auto asked_archives = plan_of(lock);
  auto explicit_sources =
      decide_sources(asked_archives, lock, cache, {.auto_packaging = false}, network.probe());
  REQUIRE(explicit_sources);
  CHECK(asked_archives.packages[0].packaging == Packaging::wheel);
  REQUIRE(explicit_sources->fell_back.size() == 1);
  CHECK(explicit_sources->fell_back[0] ==
        "cuda: installed from wheels, its archives were unreachable (developer.download.nvidia.com "
        "is not reachable (Could not resolve host: developer.download.nvidia.com))");
}

TEST_CASE("sources: every host is asked once, at its root, in one question", "[store][sources]") {
  TempDir dir;
  const Cache cache(dir.path() / "cache");
  auto lock = cuda_both();
  lock.packages[0].artifacts[0].url = "https://user:secret@developer.download.nvidia.com/a.tar.xz";
  FakeNetwork network;
  auto plan = plan_of(lock);
  auto sources =
      decide_sources(plan, lock, cache, {.mirrors = {"http://127.0.0.1:9/m"}}, network.probe());
  REQUIRE(sources);
  CHECK(plan.packages[0].packaging == Packaging::archive);
  CHECK(sources->decisions.at(0).from == "archive");
  REQUIRE(network.asked.size() == 1);
  const std::set<std::string> roots(network.asked[0].begin(), network.asked[0].end());
  CHECK(roots == std::set<std::string>{"http://127.0.0.1:9/",
                                       "https://developer.download.nvidia.com/",
                                       "https://files.pythonhosted.org/"});
  CHECK(network.asked[0].size() == roots.size());
}

TEST_CASE("sources: a mirror that answers is enough, the origin need not", "[store][sources]") {
  TempDir dir;
  const Cache cache(dir.path() / "cache");
  const auto lock = cuda_both();
  FakeNetwork network{.down = {"developer.download.nvidia.com", "files.pythonhosted.org"}};
  auto plan = plan_of(lock);
  auto sources =
      decide_sources(plan, lock, cache, {.mirrors = {"http://mirror.lan:8080"}}, network.probe());
  REQUIRE(sources);
  CHECK(plan.packages[0].packaging == Packaging::archive);
  CHECK(sources->decisions.at(0).why == "mirror.lan:8080 answers");
}

TEST_CASE("sources: an artifact in the cache needs no host", "[store][sources]") {
  TempDir dir;
  const Cache cache(dir.path() / "cache");
  const auto lock = cuda_both();
  // Both archives unpacked already (an empty entry will do for the decision).
  for (const auto& artifact : lock.packages[0].artifacts) {
    if (artifact.kind != ArtifactKind::archive) continue;
    const ArtifactTarget target{.package = "cuda", .version = "12.4.1", .artifact = artifact};
    const auto id = Cache::entry_id(target);
    const auto staging = cache.fresh_staging(id).value();
    REQUIRE(cache.commit(staging, {.id = id, .sha256 = artifact.sha256, .package = "cuda"}));
  }
  FakeNetwork network{.down = {"developer.download.nvidia.com", "files.pythonhosted.org"}};
  auto plan = plan_of(lock);
  auto sources = decide_sources(plan, lock, cache, {}, network.probe());
  REQUIRE(sources);
  CHECK(plan.packages[0].packaging == Packaging::archive);
  CHECK(sources->decisions.at(0).why == "in the cache");
}

TEST_CASE("sources: file:// needs no network, but the file must be there", "[store][sources]") {
  TempDir dir;
  const Cache cache(dir.path() / "cache");
  const auto here = dir.write("cudart.tar.xz", "bytes");
  lock::PlatformLock lock{
      .platform = specs::Platform::linux_x86_64,
      .packages = {locked_package("cuda", "12.4.1",
                                  {artifact_on("file://" + dir.path().string(), "cudart",
                                               ArtifactKind::archive, '1')}),
                   locked_package("cudnn", "9.1.0",
                                  {artifact_on("file://" + (dir.path() / "gone").string(), "cudnn",
                                               ArtifactKind::archive, '2')})}};
  FakeNetwork network;
  auto plan = plan_of(lock);
  auto sources = decide_sources(plan, lock, cache, {}, network.probe());
  REQUIRE_FALSE(sources);
  CHECK(network.asked.empty());  // nothing had a host to ask
  const auto causes = text::join(sources.error().causes(), "\n");
  CHECK_THAT(causes, Contains("cudnn 9.1.0: archive file://" +
                              (dir.path() / "gone" / "cudnn.tar.xz").string() + " — `" +
                              (dir.path() / "gone" / "cudnn.tar.xz").string() + "`: no such file"));
  CHECK_THAT(causes, !Contains("cudart"));
}

TEST_CASE(
    "sources: nothing reachable stops before downloading, naming every artifact and the "
    "fixes",
    "[store][sources]") {
  TempDir dir;
  const Cache cache(dir.path() / "cache");
  auto lock = cuda_both();
  auto runfile =
      artifact_on("https://developer.nvidia.com/compute", "cudnn", ArtifactKind::runfile, '5');
  runfile.layout = specs::Layout::cuda_runfile_nested;
  runfile.components = {"cuda_cudart"};
  runfile.patches.push_back({.url = "https://developer.nvidia.com/compute/patch1.run",
                             .sha256 = std::string(64, '6'),
                             .size = std::nullopt});
  lock.packages.push_back(locked_package("cudnn", "7.3.0.29", {runfile}));
  FakeNetwork network{.down = {"developer.download.nvidia.com", "files.pythonhosted.org",
                               "developer.nvidia.com", "mirror.invalid"},
                      .kept = true};
  auto plan = plan_of(lock);
  const auto before = plan.packages;
  auto sources =
      decide_sources(plan, lock, cache, {.mirrors = {"http://mirror.invalid"}}, network.probe());
  REQUIRE_FALSE(sources);
  const auto& error = sources.error();
  CHECK(error.exit_code() == 1);
  CHECK(error.message() ==
        "cannot install cuda 12.4.1 and cudnn 7.3.0.29: this machine reaches no source of them "
        "(nothing was downloaded or changed)");
  const auto causes = text::join(error.causes(), "\n");
  // Every artifact of both packagings, with its URL and why.
  for (const auto& artifact : lock.packages[0].artifacts)
    CHECK_THAT(causes, Contains(artifact.url + " — "));
  CHECK_THAT(causes, Contains("cuda 12.4.1: cuda_cudart archive " + std::string(kNvidia) +
                              "/cuda_cudart.tar.xz — developer.download.nvidia.com: Could not "
                              "resolve host: developer.download.nvidia.com"));
  CHECK_THAT(causes, Contains("cudnn 7.3.0.29: runfile " + runfile.url +
                              " — developer.nvidia.com: Could not resolve host"));
  CHECK_THAT(causes, Contains("cudnn 7.3.0.29: runfile patch 1 " + runfile.patches[0].url));
  // The mirror was asked too, and said so.
  CHECK_THAT(causes, Contains("also asked: http://mirror.invalid/developer.nvidia.com/compute/"));
  CHECK(error.causes().size() == 6);
  const auto hints = text::join(error.hints(), "\n");
  CHECK_THAT(hints, Contains("envkit install --mirror URL"));
  // The hosts the files come from, not the mirror that lacks them.
  CHECK_THAT(hints, Contains("on a machine that reaches developer.download.nvidia.com, "
                             "developer.nvidia.com, files.pythonhosted.org: "));
  CHECK_THAT(hints, Contains("envkit mirror --out DIR"));
  CHECK_THAT(hints, Contains("envkit install --refresh"));
  // No `external:` for CUDA: it would not work.
  CHECK_THAT(hints, !Contains("external"));
  // The plan is as it was.
  REQUIRE(plan.packages.size() == before.size());
  CHECK(plan.packages[0].packaging == before[0].packaging);
  CHECK(plan.packages[0].artifacts == before[0].artifacts);
}

lock::PlatformLock python_lock(const std::string& version, std::string framework_python = "") {
  specs::Artifact python;
  python.component = "python";
  python.kind = ArtifactKind::archive;
  python.url = std::string(kGithub) + "/releases/download/cpython-" + version + ".tar.gz";
  python.sha256 = std::string(64, '7');
  python.format = "tar.gz";
  python.layout = specs::Layout::python_standalone;
  lock::PlatformLock lock{.platform = specs::Platform::linux_x86_64,
                          .packages = {locked_package("python", version, {python})}};
  if (!framework_python.empty()) {
    lock.packages.push_back(
        locked_package("tensorflow-gpu", "1.6.0", {}, {{"python", framework_python}}));
  }
  return lock;
}

TEST_CASE("sources: a machine interpreter of the same minor stands in for the lock's Python",
          "[store][sources]") {
  TempDir dir;
  const Cache cache(dir.path() / "cache");
  const auto lock = python_lock("3.11.16");
  FakeNetwork network{.down = {"github.com"}};
  auto probe = network.probe();
  std::vector<std::string> minors_asked;
  probe.python = [&](const specs::Version& version) -> Result<MachineOffer> {
    minors_asked.push_back(version.original());
    return MachineOffer{.path = "/root/.pyenv/versions/3.11.7/bin/python3.11",
                        .version = "3.11.7",
                        .source = "pyenv"};
  };
  auto plan = plan_of(lock);
  auto sources = decide_sources(plan, lock, cache, {}, probe);
  REQUIRE(sources);
  CHECK(minors_asked == std::vector<std::string>{"3.11.16"});
  const auto& python = plan.packages.at(0);
  CHECK(python.packaging == Packaging::venv);
  CHECK(python.external == "/root/.pyenv/versions/3.11.7/bin/python3.11");
  CHECK(python.stand_in);
  CHECK(python.artifacts.empty());
  CHECK(python.version == "3.11.16");  // the lock's, which the receipt keeps
  REQUIRE(sources->stand_ins.size() == 1);
  CHECK(sources->stand_ins[0] ==
        "python 3.11.16: the machine's /root/.pyenv/versions/3.11.7/bin/python3.11 (3.11.7) "
        "stands in: github.com is not reachable");
  CHECK(sources->decisions.at(0).from == "machine");
  CHECK_THAT(sources->decisions[0].why,
             Contains("its archive cannot be had: github.com is not reachable") &&
                 Contains("(3.11.7, pyenv) stands in"));
}

TEST_CASE(
    "sources: no interpreter of the lock's minor is an error, with `external:` only where "
    "it would do",
    "[store][sources]") {
  TempDir dir;
  const Cache cache(dir.path() / "cache");
  FakeNetwork network{.down = {"github.com"}};
  auto probe = network.probe();
  // The machine has 3.11 and 3.8; it can make venvs of both.
  probe.pythons = [] {
    return std::vector<MachineOffer>{{.path = "/usr/bin/python3.11", .version = "3.11.2"},
                                     {.path = "/opt/py38/bin/python3.8", .version = "3.8.18"}};
  };
  probe.python = [](const specs::Version& version) -> Result<MachineOffer> {
    if (version.minor() == 11)
      return MachineOffer{.path = "/usr/bin/python3.11", .version = "3.11.2"};
    if (version.minor() == 8)
      return MachineOffer{.path = "/opt/py38/bin/python3.8", .version = "3.8.18"};
    return Error::failed(
        fmt::format("this machine has no Python 3.{} to stand in for it", version.minor()));
  };

  SECTION("the framework allows a Python the machine has: say how to use it") {
    const auto lock = python_lock("3.6.15", "<3.9,>=3.3");
    auto plan = plan_of(lock);
    auto sources = decide_sources(plan, lock, cache, {}, probe);
    REQUIRE_FALSE(sources);
    const auto causes = text::join(sources.error().causes(), "\n");
    CHECK_THAT(causes, Contains("python 3.6.15: archive " + lock.packages[0].artifacts[0].url +
                                " — github.com: Could not resolve host: github.com"));
    CHECK_THAT(causes,
               Contains("python 3.6.15: this machine has no Python 3.6 to stand in for it"));
    const auto hints = text::join(sources.error().hints(), "\n");
    CHECK_THAT(hints, Contains("tensorflow-gpu 1.6.0 (python <3.9,>=3.3) allows Python 3.8.18, "
                               "which this machine has: add `external: {python: "
                               "/opt/py38/bin/python3.8}` to envkit.yaml"));
  }
  SECTION("the framework allows none of them: no such hint") {
    const auto lock = python_lock("3.6.15", "<3.7,>=3.3");
    auto plan = plan_of(lock);
    auto sources = decide_sources(plan, lock, cache, {}, probe);
    REQUIRE_FALSE(sources);
    CHECK_THAT(text::join(sources.error().hints(), "\n"), !Contains("external"));
  }
  SECTION("without a framework's requirement, nothing says which other Python would do") {
    const auto lock = python_lock("3.6.15");
    auto plan = plan_of(lock);
    auto sources = decide_sources(plan, lock, cache, {}, probe);
    REQUIRE_FALSE(sources);
    CHECK_THAT(text::join(sources.error().hints(), "\n"), !Contains("external"));
  }
}

lock::PlatformLock zlib_lock(const std::string& cudnn_needs) {
  specs::Artifact zlib;
  zlib.component = "zlib";
  zlib.kind = ArtifactKind::source;
  zlib.url = "https://zlib.net/zlib-1.3.1.tar.gz";
  zlib.sha256 = std::string(64, '8');
  zlib.format = "tar.gz";
  zlib.layout = specs::Layout::source_tree;
  return {.platform = specs::Platform::linux_x86_64,
          .packages = {locked_package("cudnn", "9.1.0", {}, {{"zlib", cudnn_needs}}),
                       locked_package("zlib", "1.3.1", {zlib})}};
}

TEST_CASE("sources: a lock naming another machine's interpreter gets this machine's of its minor",
          "[store][sources]") {
  TempDir dir;
  const Cache cache(dir.path() / "cache");
  // Locked where pyenv's 3.11.7 stood in: the lock names that path.
  auto locked = locked_package("python", "3.11.7", {});
  locked.external = (dir.path() / "elsewhere/bin/python3").string();
  const lock::PlatformLock lock{.platform = specs::Platform::linux_x86_64, .packages = {locked}};
  FakeNetwork network;
  auto probe = network.probe();
  probe.python = [](const specs::Version& version) -> Result<MachineOffer> {
    CHECK(version.original() == "3.11.7");
    return MachineOffer{.path = "/usr/bin/python3.11", .version = "3.11.2", .source = "/usr/bin"};
  };
  auto plan = plan_of(lock);
  REQUIRE(plan.packages.at(0).packaging == Packaging::venv);
  auto sources = decide_sources(plan, lock, cache, {}, probe);
  REQUIRE(sources);
  CHECK(plan.packages.at(0).external == "/usr/bin/python3.11");
  REQUIRE(sources->stand_ins.size() == 1);
  CHECK(sources->stand_ins[0] == "python 3.11.7: the lock's " + *locked.external +
                                     " is not on this machine; its /usr/bin/python3.11 (3.11.2) "
                                     "stands in");

  // Where the path is there, the lock's interpreter is used as it says.
  std::filesystem::create_directories(dir.path() / "elsewhere/bin");
  dir.write("elsewhere/bin/python3", "");
  auto here = plan_of(lock);
  auto kept = decide_sources(here, lock, cache, {}, probe);
  REQUIRE(kept);
  CHECK(here.packages.at(0).external == *locked.external);
  CHECK(kept->stand_ins.empty());
}

TEST_CASE("sources: the machine's zlib stands in when it is what the lock's packages need",
          "[store][sources]") {
  TempDir dir;
  const Cache cache(dir.path() / "cache");
  FakeNetwork network{.down = {"zlib.net"}};
  auto probe = network.probe();
  probe.zlib = []() -> Result<MachineOffer> {
    return MachineOffer{.path = "/lib/x86_64-linux-gnu/libz.so.1",
                        .version = "1.2.13",
                        .source = "the dynamic loader"};
  };

  const auto any = zlib_lock("");
  auto plan = plan_of(any);
  auto sources = decide_sources(plan, any, cache, {}, probe);
  REQUIRE(sources);
  const auto zlib = std::find_if(plan.packages.begin(), plan.packages.end(),
                                 [](const PlannedPackage& p) { return p.name == "zlib"; });
  REQUIRE(zlib != plan.packages.end());
  CHECK(zlib->packaging == Packaging::machine);
  CHECK(zlib->artifacts.empty());
  CHECK(zlib->build == "/lib/x86_64-linux-gnu/libz.so.1");
  REQUIRE(sources->stand_ins.size() == 1);
  CHECK(sources->stand_ins[0] ==
        "zlib 1.3.1: the machine's /lib/x86_64-linux-gnu/libz.so.1 (1.2.13) stands in: zlib.net "
        "is not reachable");

  const auto newer = zlib_lock(">=1.3");
  auto newer_plan = plan_of(newer);
  auto refused = decide_sources(newer_plan, newer, cache, {}, probe);
  REQUIRE_FALSE(refused);
  const auto causes = text::join(refused.error().causes(), "\n");
  CHECK_THAT(causes, Contains("zlib 1.3.1: source https://zlib.net/zlib-1.3.1.tar.gz — zlib.net: "
                              "Could not resolve host: zlib.net"));
  CHECK_THAT(causes, Contains("zlib 1.3.1: the machine's zlib 1.2.13 "
                              "(/lib/x86_64-linux-gnu/libz.so.1) cannot stand in: cudnn 9.1.0 "
                              "needs zlib >=1.3"));
}

TEST_CASE("sources: the machine's zlib is libz.so.1 as the loader finds it, with its version",
          "[store][sources]") {
  auto zlib = machine_zlib();
  REQUIRE(zlib);  // envkit itself needs zlib: every machine that runs it has one
  CHECK(fs::exists(zlib->path));
  CHECK_THAT(zlib->path.filename().string(), Catch::StartsWith("libz.so.1"));
  const auto version = specs::Version::parse(zlib->version);
  REQUIRE(version);
  CHECK(version->major() == 1);
}

TEST_CASE("plan: a machine's stand-in stays while the lock's version is the same",
          "[store][sources][plan]") {
  const auto lock = python_lock("3.11.16");
  PrefixState installed{.generation = 1};
  installed.packages.push_back({.name = "python",
                                .version = "3.11.16",
                                .build = "/usr/bin/python3.11",
                                .packaging = "venv"});
  auto plan = plan_install(lock, installed, Packaging::archive);
  REQUIRE(plan);
  CHECK(plan->nothing_to_do());
  CHECK(plan->packages.at(0).packaging == Packaging::venv);
  CHECK(plan->packages[0].external == "/usr/bin/python3.11");

  // --reinstall decides again: the lock's own Python first.
  auto again = plan_install(lock, installed, Packaging::archive, true);
  REQUIRE(again);
  CHECK(again->packages.at(0).packaging == Packaging::archive);
  CHECK_FALSE(again->packages[0].unchanged);

  // Another version of the lock's Python is a change.
  installed.packages[0].version = "3.11.15";
  auto changed = plan_install(lock, installed, Packaging::archive);
  REQUIRE(changed);
  CHECK(changed->packages.at(0).packaging == Packaging::archive);

  const auto zlib = zlib_lock("");
  PrefixState with_zlib{.generation = 1};
  with_zlib.packages.push_back({.name = "zlib",
                                .version = "1.3.1",
                                .build = "/lib/x86_64-linux-gnu/libz.so.1",
                                .packaging = "machine"});
  auto kept = plan_install(zlib, with_zlib, Packaging::archive);
  REQUIRE(kept);
  CHECK(kept->nothing_to_do());
  CHECK(kept->packages.at(0).packaging == Packaging::machine);
}

}  // namespace
}  // namespace envkit::install
