// The package indexes tests serve (support/python_index.hpp): wheels and sdists
// Python reads, pages as PyPI writes them, and the hermetic index of
// tests/data/pyindex, which uv resolves as it resolves PyPI.
#include "support/python_index.hpp"

#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "envkit/sys/fs.hpp"
#include "envkit/sys/process.hpp"
#include "support/envkit_runner.hpp"
#include "support/http_server.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using Catch::Contains;
using envkit::test::FakeWheel;
using envkit::test::PythonIndex;
using envkit::test::TempDir;

// The machine's python3, or nullopt with the skip recorded.
std::optional<fs::path> python3(std::source_location where = std::source_location::current()) {
  if (envkit::test::program_missing("python3", where)) return std::nullopt;
  return envkit::sys::find_on_path("python3");
}

// What `python -I -c script file` prints; it must succeed.
std::string python_output(const fs::path& python, const std::string& script, const fs::path& file) {
  auto ran = envkit::sys::run_process({python.string(), "-I", "-c", script, file.string()});
  REQUIRE(ran);
  INFO(ran->err);
  REQUIRE(ran->exit_code == 0);
  return ran->out;
}

std::string read(const fs::path& file) {
  return envkit::sys::read_file(file).value();
}

TEST_CASE("the wheels PythonIndex makes are zips Python reads", "[python][index]") {
  const auto python = python3();
  if (!python) return;
  TempDir dir;
  PythonIndex index(dir.path());
  const auto wheel =
      index.add({.name = "Nice.Pkg",
                 .version = "0.1",
                 .files = {{"nice_pkg/__init__.py", "x = 1\n"}, {"nice_pkg/data/é.txt", "hé\n"}}});
  CHECK(wheel.filename() == "nice_pkg-0.1-py3-none-any.whl");
  CHECK(python_output(
            *python,
            "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nassert z.testzip() is None\n"
            "for i in z.infolist(): print(i.filename, len(z.read(i)))\n"
            "print(z.read('nice_pkg-0.1.dist-info/METADATA').decode())",
            wheel) ==
        "nice_pkg/__init__.py 6\nnice_pkg/data/é.txt 4\nnice_pkg-0.1.dist-info/METADATA 50\n"
        "nice_pkg-0.1.dist-info/WHEEL 83\nnice_pkg-0.1.dist-info/RECORD 349\n"
        "Metadata-Version: 2.1\nName: Nice.Pkg\nVersion: 0.1\n\n");
  // Same input, same bytes.
  const auto first = PythonIndex::sha256_of(wheel);
  index.add({.name = "Nice.Pkg",
             .version = "0.1",
             .files = {{"nice_pkg/__init__.py", "x = 1\n"}, {"nice_pkg/data/é.txt", "hé\n"}}});
  CHECK(PythonIndex::sha256_of(wheel) == first);
  const auto page = read(dir.path() / "simple/nice-pkg/index.html");
  CHECK_THAT(
      page, Contains("<a href=\"../../files/nice_pkg-0.1-py3-none-any.whl#sha256=" + first + "\""));
  // PEP 658: the wheel's METADATA beside it, its sha256 on the page.
  const auto metadata = read(dir.path() / "files/nice_pkg-0.1-py3-none-any.whl.metadata");
  CHECK(metadata == "Metadata-Version: 2.1\nName: Nice.Pkg\nVersion: 0.1\n");
  const auto metadata_sha256 = PythonIndex::sha256_of(wheel.string() + ".metadata");
  CHECK_THAT(page, Contains(" data-dist-info-metadata=\"sha256=" + metadata_sha256 +
                            "\" data-core-metadata=\"sha256=" + metadata_sha256 + "\""));
}

TEST_CASE("PythonIndex makes sdists whose PKG-INFO states their metadata", "[python][index]") {
  const auto python = python3();
  if (!python) return;
  TempDir dir;
  PythonIndex index(dir.path());
  const auto sdist = index.add({.name = "termcolor",
                                .version = "1.1.0",
                                .requires_dist = {"six; python_version < \"3\""},
                                .requires_python = ">=2.7",
                                .sdist = true});
  CHECK(sdist.filename() == "termcolor-1.1.0.tar.gz");
  CHECK(python_output(*python,
                      "import sys, tarfile\nt = tarfile.open(sys.argv[1], 'r:gz')\n"
                      "for m in t.getmembers(): print(m.name, m.size, oct(m.mode), m.mtime)\n"
                      "print(t.extractfile('termcolor-1.1.0/PKG-INFO').read().decode(), end='')\n"
                      "print(t.extractfile('termcolor-1.1.0/pyproject.toml').read().decode(), "
                      "end='')",
                      sdist) ==
        "termcolor-1.1.0/PKG-INFO 117 0o644 0\n"
        "termcolor-1.1.0/pyproject.toml 210 0o644 0\n"
        "termcolor-1.1.0/setup.py 38 0o644 0\n"
        "termcolor-1.1.0/termcolor/__init__.py 22 0o644 0\n"
        "Metadata-Version: 2.2\nName: termcolor\nVersion: 1.1.0\nRequires-Python: >=2.7\n"
        "Requires-Dist: six; python_version < \"3\"\n"
        "[build-system]\nrequires = [\"setuptools>=40.8.0\"]\n"
        "build-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"termcolor\"\n"
        "version = \"1.1.0\"\nrequires-python = \">=2.7\"\n"
        "dependencies = [\"six; python_version < \\\"3\\\"\"]\n");
  const auto page = read(dir.path() / "simple/termcolor/index.html");
  CHECK_THAT(page, Contains("termcolor-1.1.0.tar.gz#sha256=" + PythonIndex::sha256_of(sdist) +
                            "\" data-requires-python=\"&gt;=2.7\">"));
  CHECK_FALSE(fs::exists(sdist.string() + ".metadata"));
}

TEST_CASE("PythonIndex links files at their mirror paths relatively, `+` escaped",
          "[python][index]") {
  TempDir dir;
  PythonIndex pytorch(dir.path(), "download.pytorch.org/whl/cu124");
  pytorch.add({.name = "torch",
               .version = "2.4.1+cu124",
               .tag = "cp312-cp312-linux_x86_64",
               .requires_python = ">=3.8.0"},
              "download.pytorch.org/whl/cu124/torch-2.4.1+cu124-cp312-cp312-linux_x86_64.whl");
  CHECK_THAT(read(dir.path() / "download.pytorch.org/whl/cu124/torch/index.html"),
             Contains("<a href=\"../torch-2.4.1%2Bcu124-cp312-cp312-linux_x86_64.whl#sha256="));
  PythonIndex pypi(dir.path(), "pypi.org/simple");
  pypi.add({.name = "six", .version = "1.17.0", .tag = "py2.py3-none-any"},
           "files.pythonhosted.org/packages/b7/ce/149a/six-1.17.0-py2.py3-none-any.whl");
  CHECK_THAT(read(dir.path() / "pypi.org/simple/six/index.html"),
             Contains("<a href=\"../../../files.pythonhosted.org/packages/b7/ce/149a/"
                      "six-1.17.0-py2.py3-none-any.whl#sha256="));
  CHECK_THAT(read(dir.path() / "pypi.org/simple/index.html"), Contains("<a href=\"six/\">six</a>"));
}

TEST_CASE("the hermetic index lays out tests/data/pyindex as envkit mirror does",
          "[python][index]") {
  TempDir dir;
  const auto made = envkit::test::build_mirror(
      dir.path(), envkit::test::pyindex_descriptions(envkit::test::test_data_dir()));
  REQUIRE(made.size() > 100);
  std::set<std::string> urls;
  for (const auto& file : made) {
    urls.insert(file.url);
    // Generated contents: never PyPI's bytes.
    CHECK(file.sha256 != file.upstream_sha256);
  }
  const std::string tf_gpu =
      "https://files.pythonhosted.org/packages/b1/8c/"
      "35ba6f94dd9729517b899c3ba764e604ffe22daeba04f7c"
      "771dd452ba55b/tensorflow_gpu-1.6.0-cp36-cp36m-manylinux1_x86_64.whl";
  CHECK(urls.count(tf_gpu) == 1);
  CHECK(fs::is_regular_file(dir.path() / tf_gpu.substr(8)));
  CHECK_THAT(read(dir.path() / (tf_gpu.substr(8) + ".metadata")),
             Contains("Requires-Dist: tensorboard (<1.7.0,>=1.6.0)"));
  CHECK_THAT(read(dir.path() / "pypi.org/simple/tensorflow-gpu/index.html"),
             Contains("href=\"../../../files.pythonhosted.org/packages/b1/8c/"));
  CHECK_THAT(read(dir.path() / "pypi.org/simple/termcolor/index.html"),
             Contains("termcolor-1.1.0.tar.gz#sha256="));
  // The cu124 build: its own index, PyTorch's layout, its CUDA 12.4 pins.
  const auto cu124 = dir.path() / "download.pytorch.org/whl/cu124";
  CHECK_THAT(read(cu124 / "torch/index.html"),
             Contains("href=\"../torch-2.4.1%2Bcu124-cp312-cp312-linux_x86_64.whl#sha256="));
  CHECK_THAT(read(cu124 / "torch-2.4.1+cu124-cp312-cp312-linux_x86_64.whl.metadata"),
             Contains("Requires-Dist: nvidia-cuda-runtime-cu12 (==12.4.99) ; platform_system == "
                      "\"Linux\" and platform_machine == \"x86_64\""));
}

// uv resolves the hermetic index as it resolved PyPI when the data was collected.
TEST_CASE("uv resolves the real closures from the hermetic index", "[python][index][uv][slow]") {
  if (envkit::test::uv_missing() || envkit::test::nginx_missing()) return;
  const auto uv = envkit::test::test_uv();
  TempDir dir;
  const auto root = dir.path() / "index";
  envkit::test::build_mirror(root,
                             envkit::test::pyindex_descriptions(envkit::test::test_data_dir()));
  envkit::test::StaticHttpServer server(root);
  // The file names of what uv chooses for `requirement` with Python `python` on `platform`.
  const auto resolve = [&](const std::string& requirement, const std::string& python,
                           const std::string& platform, std::vector<std::string> extra = {}) {
    dir.write("requirements.in", requirement + "\n");
    std::vector<std::string> argv = {uv->string(),
                                     "pip",
                                     "compile",
                                     "--quiet",
                                     "--no-config",
                                     "--no-python-downloads",
                                     "--no-header",
                                     "--python-version",
                                     python,
                                     "--python-platform",
                                     platform,
                                     "--format",
                                     "pylock.toml",
                                     "-o",
                                     (dir.path() / "pylock.toml").string(),
                                     "--index-url",
                                     server.url("/pypi.org/simple/")};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back((dir.path() / "requirements.in").string());
    envkit::sys::ProcessOptions options;
    options.env = {{"UV_CACHE_DIR", (dir.path() / "uv-cache").string()}};
    const auto ran = envkit::sys::run_process(argv, options);
    REQUIRE(ran);
    INFO(ran->err);
    REQUIRE(ran->exit_code == 0);
    std::set<std::string> files;
    const auto lock = read(dir.path() / "pylock.toml");
    for (std::size_t at = lock.find("url = \""); at != std::string::npos;
         at = lock.find("url = \"", at + 1)) {
      const auto end = lock.find('"', at + 7);
      const auto url = lock.substr(at + 7, end - at - 7);
      CHECK_THAT(url, Catch::StartsWith(server.url("/")));
      files.insert(url.substr(url.rfind('/') + 1));
    }
    return files;
  };

  SECTION("tensorflow-gpu 1.6.0 for CPython 3.6: cp36 wheels, and sdists where PyPI has no wheel") {
    const auto files = resolve("tensorflow-gpu==1.6.0", "3.6", "x86_64-manylinux_2_28");
    CHECK(files.count("tensorflow_gpu-1.6.0-cp36-cp36m-manylinux1_x86_64.whl") == 1);
    CHECK(files.count("html5lib-0.9999999.tar.gz") == 1);
    CHECK(files.count("termcolor-1.1.0.tar.gz") == 1);
    CHECK(files.count("dataclasses-0.8-py3-none-any.whl") == 1);  // python_version < "3.7"
    CHECK(files.count("numpy-1.19.5-cp36-cp36m-manylinux1_x86_64.whl") == 1);
  }
  SECTION("torch 2.4.1 from PyPI pins the CUDA 12.1 runtime; on aarch64 no NVIDIA wheels") {
    const auto files = resolve("torch==2.4.1", "3.12", "x86_64-manylinux_2_28");
    CHECK(files.count("torch-2.4.1-cp312-cp312-manylinux1_x86_64.whl") == 1);
    CHECK(files.count("nvidia_cuda_runtime_cu12-12.1.105-py3-none-manylinux1_x86_64.whl") == 1);
    CHECK(files.count("nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl") == 1);
    CHECK(files.count("setuptools-84.2.1-py3-none-any.whl") == 1);  // the cp312 wheel's own
    const auto aarch64 = resolve("torch==2.4.1", "3.12", "aarch64-manylinux_2_28");
    CHECK(aarch64.count("torch-2.4.1-cp312-cp312-manylinux2014_aarch64.whl") == 1);
    for (const auto& file : aarch64)
      CHECK_FALSE(file.starts_with("nvidia"));
  }
  SECTION("torch 2.4.1+cu124 from the PyTorch-like index, its NVIDIA wheels from PyPI") {
    const auto files = resolve("torch==2.4.1+cu124", "3.11", "x86_64-manylinux_2_28",
                               {"--extra-index-url", server.url("/download.pytorch.org/whl/cu124/"),
                                "--index-strategy", "unsafe-best-match"});
    CHECK(files.count("torch-2.4.1%2Bcu124-cp311-cp311-linux_x86_64.whl") == 1);
    CHECK(files.count("nvidia_cuda_runtime_cu12-12.4.99-py3-none-manylinux2014_x86_64.whl") == 1);
  }
}

}  // namespace
