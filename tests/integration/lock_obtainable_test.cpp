// `envkit lock` on a network that does not reach every download: a recipe database whose
// URLs this test controls (a local nginx that answers, a closed 127.0.0.1 port that does
// not), the machine's interpreters given by ENVKIT_PYTHON_SEARCH_PATH. Among the Pythons a
// project allows the lock prefers one this machine can obtain; what it cannot download is
// named in one warning (docs/python.md#which-python). The live case locks examples/torch-cifar
// on this machine's real network (ENVKIT_LIVE_TESTS=1).
#include <dlfcn.h>
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <optional>
#include <regex>
#include <sstream>

#include "envkit/lock/lockfile.hpp"
#include "envkit/net/reachability.hpp"
#include "envkit/sys/fs.hpp"
#include "support/envkit_runner.hpp"
#include "support/http_server.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

namespace envkit::test::lock_obtainable {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

const std::string kHash(64, 'a');

// A recipe database of three CPythons, zlib and a two-component CUDA whose files are at
// `reachable` (a server that answers) or `unreachable` (a closed port), as each says.
struct Fixture {
  TempDir work;
  StaticHttpServer server{work.path() / "served"};
  std::string down = fmt::format("http://127.0.0.1:{}", free_port());
  fs::path recipes = work.path() / "recipes";
  fs::path project = work.path() / "project";
  fs::path interpreters = work.path() / "machine-bin";

  // `python_up`: the CPython archives are on the server; `zlib_up`, `cuda_up`: likewise.
  Fixture(bool python_up, bool zlib_up, bool cuda_up) {
    fs::create_directories(work.path() / "served");
    fs::create_directories(project);
    fs::create_directories(interpreters);
    const auto at = [&](bool up, std::string_view file) {
      return up ? server.url("/" + std::string(file)) : fmt::format("{}/{}", down, file);
    };
    work.write("recipes/python.yaml",
               "name: python\nversions:\n"
               "  - version: \"3.10.9\"\n    builds:\n      - platforms: [linux-x86_64]\n"
               "  - version: \"3.11.5\"\n    builds:\n      - platforms: [linux-x86_64]\n"
               "  - version: \"3.12.3\"\n    builds:\n      - platforms: [linux-x86_64]\n");
    for (const auto* version : {"3.10.9", "3.11.5", "3.12.3"}) {
      work.write(
          fmt::format("recipes/python/{}.yaml", version),
          fmt::format("version: \"{}\"\nartifacts:\n"
                      "  - platform: linux-x86_64\n    component: python\n"
                      "    kind: archive\n    format: tar.gz\n"
                      "    layout: python-standalone\n    url: {}\n    sha256: \"{}\"\n",
                      version, at(python_up, fmt::format("cpython-{}.tar.gz", version)), kHash));
    }
    work.write("recipes/zlib.yaml",
               "name: zlib\nversions:\n"
               "  - version: \"1.3.1\"\n    builds:\n      - platforms: [linux-x86_64]\n");
    work.write("recipes/zlib/1.3.1.yaml",
               fmt::format("version: \"1.3.1\"\nartifacts:\n"
                           "  - platform: linux-x86_64\n    component: zlib\n    kind: source\n"
                           "    format: tar.gz\n    layout: source-tree\n    url: {}\n"
                           "    sha256: \"{}\"\n",
                           at(zlib_up, "zlib-1.3.1.tar.gz"), kHash));
    work.write("recipes/cuda.yaml",
               "name: cuda\ndefault-components: [cuda_cudart, cuda_nvcc]\nversions:\n"
               "  - version: \"12.1.1\"\n    builds:\n      - platforms: [linux-x86_64]\n");
    // cuda_cudart's wheel is on the server whatever the archives do: install falls back to it.
    work.write(
        "recipes/cuda/12.1.1.yaml",
        fmt::format(
            "version: \"12.1.1\"\nartifacts:\n"
            "  - platform: linux-x86_64\n    component: cuda_cudart\n    kind: archive\n"
            "    format: tar.xz\n    layout: nvidia-redist\n    url: {}\n"
            "    sha256: \"{}\"\n"
            "  - platform: linux-x86_64\n    component: cuda_cudart\n    kind: wheel\n"
            "    format: whl\n    layout: nvidia-wheel\n    wheel-root: nvidia/cuda_runtime\n"
            "    url: {}\n    sha256: \"{}\"\n"
            "  - platform: linux-x86_64\n    component: cuda_nvcc\n    kind: archive\n"
            "    format: tar.xz\n    layout: nvidia-redist\n    url: {}\n"
            "    sha256: \"{}\"\n",
            at(cuda_up, "cuda_cudart-12.1.105-archive.tar.xz"), kHash,
            at(true, "nvidia_cuda_runtime_cu12-12.1.105-py3-none-manylinux1_x86_64.whl"),
            std::string(64, 'b'), at(cuda_up, "cuda_nvcc-12.1.105-archive.tar.xz"),
            std::string(64, 'c')));
  }

  // A fake interpreter of the machine: answers its version as Python would.
  void machine_has(std::string_view name, std::string_view version) const {
    const auto path = work.write(fmt::format("machine-bin/{}", name),
                                 fmt::format("#!/bin/sh\necho {}\n", version));
    fs::permissions(path, fs::perms::owner_all);
  }

  void manifest(std::string_view text) const { work.write("project/envkit.yaml", text); }

  [[nodiscard]] sys::ProcessOutput lock(
      std::vector<std::string> extra = {},
      std::map<std::string, std::optional<std::string>> env = {}) const {
    std::vector<std::string> args = {"--recipes",   recipes.string(),
                                     "-C",          project.string(),
                                     "--cache-dir", (work.path() / "cache").string(),
                                     "lock"};
    args.insert(args.end(), extra.begin(), extra.end());
    env.emplace("ENVKIT_ASSUME_REACHABLE", std::nullopt);
    env.emplace("ENVKIT_PYTHON_SEARCH_PATH", interpreters.string());
    return run_envkit({.args = args, .env = env});
  }

  [[nodiscard]] lock::LockedPackage locked(std::string_view name) const {
    auto loaded = lock::load(project / "envkit.lock");
    if (!loaded) FAIL(loaded.error().to_string());
    for (const auto& package : loaded->platforms.front().packages) {
      if (package.name == name) return package;
    }
    FAIL("envkit.lock has no " << name);
    throw std::logic_error("unreachable");
  }
};

// The machine's own zlib as envkit reads it; nullopt on a machine without one.
std::optional<std::string> machine_zlib_version() {
  void* handle = ::dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return std::nullopt;
  using VersionFunction = const char* (*)();
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast)
  const auto version = reinterpret_cast<VersionFunction>(::dlsym(handle, "zlibVersion"));
  return version == nullptr ? std::nullopt : std::optional<std::string>(version());
}

bool nginx_missing() {
  if (StaticHttpServer::available()) return false;
  skip_test(SkipKind::setup_should_provide, "nginx is not installed (scripts/setup installs it)");
  return true;
}

}  // namespace

TEST_CASE(
    "lock: where no CPython can be downloaded, the machine's interpreter of the newest "
    "allowed minor is locked as provided by the machine, with a note",
    "[lock][obtainable]") {
  if (nginx_missing()) return;
  const Fixture fixture(/*python_up=*/false, /*zlib_up=*/false, /*cuda_up=*/true);
  fixture.manifest("requires: {python: \"<3.12\", zlib: \"\"}\n");
  fixture.machine_has("python3.11", "3.11.7");
  fixture.machine_has("python3.12", "3.12.1");
  fixture.machine_has("python3.10", "3.10.13");
  const auto ran = fixture.lock();
  INFO(ran.err);
  REQUIRE(ran.exit_code == 0);
  const auto interpreter = (fixture.interpreters / "python3.11").string();
  const auto down_host = fixture.down.substr(std::string_view("http://").size());
  CHECK_THAT(ran.err,
             Contains(fmt::format("note: python 3.11.7 is this machine's {}: {} is not reachable, "
                                  "so no CPython 3.11 can be downloaded; on a machine that "
                                  "reaches it, `envkit lock --refresh` takes "
                                  "python-build-standalone's 3.11.5",
                                  interpreter, down_host)));
  const auto python = fixture.locked("python");
  CHECK(python.version.original() == "3.11.7");
  CHECK(python.external == interpreter);
  CHECK(python.artifacts.empty());
  CHECK_THAT(ran.err, Contains("python 3.11.7 (provided by the machine)"));

  // zlib: the machine's, when it has one (its version from libz.so.1).
  if (const auto zlib = machine_zlib_version()) {
    CHECK_THAT(ran.err, Contains(fmt::format("note: zlib {} is this machine's ", *zlib)));
    CHECK_THAT(ran.err, Contains(fmt::format("so zlib 1.3.1's source cannot be downloaded")));
    CHECK(fixture.locked("zlib").external == *zlib);
    // Nothing is left that install could not download here: no warning.
    CHECK_THAT(ran.err, !Contains("hosts this machine does not reach"));
  }

  SECTION("`envkit lock --offline` asks nothing and takes what was kept") {
    const auto offline = fixture.lock({"--offline"});
    INFO(offline.err);
    REQUIRE(offline.exit_code == 0);
    CHECK(fixture.locked("python").external == interpreter);
  }
  SECTION("with nothing kept, --offline assumes nothing: the newest allowed, no warning") {
    fs::remove_all(fixture.work.path() / "cache" / "net");
    const auto offline = fixture.lock({"--offline"});
    INFO(offline.err);
    REQUIRE(offline.exit_code == 0);
    CHECK(fixture.locked("python").version.original() == "3.11.5");
    CHECK_FALSE(fixture.locked("python").external);
    CHECK_THAT(offline.err, !Contains("note: python"));
  }
}

TEST_CASE("lock: with every download reachable, the newest allowed Python is locked as before",
          "[lock][obtainable]") {
  if (nginx_missing()) return;
  const Fixture fixture(true, true, true);
  fixture.manifest("requires: {python: \"<3.12\", zlib: \"\"}\n");
  fixture.machine_has("python3.11", "3.11.7");
  const auto ran = fixture.lock();
  INFO(ran.err);
  REQUIRE(ran.exit_code == 0);
  const auto python = fixture.locked("python");
  CHECK(python.version.original() == "3.11.5");
  CHECK_FALSE(python.external);
  REQUIRE(python.artifacts.size() == 1);
  CHECK_THAT(python.artifacts.front().url, StartsWith(fixture.server.url("/")));
  CHECK_FALSE(fixture.locked("zlib").external);
  CHECK_THAT(ran.err, !Contains("note:"));
  CHECK_THAT(ran.err, !Contains("does not reach"));

  SECTION("and a mirror that answers serves what the origin does not") {
    const Fixture closed(false, false, false);
    closed.manifest("requires: {python: \"<3.12\", zlib: \"\"}\n");
    closed.machine_has("python3.11", "3.11.7");
    const auto mirrored = closed.lock({}, {{"ENVKIT_MIRRORS", closed.server.url("/")}});
    INFO(mirrored.err);
    REQUIRE(mirrored.exit_code == 0);
    CHECK(closed.locked("python").version.original() == "3.11.5");
    CHECK_FALSE(closed.locked("python").external);
    CHECK_THAT(mirrored.err, !Contains("note:"));
    CHECK_THAT(mirrored.err, !Contains("does not reach"));
  }
}

TEST_CASE(
    "lock: the locked sources this machine cannot reach are named in one warning, each "
    "with its host, and the fixes",
    "[lock][obtainable]") {
  if (nginx_missing()) return;
  // No interpreter of an allowed minor, CUDA's archives down (cuda_cudart's wheel is up).
  const Fixture fixture(false, true, false);
  fixture.manifest("requires: {python: \"<3.12\", cuda: \"12.1.*\"}\n");
  fixture.machine_has("python3.12", "3.12.1");
  const auto ran = fixture.lock();
  INFO(ran.err);
  REQUIRE(ran.exit_code == 0);
  CHECK(fixture.locked("python").version.original() == "3.11.5");
  const auto host = fixture.down.substr(std::string_view("http://").size());
  const std::regex warning(
      "warning: 2 locked artifacts are only on hosts this machine does not reach, so `envkit "
      "install` cannot download them here:\n"
      "  cuda 12\\.1\\.1 \\(cuda_nvcc, archive\\): " +
      fixture.down + "/cuda_nvcc-12\\.1\\.105-archive\\.tar\\.xz \\(" + host +
      ": [^\n]+\\)\n"
      "  python 3\\.11\\.5: " +
      fixture.down + "/cpython-3\\.11\\.5\\.tar\\.gz \\(" + host +
      ": [^\n]+\\)\n"
      "  fixes: a mirror that holds them \\(`envkit install --mirror URL`, or `mirrors:` in "
      "\\.envkit/config\\.yaml\\), made by `envkit mirror --out DIR` on a machine that reaches "
      "their hosts; or what this machine already has, declared under `external:` in "
      "envkit\\.yaml \\(docs/manifest\\.md\\)\n");
  CHECK(std::regex_search(ran.err, warning));
  // cuda_cudart's archive is down too, but its wheel answers: not named.
  CHECK_THAT(ran.err, !Contains("cuda_cudart"));
}

TEST_CASE("lock: envkit.yaml's `external: {python: ...}` is kept whatever the network",
          "[lock][obtainable]") {
  if (nginx_missing()) return;
  const Fixture fixture(false, true, true);
  fixture.manifest("requires: {python: \"<3.12\"}\nexternal: {python: \"3.10.4\"}\n");
  fixture.machine_has("python3.11", "3.11.7");
  const auto ran = fixture.lock();
  INFO(ran.err);
  REQUIRE(ran.exit_code == 0);
  CHECK(fixture.locked("python").external == "3.10.4");
  CHECK_THAT(ran.err, !Contains("note: python"));
}

TEST_CASE(
    "live: envkit init && envkit lock && envkit install of examples/torch-cifar on this network "
    "ends with a torch that loads its CUDA libraries from the prefix",
    "[lock][obtainable][live]") {
  if (live_tests_off("lock examples/torch-cifar against PyPI on this machine's network")) return;
  const auto github = net::check_reachability(
      {"https://github.com/", "https://www.python.org/", "http://zlib.net/"}, {});
  const bool open = github.at("github.com").reachable || github.at("www.python.org").reachable;
  if (open) {
    skip_test(SkipKind::expected,
              "this machine reaches github.com or www.python.org: it can download its Python");
    return;
  }
  TempDir work;
  const auto root = work.path() / "torch-cifar";
  fs::copy(source_dir() / "examples" / "torch-cifar", root, fs::copy_options::recursive);
  fs::remove(root / "envkit.yaml");
  fs::remove(root / "envkit.lock");
  const auto run = [&](std::vector<std::string> args) {
    return run_envkit(live_run(root, work.path() / "cache", std::move(args)));
  };
  const auto init = run({"init"});
  INFO(init.err);
  REQUIRE(init.exit_code == 0);
  const auto locked = run({"lock"});
  INFO(locked.err);
  REQUIRE(locked.exit_code == 0);
  WARN(locked.err);
  auto lockfile = lock::load(root / "envkit.lock");
  REQUIRE(lockfile);
  std::map<std::string, lock::LockedPackage> packages;
  for (const auto& package : lockfile->platforms.front().packages)
    packages.emplace(package.name, package);
  // torch 2.1 allows Pythons before 3.12: the machine's newest such minor, as provided.
  const auto& python = packages.at("python");
  REQUIRE(python.external);
  CHECK(python.version.minor() <= 11);
  CHECK_THAT(locked.err, Contains("note: python " + python.version.original() +
                                  " is this machine's " + *python.external));
  CHECK_THAT(locked.err, Contains("`envkit lock --refresh` takes python-build-standalone's"));
  if (!github.at("zlib.net").reachable && machine_zlib_version()) {
    CHECK(packages.at("zlib").external == machine_zlib_version());
    CHECK_THAT(locked.err, Contains("note: zlib " + *machine_zlib_version()));
  }
  // Nothing is left that install would not fall back from (NVIDIA's wheels are on PyPI).
  CHECK_THAT(locked.err, !Contains("hosts this machine does not reach"));

  // The issue's test: no edit of envkit.yaml, and the environment works.
  const auto installed = run({"install"});
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);
  WARN(installed.err);
  // torch imports, and the CUDA libraries it maps come from the prefix.
  const auto probed = run({"run", "--", "python", "-c",
                           "import torch, ctypes; torch.backends.cudnn.version()\n"
                           "print(torch.__version__)\n"
                           "[print('maps', l.split()[-1]) for l in open('/proc/self/maps') "
                           "if ('libcudnn' in l or 'libcublas' in l) and '/' in l]"});
  INFO(probed.err);
  REQUIRE(probed.exit_code == 0);
  WARN(probed.out);
  CHECK(probed.out.starts_with("2.1."));
  const auto prefix = fs::canonical(root / ".envkit" / "env");
  int mapped = 0;
  std::istringstream lines(probed.out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("maps ")) continue;
    ++mapped;
    CHECK_THAT(fs::canonical(line.substr(5)).string(), Contains(prefix.string()));
  }
  CHECK(mapped > 0);
}

}  // namespace envkit::test::lock_obtainable
