// Which Python (and zlib) a lock of this machine prefers, with the network and the
// machine's interpreters given as fixed answers: the source tree's recipe database, whose
// CPython downloads are python-build-standalone's (github.com) and python.org's
// (www.python.org), and zlib's tarballs on zlib.net.
#include "envkit/locking/obtainable.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "envkit/core/sha256.hpp"
#include "envkit/locking/lock_pipeline.hpp"
#include "envkit/python/uv.hpp"
#include "support/source_database.hpp"
#include "support/temp_dir.hpp"

namespace envkit::locking::obtainable_test {
namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

const recipes::Database& db() {
  return test::source_database();
}

// A machine without a driver: its facts are its own (source none), as on a GPU-less laptop.
gpu::ProbeSources no_driver() {
  return {.variable = [](const env::Variable&) { return std::optional<std::string>(); },
          .read_file = [](const std::filesystem::path&) { return std::optional<std::string>(); },
          .query_nvidia_smi = [] { return std::optional<sys::ProcessOutput>(); },
          .query_libcuda = {}};
}

LockInputs project_inputs(const test::TempDir& project, std::string_view manifest) {
  project.write("envkit.yaml", manifest);
  auto inputs = gather_lock_inputs(project.path(), {}, no_driver());
  if (!inputs) FAIL(inputs.error().to_string());
  return *std::move(inputs);
}

// A network where `unreachable` hosts do not answer and every other one does.
MachineSources network(std::set<std::string> unreachable,
                       std::map<std::string, std::string> interpreters = {},
                       std::optional<std::string> zlib = std::nullopt) {
  MachineSources sources;
  sources.platform = specs::Platform::linux_x86_64;
  sources.reach = [unreachable](const std::vector<std::string>& urls) {
    std::map<std::string, net::HostReachability> answers;
    for (const auto& url : urls) {
      const auto host = net::reachability_host(url);
      if (host.empty()) continue;
      const bool down = unreachable.contains(host);
      answers[host] = {.host = host,
                       .reachable = !down,
                       .reason = down ? "Could not resolve host: " + host : "",
                       .cached = false};
    }
    return answers;
  };
  // minor ("3.11") -> version the interpreter says it is.
  sources.interpreter =
      [interpreters](const specs::Version& version) -> std::optional<python::MachineInterpreter> {
    const auto it = interpreters.find(fmt::format("{}.{}", version.major(), version.minor()));
    if (it == interpreters.end()) return std::nullopt;
    return python::MachineInterpreter{
        .path = "/machine/python" + it->first + "/bin/python" + it->first,
        .version = specs::Version::parse(it->second).value(),
        .source = "pyenv"};
  };
  sources.zlib = [zlib]() -> std::optional<MachineLibrary> {
    if (!zlib) return std::nullopt;
    return MachineLibrary{.version = specs::Version::parse(*zlib).value(),
                          .path = "/lib/x86_64-linux-gnu/libz.so.1"};
  };
  return sources;
}

const std::set<std::string> kPypiOnly = {"github.com", "www.python.org", "zlib.net",
                                         "developer.download.nvidia.com"};

// What the solver chooses of `name` on linux-x86_64 with `inputs`.
const solve::Choice& chosen(const LockInputs& inputs, std::string_view name) {
  static std::deque<Solved> kept;  // the choices outlive the call
  auto solved = solve_platforms(db(), inputs);
  if (!solved) FAIL(solved.error().to_string());
  if (solved->failure) FAIL("no solution: " << solved->failure->second.summary);
  kept.push_back(*std::move(solved));
  const auto* choice = kept.back().solutions.at(specs::Platform::linux_x86_64).find(name);
  if (choice == nullptr) FAIL("no " << name << " in the solution");
  return *choice;
}

constexpr std::string_view kTorch21 = "framework: torch 2.1.*\n";

}  // namespace

TEST_CASE("on an open network the lock's Python is the newest allowed, as before",
          "[locking][obtainable]") {
  test::TempDir project;
  auto inputs = project_inputs(project, kTorch21);
  const auto before = chosen(inputs, "python").version;
  const auto notes =
      prefer_obtainable(db(), inputs, network({}, {{"3.11", "3.11.7"}}, "1.2.13")).value();
  CHECK(notes.empty());
  CHECK(inputs.external.empty());
  CHECK(inputs.manifest.external.empty());
  CHECK(chosen(inputs, "python").version == before);
  CHECK(before.minor() == 11);  // torch 2.1 allows Pythons before 3.12
}

TEST_CASE(
    "where only PyPI answers, the machine's interpreter of the newest allowed minor is "
    "provided by the machine, with a note",
    "[locking][obtainable]") {
  test::TempDir project;
  auto inputs = project_inputs(project, kTorch21);
  const auto newest = chosen(inputs, "python").version;
  const auto notes = prefer_obtainable(
      db(), inputs,
      network(kPypiOnly, {{"3.10", "3.10.13"}, {"3.11", "3.11.7"}, {"3.12", "3.12.1"}}));
  REQUIRE(notes.ok());
  REQUIRE(notes->size() == 1);
  CHECK_THAT(notes->front(),
             StartsWith("python 3.11.7 is this machine's /machine/python3.11/bin/python3.11: "
                        "github.com and www.python.org are not reachable, so no CPython 3.11 can "
                        "be downloaded; on a machine that reaches them, `envkit lock --refresh` "
                        "takes python-build-standalone's " +
                        newest.original()));
  const auto& python = chosen(inputs, "python");
  CHECK(python.version.original() == "3.11.7");
  CHECK(python.external.has_value());
  // Recorded as `external: {python: PATH}` would be: install makes a venv of that interpreter.
  const auto& given = inputs.manifest.external.at("python");
  REQUIRE(std::holds_alternative<manifest::ExternalPath>(given));
  CHECK(std::get<manifest::ExternalPath>(given).path == "/machine/python3.11/bin/python3.11");
}

TEST_CASE("the machine's minor is looked for within `requires: python`", "[locking][obtainable]") {
  test::TempDir project;
  auto inputs = project_inputs(project, "framework: torch 2.1.*\nrequires: {python: \"3.10.*\"}\n");
  const auto notes = prefer_obtainable(
      db(), inputs, network(kPypiOnly, {{"3.10", "3.10.13"}, {"3.11", "3.11.7"}}));
  REQUIRE(notes.ok());
  CHECK(chosen(inputs, "python").version.original() == "3.10.13");
  REQUIRE(notes->size() == 1);
  CHECK_THAT(notes->front(), StartsWith("python 3.10.13 is this machine's"));
}

TEST_CASE("a newer minor than the project allows is never the machine's choice",
          "[locking][obtainable]") {
  test::TempDir project;
  auto inputs = project_inputs(project, kTorch21);
  const auto before = chosen(inputs, "python").version;
  const auto notes =
      prefer_obtainable(db(), inputs, network(kPypiOnly, {{"3.12", "3.12.1"}, {"3.13", "3.13.0"}}));
  REQUIRE(notes.ok());
  // Nothing this machine has or can download fits: the lock is as before (and `lock` warns).
  CHECK(notes->empty());
  CHECK(inputs.external.empty());
  CHECK(chosen(inputs, "python").version == before);
}

TEST_CASE(
    "an older allowed minor the machine has is taken, and the note says the newest minor "
    "could not be downloaded",
    "[locking][obtainable]") {
  test::TempDir project;
  auto inputs = project_inputs(project, kTorch21);
  const auto notes = prefer_obtainable(db(), inputs, network(kPypiOnly, {{"3.9", "3.9.18"}}));
  REQUIRE(notes.ok());
  CHECK(chosen(inputs, "python").version.original() == "3.9.18");
  REQUIRE(notes->size() == 1);
  CHECK_THAT(notes->front(), Contains("so no CPython 3.11 can be downloaded, and 3.9 is the "
                                      "newest minor envkit.yaml allows that it has"));
}

TEST_CASE("envkit.yaml's own `external: {python: ...}` is never replaced",
          "[locking][obtainable]") {
  test::TempDir project;
  auto inputs = project_inputs(project, "framework: torch 2.1.*\nexternal: {python: \"3.10.4\"}\n");
  const auto notes = prefer_obtainable(db(), inputs, network(kPypiOnly, {{"3.11", "3.11.7"}}));
  REQUIRE(notes.ok());
  CHECK(notes->empty());
  CHECK(chosen(inputs, "python").version.original() == "3.10.4");
  CHECK(std::holds_alternative<specs::Version>(inputs.manifest.external.at("python")));
}

TEST_CASE("a mirror that answers makes every download reachable", "[locking][obtainable]") {
  test::TempDir project;
  auto inputs = project_inputs(project, kTorch21);
  const auto before = chosen(inputs, "python").version;
  auto sources = network(kPypiOnly, {{"3.11", "3.11.7"}}, "1.2.13");
  sources.mirrors = {"http://mirror.lan:8080"};
  const auto notes = prefer_obtainable(db(), inputs, sources);
  REQUIRE(notes.ok());
  CHECK(notes->empty());
  CHECK(inputs.external.empty());
  CHECK(chosen(inputs, "python").version == before);
}

TEST_CASE("a lock for several platforms, or for a fleet, takes nothing from this machine",
          "[locking][obtainable]") {
  test::TempDir project;
  SECTION("several platforms") {
    auto inputs = project_inputs(
        project, "framework: torch 2.1.*\nplatforms: [linux-x86_64, linux-aarch64]\n");
    const auto notes =
        prefer_obtainable(db(), inputs, network(kPypiOnly, {{"3.11", "3.11.7"}}, "1.2.13"));
    REQUIRE(notes.ok());
    CHECK(inputs.external.empty());
  }
  SECTION("envkit.yaml's `system:` describes the machines") {
    auto inputs = project_inputs(project, "framework: torch 2.1.*\nsystem: {driver: 535.104.05}\n");
    const auto notes =
        prefer_obtainable(db(), inputs, network(kPypiOnly, {{"3.11", "3.11.7"}}, "1.2.13"));
    REQUIRE(notes.ok());
    CHECK(notes->empty());
    CHECK(inputs.external.empty());
  }
}

TEST_CASE("a source tarball the machine reaches is taken where it has no interpreter to use",
          "[locking][obtainable]") {
  test::TempDir project;
  auto inputs = project_inputs(project, kTorch21);
  // python.org answers, GitHub does not: only releases with a source tarball can be had.
  const std::set<std::string> no_github = {"github.com", "zlib.net"};
  auto notes = prefer_obtainable(db(), inputs, network(no_github));
  REQUIRE(notes.ok());
  const auto& python = chosen(inputs, "python");
  CHECK_FALSE(python.external.has_value());
  // The newest 3.11 python-build-standalone has no archive of, in the database: python.org's.
  CHECK(python.version.original() == "3.11.2");
  REQUIRE(notes->size() == 1);
  CHECK_THAT(notes->front(),
             StartsWith("python 3.11.2 is the newest CPython this machine can download (from "
                        "www.python.org), built from source at install: github.com is not "
                        "reachable"));

  SECTION("but an interpreter of the machine beats building one") {
    test::TempDir other;
    auto with_interpreter = project_inputs(other, kTorch21);
    notes = prefer_obtainable(db(), with_interpreter, network(no_github, {{"3.11", "3.11.7"}}));
    REQUIRE(notes.ok());
    CHECK(chosen(with_interpreter, "python").version.original() == "3.11.7");
    REQUIRE(notes->size() == 1);
    CHECK_THAT(notes->front(), Contains("so no prebuilt CPython 3.11 can be downloaded"));
  }
}

TEST_CASE(
    "where the closure does not resolve for the machine's Python, the walk takes its next "
    "older minor, and the note is that one's",
    "[locking][obtainable]") {
  test::TempDir project;
  project.write("requirements.txt", "torchdata==0.9.0\n");
  // torch 2.13.0 allows Python 3.10 to 3.14; torchdata 0.9.0 has wheels up to cp312.
  auto inputs = project_inputs(project,
                               "framework: torch ==2.13.0\n"
                               "indexes: [https://pypi.org/simple]\n"
                               "python-requirements: requirements.txt\n");
  const auto notes =
      prefer_obtainable(db(), inputs, network(kPypiOnly, {{"3.14", "3.14.0"}, {"3.12", "3.12.1"}}));
  REQUIRE(notes.ok());
  inputs.notes = *notes;  // as the command line keeps them
  REQUIRE(inputs.machine_pythons.size() == 2);
  CHECK(chosen(inputs, "python").version.original() == "3.14.0");

  std::vector<std::string> asked;
  const ResolverFactory factory = [&asked]() -> Result<ClosureResolver> {
    return ClosureResolver(
        [&asked](const python::ResolveRequest& request,
                 const python::ResolveTarget& target) -> Result<python::Closure> {
          const auto tag = fmt::format("cp{}{}", target.python.major(), target.python.minor());
          const auto file = "torch-2.13.0-" + tag + "-" + tag + "-manylinux_2_28_x86_64.whl";
          python::Closure closure{.wheels = {{.name = "torch",
                                              .version = "2.13.0",
                                              .url = "https://files.example/" + file,
                                              .sha256 = core::sha256_hex(file)}},
                                  .resolver = "fake uv"};
          if (request.no_deps) return closure;
          asked.push_back(target.python.original());
          if (target.python.minor() <= 12) return closure;
          Error error = Error::failed(std::string(python::kUnresolvable));
          error.because("uv: No solution found when resolving dependencies");
          error.because(fmt::format(
              "uv: Because torchdata==0.9.0 has no wheels with a matching Python ABI tag (e.g., "
              "`{}`) and you require torchdata==0.9.0, we can conclude that your requirements "
              "are unsatisfiable.",
              tag));
          return error.because("envkit resolved for " + target.description());
        });
  };
  auto attempt = solve_lock(db(), inputs, nullptr, factory);
  REQUIRE(attempt.ok());
  REQUIRE(attempt->lockfile);
  CHECK(asked == std::vector<std::string>{"3.14.0", "3.12.1"});
  const auto& packages = attempt->lockfile->platforms.front().packages;
  const auto python = std::find_if(packages.begin(), packages.end(),
                                   [](const lock::LockedPackage& p) { return p.name == "python"; });
  REQUIRE(python != packages.end());
  CHECK(python->version.original() == "3.12.1");
  CHECK(python->external == "/machine/python3.12/bin/python3.12");
  const auto printed = obtainable_notes(inputs, *attempt->lockfile);
  REQUIRE(printed.size() == 1);
  CHECK_THAT(printed.front(),
             StartsWith("python 3.12.1 is this machine's /machine/python3.12/bin/python3.12: "
                        "github.com is not reachable, so no CPython 3.14 can be downloaded, and "
                        "the closure does not resolve for its newer Python"));
}

TEST_CASE("zlib is the machine's where zlib.net does not answer", "[locking][obtainable]") {
  test::TempDir project;
  // cuDNN 8.9 needs zlib.
  auto inputs = project_inputs(project, "requires: {cudnn: \"8.9.*\"}\n");
  const auto chosen_zlib = chosen(inputs, "zlib").version;
  const auto notes = prefer_obtainable(db(), inputs, network(kPypiOnly, {}, "1.2.13"));
  REQUIRE(notes.ok());
  REQUIRE(notes->size() == 1);
  CHECK(notes->front() ==
        "zlib 1.2.13 is this machine's /lib/x86_64-linux-gnu/libz.so.1: zlib.net "
        "is not reachable, so zlib " +
            chosen_zlib.original() +
            "'s source cannot be downloaded; on a machine that reaches it, "
            "`envkit lock --refresh` builds zlib " +
            chosen_zlib.original() + " from source");
  const auto& zlib = chosen(inputs, "zlib");
  CHECK(zlib.version.original() == "1.2.13");
  CHECK(zlib.external.has_value());
  CHECK(std::get<specs::Version>(inputs.manifest.external.at("zlib")).original() == "1.2.13");

  SECTION("a machine without a zlib keeps the source") {
    test::TempDir other;
    auto without = project_inputs(other, "requires: {cudnn: \"8.9.*\"}\n");
    const auto none = prefer_obtainable(db(), without, network(kPypiOnly));
    REQUIRE(none.ok());
    CHECK(none->empty());
    CHECK(without.external.empty());
  }
}

TEST_CASE("the lock's unreachable sources are named, each with its host and why, with the fixes",
          "[locking][obtainable]") {
  using specs::Artifact;
  using specs::ArtifactKind;
  const auto artifact = [](std::string component, ArtifactKind kind, std::string url) {
    return Artifact{.component = std::move(component),
                    .kind = kind,
                    .url = std::move(url),
                    .sha256 = std::string(64, 'a')};
  };
  lock::Lockfile lockfile;
  lock::PlatformLock platform{.platform = specs::Platform::linux_x86_64};
  // cuda_cudart has its wheel on PyPI: install falls back to it. cuda_nvcc has none.
  platform.packages.push_back(
      {.name = "cuda",
       .version = specs::Version::parse("12.1.1").value(),
       .artifacts = {
           artifact("cuda_cudart", ArtifactKind::archive,
                    "https://developer.download.nvidia.com/cuda_cudart-12.1.105-archive.tar.xz"),
           artifact("cuda_cudart", ArtifactKind::wheel,
                    "https://files.pythonhosted.org/nvidia_cuda_runtime_cu12-12.1.105.whl"),
           artifact("cuda_nvcc", ArtifactKind::archive,
                    "https://developer.download.nvidia.com/cuda_nvcc-12.1.105-archive.tar.xz")}});
  platform.packages.push_back({.name = "python",
                               .version = specs::Version::parse("3.11.7").value(),
                               .external = "/usr/bin/python3.11"});
  platform.packages.push_back(
      {.name = "zlib",
       .version = specs::Version::parse("1.3.1").value(),
       .artifacts = {
           artifact("zlib", ArtifactKind::source, "http://zlib.net/fossils/zlib-1.3.1.tar.gz")}});
  lockfile.platforms.push_back(platform);

  const auto warning = unreachable_sources(lockfile, network(kPypiOnly));
  REQUIRE(warning);
  CHECK(*warning ==
        "2 locked artifacts are only on hosts this machine does not reach, so `envkit install` "
        "cannot download them here:\n"
        "  cuda 12.1.1 (cuda_nvcc, archive): "
        "https://developer.download.nvidia.com/cuda_nvcc-12.1.105-archive.tar.xz "
        "(developer.download.nvidia.com: Could not resolve host: developer.download.nvidia.com)\n"
        "  zlib 1.3.1: http://zlib.net/fossils/zlib-1.3.1.tar.gz (zlib.net: Could not resolve "
        "host: zlib.net)\n"
        "  fixes: a mirror that holds them (`envkit install --mirror URL`, or `mirrors:` in "
        ".envkit/config.yaml), made by `envkit mirror --out DIR` on a machine that reaches their "
        "hosts; or what this machine already has, declared under `external:` in envkit.yaml "
        "(docs/manifest.md)");

  SECTION("an also-at URL on a host that answers is enough") {
    auto& zlib = lockfile.platforms.front().packages.back().artifacts.front();
    zlib.also_at = {"https://deb.debian.org/debian/pool/main/z/zlib/zlib_1.3.1.orig.tar.gz"};
    const auto fewer = unreachable_sources(lockfile, network(kPypiOnly));
    REQUIRE(fewer);
    CHECK_THAT(*fewer, StartsWith("1 locked artifact is only on hosts"));
    CHECK_THAT(*fewer, !Contains("zlib"));
  }
  SECTION("a mirror that answers holds them all") {
    auto sources = network(kPypiOnly);
    sources.mirrors = {"http://mirror.lan:8080"};
    CHECK_FALSE(unreachable_sources(lockfile, sources));
  }
  SECTION("hosts nobody asked (offline, nothing kept) are not warned about") {
    auto sources = network(kPypiOnly);
    sources.reach = [](const std::vector<std::string>&) {
      return std::map<std::string, net::HostReachability>();
    };
    CHECK_FALSE(unreachable_sources(lockfile, sources));
  }
}

TEST_CASE("an artifact's URLs are tried as install tries them: mirrors, url, also-at",
          "[locking][obtainable]") {
  const specs::Artifact artifact{
      .url = "https://www.python.org/ftp/python/3.9.2/Python-3.9.2.tar.xz",
      .sha256 = std::string(64, 'b'),
      .also_at = {
          "https://deb.debian.org/debian/pool/main/p/python3.9/python3.9_3.9.2.orig.tar.xz"}};
  CHECK(artifact_urls(artifact, {"http://mirror.lan"}) ==
        std::vector<std::string>{
            "http://mirror.lan/www.python.org/ftp/python/3.9.2/Python-3.9.2.tar.xz",
            "https://www.python.org/ftp/python/3.9.2/Python-3.9.2.tar.xz",
            "https://deb.debian.org/debian/pool/main/p/python3.9/python3.9_3.9.2.orig.tar.xz"});
}

}  // namespace envkit::locking::obtainable_test
