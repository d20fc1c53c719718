// The main path with the Python closure on, end to end, from the real binary:
// `envkit init` → `lock` → `install` with envkit's own Python → `run` →
// `doctor`; `mirror`, `export --oci` and `why` of locks that have a closure.
//
// Hermetic: the package index of tests/data/pyindex (or pyindex-today) on nginx
// as envkit's download mirror (ENVKIT_MIRRORS), resolved by envkit's uv, with a
// proxy on a closed port so that nothing reaches the real internet. The index
// holds no python-build-standalone archive and no NVIDIA archive: envkit's own
// Python is an archive in python-build-standalone's layout made from this
// machine's Debian python3.11 (python_archives.hpp), served by a second nginx
// and named by a copy of the recipe database; the CUDA toolkit and zlib are
// declared `external:` (the machine's), and cuDNN is the closure's
// nvidia-cudnn-cu12 wheel (the index's, given a real libcudnn.so.9 by the test).
//
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "closure_project.hpp"
#include "envkit/core/sha256.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/sys/fs.hpp"
#include "envkit/sys/process.hpp"
#include "install_support.hpp"
#include "isolated_project.hpp"
#include "python_archives.hpp"
#include "support/http_server.hpp"
#include "support/python_index.hpp"

namespace envkit::test::closure_e2e {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;
using nlohmann::json;

// The wheel of PyPI's torch 2.4.1 for CPython 3.11, and the cuDNN wheel it pins.
constexpr std::string_view kTorchWheel = "torch-2.4.1-cp311-cp311-manylinux1_x86_64.whl";
constexpr std::string_view kCudnnWheel =
    "nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl";

const lock::PlatformLock& linux_x86_64(const lock::Lockfile& lockfile) {
  for (const auto& platform : lockfile.platforms) {
    if (platform.platform == specs::Platform::linux_x86_64) return platform;
  }
  FAIL("the lock has no linux-x86_64");
  throw std::logic_error("unreachable");
}

const lock::LockedPackage& package_of(const lock::PlatformLock& platform, std::string_view name) {
  for (const auto& package : platform.packages) {
    if (package.name == name) return package;
  }
  FAIL("the lock has no " << name);
  throw std::logic_error("unreachable");
}

const lock::PythonWheel& wheel_of(const lock::PlatformLock& platform, std::string_view name) {
  REQUIRE(platform.python);
  for (const auto& wheel : platform.python->packages) {
    if (wheel.name == name) return wheel;
  }
  FAIL("the closure has no " << name);
  throw std::logic_error("unreachable");
}

std::string file_name(const std::string& url) {
  return url.substr(url.rfind('/') + 1);
}

ino_t inode_of(const fs::path& path) {
  struct stat status {};
  REQUIRE(::stat(path.c_str(), &status) == 0);
  return status.st_ino;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const auto end = text.find('\n', start);
    lines.push_back(text.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return lines;
}

// Whether `path` (which must exist) is `root` or inside it, both resolved.
bool inside(const fs::path& path, const fs::path& root) {
  const auto resolved = fs::canonical(path).string();
  const auto base = fs::canonical(root).string();
  return resolved == base || resolved.starts_with(base + "/");
}

// Where `envkit mirror --out DIR` keeps `url` (docs/install.md): DIR/HOST/PATH, the
// path's %-escapes decoded as a static server decodes a request.
fs::path mirrored(const fs::path& out, const std::string& url) {
  auto rest = url.substr(url.find("://") + 3);
  std::string decoded;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '%' && i + 2 < rest.size()) {
      decoded += static_cast<char>(std::stoi(rest.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      decoded += rest[i];
    }
  }
  return out / decoded;
}

// The machine's python3 (what `external: {python: system}` finds), where it is
// one the hermetic index has torch 2.4.1 for (CPython 3.11 or 3.12); else the
// skip is recorded and the test returns.
bool host_python_unfit(std::source_location where = std::source_location::current()) {
  if (host_python_missing(where)) return true;
  const auto said =
      sys::run_process({"python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"});
  const auto version = said && said->exit_code == 0 ? said->out : std::string();
  if (version == "3.11\n" || version == "3.12\n") return false;
  skip_test(SkipKind::expected,
            "python3 on PATH is not CPython 3.11 or 3.12 (it says `" + version +
                "`): the hermetic index has torch 2.4.1 for those only",
            where);
  return true;
}

// The `envkit doctor --json` findings.
std::vector<json> findings_of(const sys::ProcessOutput& doctor) {
  INFO(doctor.out + doctor.err);
  REQUIRE(json::accept(doctor.out));
  const auto report = json::parse(doctor.out);
  return {report.at("findings").begin(), report.at("findings").end()};
}

// The artifacts file of Python `version` in the recipe database at `recipes`:
// python/<version>.yaml (python-build-standalone), else pyenv/python/<version>.yaml
// (CPython's source), as the database reads them; nullopt when it has neither.
std::optional<fs::path> python_version_file(const fs::path& recipes, const std::string& version) {
  for (const auto& file : {recipes / "python" / (version + ".yaml"),
                           recipes / "pyenv" / "python" / (version + ".yaml")}) {
    if (fs::exists(file)) return file;
  }
  return std::nullopt;
}

// Gives the hermetic index's nvidia-cudnn-cu12 9.1.0.70 wheel (generated: its
// dist-info and an empty package only) what NVIDIA's wheel holds under
// `nvidia/cudnn`: lib/libcudnn.so.9 (a real shared library, built here with cc)
// and include/cudnn.h. Same URL; the index page gives the new sha256. Returns it.
std::string give_cudnn_wheel_its_library(const ClosureOnProject& fixture) {
  const auto original = std::find_if(
      fixture.files.begin(), fixture.files.end(),
      [](const MirroredFile& file) { return file.url.ends_with("/" + std::string(kCudnnWheel)); });
  REQUIRE(original != fixture.files.end());

  const auto scratch = fixture.project.dir.path() / "cudnn-wheel";
  fs::create_directories(scratch);
  fixture.project.write(scratch / "cudnn.c", "int cudnnGetVersion(void) { return 90100; }\n");
  const auto library = scratch / "libcudnn.so.9";
  const auto built = sys::run_process({"cc", "-shared", "-fPIC", "-Wl,-soname,libcudnn.so.9", "-o",
                                       library.string(), (scratch / "cudnn.c").string()});
  REQUIRE(built);
  INFO(built->err);
  REQUIRE(built->exit_code == 0);

  PythonIndex made(scratch / "index");
  const auto wheel =
      made.add({.name = "nvidia-cudnn-cu12",
                .version = "9.1.0.70",
                .requires_dist = {},
                .files = {{"nvidia/__init__.py", ""},
                          {"nvidia/cudnn/__init__.py", ""},
                          {"nvidia/cudnn/lib/libcudnn.so.9", sys::read_file(library).value()},
                          {"nvidia/cudnn/include/cudnn.h",
                           "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n"}},
                .tag = "py3-none-manylinux2014_x86_64",
                .requires_python = ">=3"});
  REQUIRE(wheel.filename().string() == kCudnnWheel);
  const auto target = mirrored(fixture.served, original->url);
  fs::copy_file(wheel, target, fs::copy_options::overwrite_existing);
  const auto sha256 = PythonIndex::sha256_of(target);

  const auto page = fixture.served / "pypi.org" / "simple" / "nvidia-cudnn-cu12" / "index.html";
  auto text = test::read_text(page);
  const auto at = text.find("#sha256=" + original->sha256);
  REQUIRE(at != std::string::npos);
  text.replace(at + 8, original->sha256.size(), sha256);
  fixture.project.write(page, text);
  return sha256;
}

}  // namespace

TEST_CASE(
    "torch 2.4.1 with the closure on: init, lock, install with envkit's own Python, run, "
    "doctor",
    "[closure][python][install][slow]") {
  const auto* archives = python_archives();
  if (archives == nullptr || program_missing("cc")) return;
  ClosureOnProject fixture;
  if (fixture.skip(pyindex_descriptions(test_data_dir()))) return;
  const StaticHttpServer python_server(archives->served);

  // The recipe database, but for the Python the machine's archive is: its artifact
  // for linux-x86_64 is that archive, served by nginx.
  fixture.recipes = fixture.project.dir.path() / "recipes";
  fs::copy(source_dir() / "recipes", fixture.recipes, fs::copy_options::recursive);
  const auto version_file = python_version_file(fixture.recipes, archives->version);
  if (!version_file) {
    skip_test(SkipKind::expected, "the recipe database has no Python " + archives->version +
                                      " (the version of " + kInterpreter.string() + ")");
    return;
  }
  const auto archive_url = python_server.url("/" + archives->good.file);
  fixture.project.write(*version_file,
                        "version: \"" + archives->version +
                            "\"\n"
                            "artifacts:\n"
                            "  - platform: linux-x86_64\n"
                            "    component: python\n"
                            "    kind: archive\n"
                            "    format: tar.gz\n"
                            "    layout: python-standalone\n"
                            "    url: " +
                            archive_url + "\n    sha256: \"" + archives->good.sha256 +
                            "\"\n    size: " + std::to_string(archives->good.size) + "\n");
  const auto cudnn_sha256 = give_cudnn_wheel_its_library(fixture);

  // envkit init: the framework from requirements.txt, the Python the archive is.
  fixture.write("requirements.txt", "torch==2.4.1\n");
  const auto init = fixture.envkit({"init", "--python", archives->version});
  INFO(init.out + init.err);
  REQUIRE(init.exit_code == 0);
  const auto manifest = test::read_text(fixture.project.root / "envkit.yaml");
  CHECK_THAT(manifest, Contains("framework: torch ==2.4.1"));
  // The index serves no NVIDIA archives (CUDA's toolkit is not all in wheels) and no
  // zlib source: the machine provides them. cuDNN is the closure's wheel, which
  // torch 2.4.1 pins (external cudnn 9.1.0.70 does not lock: see the case below).
  fixture.write("envkit.yaml",
                manifest +
                    "\n# The hermetic index serves no NVIDIA archives and no zlib source: the "
                    "machine provides them.\n"
                    "external: {cuda: \"12.1.1\", zlib: \"1.2.13\"}\n");

  // envkit lock: the closure for the archive's Python, whose artifact is the served archive.
  const auto lockfile = fixture.locked();
  const auto& platform = linux_x86_64(lockfile);
  const auto& python = package_of(platform, "python");
  CHECK(python.version.original() == archives->version);
  CHECK_FALSE(python.external.has_value());
  REQUIRE(python.artifacts.size() == 1);
  CHECK(python.artifacts[0].url == archive_url);
  CHECK(python.artifacts[0].sha256 == archives->good.sha256);
  CHECK(python.artifacts[0].layout == specs::Layout::python_standalone);
  CHECK(package_of(platform, "cuda").external.has_value());
  CHECK(package_of(platform, "torch").version.original() == "2.4.1");
  REQUIRE(platform.python);
  CHECK(platform.python->python == archives->version);
  CHECK(file_name(wheel_of(platform, "torch").url) == kTorchWheel);
  CHECK(wheel_of(platform, "torch").version == "2.4.1");
  const auto& cudnn_wheel = wheel_of(platform, "nvidia-cudnn-cu12");
  CHECK(cudnn_wheel.provides == "cudnn");
  CHECK(cudnn_wheel.sha256 == cudnn_sha256);
  const auto& cudnn = package_of(platform, "cudnn");
  CHECK(cudnn.version.original() == "9.1.0.70");
  REQUIRE(cudnn.artifacts.size() == 1);
  CHECK(cudnn.artifacts[0].url == cudnn_wheel.url);

  // envkit install: the archive unpacked as the prefix's Python, the closure in it.
  const auto installed = fixture.envkit({"install"});
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);
  CHECK_THAT(installed.err, Contains("python " + archives->version + " (archive)"));
  CHECK_THAT(installed.err,
             Contains(std::to_string(platform.python->packages.size()) + " Python packages"));
  CHECK_THAT(installed.err, !Contains("cannot import"));

  // envkit run: torch imports from the prefix, with the prefix's own interpreter.
  const auto prefix = fixture.project.prefix();
  const auto ran = fixture.envkit(
      {"run", "--", "python", "-c",
       "import torch, sys, os, nvidia.cudnn; print(torch.__file__); print(sys.prefix); "
       "print(os.path.realpath(sys.executable)); print(sys.version.split()[0]); "
       "print(torch.__version__); print(os.path.dirname(nvidia.cudnn.__file__))"});
  INFO(ran.out + ran.err);
  REQUIRE(ran.exit_code == 0);
  const auto said = lines_of(ran.out);
  REQUIRE(said.size() == 6);
  CHECK_THAT(said[0], EndsWith("/torch/__init__.py"));
  CHECK(inside(said[0], prefix));
  CHECK(fs::canonical(said[1]) == fs::canonical(prefix));
  CHECK(inside(said[2], prefix));
  CHECK_THAT(said[2], !StartsWith("/usr/"));
  CHECK(said[3] == archives->version);
  CHECK(said[4] == "2.4.1");
  // One cuDNN: the framework's wheel and the prefix's lib/ are one file.
  CHECK(inside(said[5], prefix));
  REQUIRE(fs::exists(prefix / "lib" / "libcudnn.so.9"));
  CHECK(inode_of(fs::path(said[5]) / "lib" / "libcudnn.so.9") ==
        inode_of(prefix / "lib" / "libcudnn.so.9"));

  // envkit doctor: no driver here (an error), every installed file as its receipt says.
  const auto doctor = fixture.envkit({"doctor", "--json"});
  INFO(doctor.out + doctor.err);
  CHECK(doctor.exit_code == 1);
  const auto findings = findings_of(doctor);
  std::set<std::string> errors;
  bool receipts_match = false;
  for (const auto& finding : findings) {
    const auto id = finding.at("id").get<std::string>();
    const auto severity = finding.at("severity").get<std::string>();
    if (severity == "error") errors.insert(id);
    if (id == "prefix" && severity == "ok" &&
        finding.at("message").get<std::string>().find("match the lock and the receipts") !=
            std::string::npos)
      receipts_match = true;
    CHECK_FALSE((id == "prefix" && severity != "ok"));
    CHECK_FALSE((id == "libraries" && severity == "error"));
    CHECK_FALSE((id == "cache" && severity != "ok"));
  }
  CHECK(receipts_match);
  CHECK(errors.count("driver") == 1);
  errors.erase("driver");
  errors.erase("gpu-arch");
  CHECK(errors.empty());
}

TEST_CASE("torch 2.4.1 with the machine's CUDA 12.1.1 and cuDNN 9.1.0.70 locks with its closure",
          "[closure][lock]") {
  // An `external:` cuDNN version has a cuda11 and a cuda12 build in the database; the
  // machine's is the one that fits its CUDA (it once took the first, cuda11, and failed).
  ClosureOnProject fixture;
  if (fixture.skip(pyindex_descriptions(test_data_dir()))) return;
  fixture.write("envkit.yaml",
                "framework: torch ==2.4.1\nrequires: {python: \"3.11\"}\n"
                "external: {cuda: \"12.1.1\", cudnn: \"9.1.0.70\", zlib: \"1.2.13\"}\n"
                "system: {driver: \"550.54.15\"}\n");
  const auto ran = fixture.envkit({"lock"});
  INFO(ran.err);
  CHECK_THAT(ran.err, !Contains("requires cuda <12,>=11"));
  REQUIRE(ran.exit_code == 0);
  const auto lockfile = lock::load(fixture.project.root / "envkit.lock");
  REQUIRE(lockfile);
  const auto& platform = linux_x86_64(*lockfile);
  CHECK(package_of(platform, "cudnn").external.has_value());
  CHECK(package_of(platform, "cudnn").version.original() == "9.1.0.70");
  CHECK(file_name(wheel_of(platform, "torch").url) == kTorchWheel);
}

TEST_CASE(
    "envkit mirror of a lock with a closure holds every closure file, and an install from it "
    "needs nothing else",
    "[closure][mirror][slow]") {
  if (host_python_unfit()) return;
  ClosureOnProject fixture;
  if (fixture.skip(pyindex_descriptions(test_data_dir()))) return;
  const std::string manifest =
      "framework: torch ==2.4.1\n"
      "# The hermetic index serves no NVIDIA archives and no zlib source: the machine's.\n"
      "external: {python: system, cuda: \"12.1.1\", zlib: \"1.2.13\"}\n"
      "system: {driver: \"550.54.15\"}\n";
  fixture.write("envkit.yaml", manifest);
  const auto lockfile = fixture.locked();
  const auto& platform = linux_x86_64(lockfile);
  REQUIRE(platform.python);
  const auto& closure = platform.python->packages;
  REQUIRE(closure.size() > 10);
  std::set<std::string> urls;
  for (const auto& wheel : closure)
    urls.insert(wheel.url);
  for (const auto& package : platform.packages) {
    for (const auto& artifact : package.artifacts)
      urls.insert(artifact.url);
  }

  const auto out = fixture.project.dir.path() / "mirror";
  const auto made = fixture.envkit({"mirror", "--out", out.string(), "--json"});
  INFO(made.err);
  REQUIRE(made.exit_code == 0);
  const auto report = json::parse(made.out);
  CHECK(report.at("files") == urls.size());
  CHECK(report.at("skipped") == 0);
  for (const auto& wheel : closure) {
    CAPTURE(wheel.url);
    const auto file = mirrored(out, wheel.url);
    REQUIRE(fs::is_regular_file(file));
    CHECK(core::sha256_file(file).value() == wheel.sha256);
  }
  CHECK(fs::exists(mirrored(out, wheel_of(platform, "torch").url)));

  // Another machine, air-gapped: the index is gone, nothing but the mirror folder.
  fixture.index.reset();
  IsolatedProject other;
  other.write(other.root / "envkit.yaml", manifest);
  fs::copy_file(fixture.project.root / "envkit.lock", other.root / "envkit.lock");
  auto env = closure_on(std::nullopt, *fixture.uv);
  // It has the CUDA 12.1.1 the manifest states under `external:`, as the first one had.
  env.insert_or_assign("CUDA_HOME", fixture.machine_cuda.string());
  env.insert_or_assign("CUDA_PATH", std::nullopt);
  // Without the mirror nothing can be downloaded there.
  const auto cut_off =
      other.envkit({"--recipes", fixture.recipes.string(), "install", "--frozen"}, env);
  CHECK(cut_off.exit_code == 1);
  CHECK_THAT(cut_off.err, Contains("https://files.pythonhosted.org/packages/"));
  const auto installed = other.envkit({"--recipes", fixture.recipes.string(), "install", "--frozen",
                                       "--mirror", "file://" + out.string()},
                                      env);
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);
  CHECK_THAT(installed.err, Contains(std::to_string(closure.size()) + " Python packages"));
  const auto ran = other.envkit({"run", "--", "python", "-c",
                                 "import torch; print(torch.__version__); print(torch.__file__)"},
                                env);
  INFO(ran.err);
  REQUIRE(ran.exit_code == 0);
  const auto said = lines_of(ran.out);
  REQUIRE(said.size() == 2);
  CHECK(said[0] == "2.4.1");
  CHECK(inside(said[1], other.prefix()));
}

TEST_CASE("envkit export --oci of a prefix with a closure holds the closure's packages",
          "[closure][export][slow]") {
  if (host_python_unfit()) return;
  ClosureOnProject fixture;
  if (fixture.skip(pyindex_descriptions(test_data_dir()))) return;
  fixture.write("envkit.yaml",
                "framework: torch ==2.4.1\n"
                "# The hermetic index serves no NVIDIA archives and no zlib source: the "
                "machine's.\n"
                "external: {python: system, cuda: \"12.1.1\", zlib: \"1.2.13\"}\n"
                "system: {driver: \"550.54.15\"}\n");
  const auto lockfile = fixture.locked();
  const auto& platform = linux_x86_64(lockfile);
  REQUIRE(platform.python);
  const auto installed = fixture.envkit({"install", "--frozen"});
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);

  const auto image = fixture.project.dir.path() / "image";
  const auto exported = fixture.envkit({"export", "--oci", image.string(), "--json"});
  INFO(exported.err);
  REQUIRE(exported.exit_code == 0);
  const auto manifest_hex = json::parse(exported.out).at("manifest").get<std::string>().substr(7);
  const auto manifest = json::parse(test::read_text(image / "blobs" / "sha256" / manifest_hex));
  std::set<std::string> layers;
  for (const auto& layer : manifest.at("layers"))
    layers.insert(layer.at("annotations").at("dev.envkit.package").get<std::string>());
  // A layer per closure package, torch's among them.
  CHECK(layers.count("torch 2.4.1") == 1);
  for (const auto& wheel : platform.python->packages)
    CHECK(layers.count(wheel.name + " " + wheel.version) == 1);

  if (program_missing("umoci")) return;  // the case is skipped: the rest needs umoci
  const auto bundle = fixture.project.dir.path() / "bundle";
  const auto unpacked = sys::run_process(
      {"umoci", "unpack", "--rootless", "--image", image.string() + ":latest", bundle.string()});
  REQUIRE(unpacked);
  INFO(unpacked->err);
  REQUIRE(unpacked->exit_code == 0);
  const auto rootfs = bundle / "rootfs" / "opt" / "envkit";
  const auto prefix = fixture.project.prefix();
  std::optional<fs::path> site;
  for (const auto& entry : fs::directory_iterator(prefix / "lib")) {
    if (entry.path().filename().string().starts_with("python3"))
      site = fs::path("lib") / entry.path().filename() / "site-packages";
  }
  REQUIRE(site);
  const auto torch = *site / "torch" / "__init__.py";
  REQUIRE(fs::is_regular_file(rootfs / torch));
  CHECK(test::read_text(rootfs / torch) == test::read_text(prefix / torch));
  CHECK(fs::is_directory(rootfs / *site / "torch-2.4.1.dist-info"));
  // Every file of the prefix's site-packages is in the image, with its bytes.
  for (fs::recursive_directory_iterator it(prefix / *site), end; it != end; ++it) {
    if (!it->is_regular_file() || it->is_symlink()) continue;
    const auto relative = it->path().lexically_relative(prefix);
    CAPTURE(relative);
    CHECK(test::read_text(rootfs / relative) == test::read_text(it->path()));
  }
}

TEST_CASE("why cuda with the closure on names torch's requirement, the driver and the choice",
          "[closure][why]") {
  ClosureOnProject fixture;
  if (fixture.skip(pyindex_descriptions(test_data_dir()))) return;
  fixture.write("envkit.yaml", "framework: torch ==2.4.1\nsystem: {driver: \"550.54.15\"}\n");
  const auto lockfile = fixture.locked();
  const auto& platform = linux_x86_64(lockfile);
  CHECK(package_of(platform, "cuda").version.original() == "12.1.1");
  CHECK(wheel_of(platform, "nvidia-cuda-runtime-cu12").version == "12.1.105");

  const auto why = fixture.envkit({"why", "cuda"});
  INFO(why.err);
  CHECK(why.exit_code == 0);
  CHECK_THAT(why.err, StartsWith("cuda 12.1.1 on linux-x86_64, because:\n"));
  CHECK_THAT(why.err, Contains("\n  torch 2.4.1 (cu121) requires cuda <13,>=12.1\n"));
  CHECK_THAT(why.err, Contains("driver is 550.54.15") && Contains("it runs CUDA 12.1.1 natively"));
  CHECK_THAT(why.err, Contains("chosen: torch 2.4.1 (cu121) was tested with cuda 12.1"));
  // The lock agrees with what why explains.
  CHECK_THAT(why.err, !Contains("envkit.lock has"));

  const auto cudnn = fixture.envkit({"why", "cudnn"});
  INFO(cudnn.err);
  CHECK(cudnn.exit_code == 0);
  CHECK_THAT(cudnn.err, StartsWith("cudnn 9.1.0.70 (cuda12) on linux-x86_64, because:\n"));
  CHECK_THAT(cudnn.err, Contains("\n  torch 2.4.1 (cu121) requires cudnn <10,>=9.1\n"));
}

TEST_CASE("why cuda names the closure's CUDA runtime wheel when the wheels pin the CUDA",
          "[closure][why]") {
  // The pins the closure's NVIDIA wheels add to the solve are the wheels', and `why` says
  // so: envkit.yaml says nothing of CUDA here.
  ClosureOnProject fixture;
  if (fixture.skip({test_data_dir() / "pyindex-today" / "pypi.org-simple.json"})) return;
  fixture.write("requirements.txt", "jax[cuda12]==0.4.30\n");
  fixture.write("envkit.yaml",
                "framework: jax ==0.4.30\npython-requirements: [requirements.txt]\n"
                "system: {driver: \"560.35.03\"}\n");
  const auto lockfile = fixture.locked();
  const auto& platform = linux_x86_64(lockfile);
  const auto& runtime = wheel_of(platform, "nvidia-cuda-runtime-cu12");
  CHECK_THAT(package_of(platform, "cuda").version.original(), StartsWith("12.9."));

  const auto why = fixture.envkit({"why", "cuda"});
  INFO(why.err);
  CHECK(why.exit_code == 0);
  CHECK_THAT(why.err, StartsWith("cuda 12.9."));
  // jax's own range, and the pin of the closure's wheel that narrowed it.
  CHECK_THAT(why.err, Contains("`nvidia-cuda-runtime-cu12==" + runtime.version +
                               "` in the resolved Python closure requires cuda =="));
  CHECK_THAT(why.err, !Contains("envkit.yaml requires cuda"));
}

TEST_CASE("why cudnn names the closure's cuDNN wheel when the wheels pin the cuDNN",
          "[closure][why]") {
  // As above, for cuDNN. A recipe database that does not know which cuDNN torch 2.4.1
  // (cu121) was tested with (no `tested: cudnn`, as for many builds) lets the solver choose
  // the newest cuDNN 9 first; the closure's wheels pin nvidia-cudnn-cu12 9.1.0.70, and
  // `envkit why cudnn` names that wheel, never envkit.yaml.
  ClosureOnProject fixture;
  if (fixture.skip(pyindex_descriptions(test_data_dir()))) return;
  fixture.recipes = fixture.project.dir.path() / "recipes";
  fs::copy(source_dir() / "recipes", fixture.recipes, fs::copy_options::recursive);
  {
    const auto torch = fixture.recipes / "pypi" / "torch.yaml";
    auto text = test::read_text(torch);
    const auto release = text.find("  - version: \"2.4.1\"\n");
    REQUIRE(release != std::string::npos);
    const auto build = text.find("      - id: cu121\n", release);
    REQUIRE(build != std::string::npos);
    const std::string tested = "          cudnn: \"9.1.0.70\"\n";
    const auto line = text.find(tested, text.find("        tested:\n", build));
    REQUIRE(line != std::string::npos);
    REQUIRE(line < text.find("      - id: cu124\n", build));
    text.erase(line, tested.size());
    fixture.project.write(torch, text);
  }
  fixture.write("envkit.yaml", "framework: torch ==2.4.1\nsystem: {driver: \"550.54.15\"}\n");
  const auto locked = fixture.envkit({"lock"});
  INFO(locked.err);
  REQUIRE(locked.exit_code == 0);
  CHECK_THAT(locked.err, Contains("the framework's wheels pin nvidia-cudnn-cu12 9.1.0.70"));
  CHECK_THAT(locked.err, Contains("cudnn 9.1.0.70 (cuda12)"));

  const auto why = fixture.envkit({"why", "cudnn"});
  INFO(why.err);
  CHECK(why.exit_code == 0);
  CHECK_THAT(why.err, StartsWith("cudnn 9.1.0.70 (cuda12) on linux-x86_64, because:\n"));
  CHECK_THAT(why.err, Contains("`nvidia-cudnn-cu12==9.1.0.70` in the resolved Python closure "
                               "requires cudnn ==9.1.0.70"));
  CHECK_THAT(why.err, !Contains("envkit.yaml requires cudnn"));
}

}  // namespace envkit::test::closure_e2e
