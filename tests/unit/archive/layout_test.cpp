// Layouts map each packaging into prefix layout; wheels get their library links.
#include "envkit/archive/layout.hpp"

#include <catch2/catch.hpp>
#include <filesystem>

#include "archive_maker.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
using envkit::archive::EntryType;
using envkit::archive::ExtractOptions;
using envkit::archive::layout_options;
using envkit::archive::LayoutTarget;
using envkit::specs::Layout;
using envkit::test::Entry;
using envkit::test::Format;
using envkit::test::make_archive;
using envkit::test::MemorySource;
using envkit::test::TempDir;
using envkit::test::tree;

namespace {

// Where `path` (as stored) lands under `options`, or "-" when left out.
std::string placed(const ExtractOptions& options, std::string_view path) {
  std::string_view rest = path;
  for (int i = 0; i < options.strip_components; ++i) {
    const auto slash = rest.find('/');
    if (slash == std::string_view::npos || slash + 1 == rest.size()) return "-";
    rest = rest.substr(slash + 1);
  }
  if (!options.map) return std::string(rest);
  return options.map(rest).value_or("-");
}

std::vector<std::string> unpack(const std::vector<Entry>& entries, const LayoutTarget& target,
                                Format format = Format::tar_xz) {
  TempDir tmp;
  const auto file = tmp.path() / "artifact";
  envkit::test::write_bytes(file, make_archive(format, entries));
  auto result = envkit::archive::extract_file(file, tmp.path() / "prefix", layout_options(target));
  REQUIRE(result.ok());
  return tree(tmp.path() / "prefix");
}

}  // namespace

TEST_CASE("nvidia_redist strips the archive folder, lib64 becomes lib, licences move",
          "[archive][layout]") {
  const LayoutTarget target{
      .layout = Layout::nvidia_redist, .package = "cuda", .component = "cuda_cudart"};
  const auto options = layout_options(target);
  CHECK(options.strip_components == 1);
  const std::string top = "cuda_cudart-linux-x86_64-12.4.127-archive/";
  CHECK(placed(options, top + "lib/libcudart.so.12.4.127") == "lib/libcudart.so.12.4.127");
  CHECK(placed(options, top + "lib64/libcudart.so.12") == "lib/libcudart.so.12");
  CHECK(placed(options, top + "include/cuda_runtime_api.h") == "include/cuda_runtime_api.h");
  CHECK(placed(options, top + "LICENSE") == "share/licenses/cuda/cuda_cudart/LICENSE");
  CHECK(placed(options, top + "bin/") == "bin/");
  CHECK(placed(options, top) == "-");

  CHECK(unpack({Entry::dir(top), Entry::dir(top + "lib/"),
                Entry::file(top + "lib/libcudart.so.12.4.127", "elf", 0755),
                Entry::symlink(top + "lib/libcudart.so.12", "libcudart.so.12.4.127"),
                Entry::file(top + "pkg-config/cudart-12.4.pc", "pc"),
                Entry::file(top + "LICENSE", "licence")},
               target) == std::vector<std::string>{
                              "lib/",
                              "lib/libcudart.so.12 -> libcudart.so.12.4.127",
                              "lib/libcudart.so.12.4.127",
                              "pkg-config/",
                              "pkg-config/cudart-12.4.pc",
                              "share/",
                              "share/licenses/",
                              "share/licenses/cuda/",
                              "share/licenses/cuda/cuda_cudart/",
                              "share/licenses/cuda/cuda_cudart/LICENSE",
                          });
}

TEST_CASE("licences of two components never land on each other", "[archive][layout]") {
  TempDir tmp;
  for (const std::string component : {"cuda_cudart", "cuda_nvcc"}) {
    const auto top = component + "-linux-x86_64-12.4.127-archive/";
    envkit::test::write_bytes(
        tmp.path() / component,
        make_archive(Format::tar_xz, {Entry::file(top + "LICENSE", component + " licence")}));
    auto result = envkit::archive::extract_file(
        tmp.path() / component, tmp.path() / "prefix",
        layout_options(
            {.layout = Layout::nvidia_redist, .package = "cuda", .component = component}));
    REQUIRE(result.ok());
  }
  CHECK(envkit::test::read_bytes(tmp.path() / "prefix/share/licenses/cuda/cuda_cudart/LICENSE") ==
        "cuda_cudart licence");
  CHECK(envkit::test::read_bytes(tmp.path() / "prefix/share/licenses/cuda/cuda_nvcc/LICENSE") ==
        "cuda_nvcc licence");
}

TEST_CASE("cudnn_legacy maps cuda/include and cuda/lib64", "[archive][layout]") {
  const LayoutTarget target{
      .layout = Layout::cudnn_legacy, .package = "cudnn", .component = "cudnn"};
  const auto options = layout_options(target);
  CHECK(placed(options, "cuda/include/cudnn.h") == "include/cudnn.h");
  CHECK(placed(options, "cuda/lib64/libcudnn.so.7") == "lib/libcudnn.so.7");
  CHECK(placed(options, "cuda/lib/libcudnn.so.7") == "lib/libcudnn.so.7");
  CHECK(placed(options, "cuda/NVIDIA_SLA_cuDNN_Support.txt") ==
        "share/licenses/cudnn/cudnn/NVIDIA_SLA_cuDNN_Support.txt");
  CHECK(placed(options, "cuda/") == "-");
  CHECK(placed(options, "elsewhere/x") == "-");

  CHECK(unpack({Entry::dir("cuda/"), Entry::dir("cuda/include/"),
                Entry::file("cuda/include/cudnn.h", "h"), Entry::dir("cuda/lib64/"),
                Entry::file("cuda/lib64/libcudnn.so.7.6.5", "elf", 0755),
                Entry::symlink("cuda/lib64/libcudnn.so.7", "libcudnn.so.7.6.5"),
                Entry::file("cuda/NVIDIA_SLA_cuDNN_Support.txt", "sla")},
               target, Format::tar_gz) ==
        std::vector<std::string>{"include/", "include/cudnn.h", "lib/",
                                 "lib/libcudnn.so.7 -> libcudnn.so.7.6.5", "lib/libcudnn.so.7.6.5",
                                 "share/", "share/licenses/", "share/licenses/cudnn/",
                                 "share/licenses/cudnn/cudnn/",
                                 "share/licenses/cudnn/cudnn/NVIDIA_SLA_cuDNN_Support.txt"});
}

TEST_CASE("python_standalone makes python/ the prefix", "[archive][layout]") {
  const auto options = layout_options({.layout = Layout::python_standalone, .package = "python"});
  CHECK(placed(options, "python/bin/python3.11") == "bin/python3.11");
  CHECK(placed(options, "python/") == "-");
  CHECK(placed(options, "other") == "-");
  CHECK(unpack({Entry::dir("python/"), Entry::file("python/bin/python3.11", "elf", 0755),
                Entry::symlink("python/bin/python3", "python3.11")},
               {.layout = Layout::python_standalone, .package = "python"}, Format::tar_zst) ==
        std::vector<std::string>{"bin/", "bin/python3 -> python3.11", "bin/python3.11"});
}

TEST_CASE("python_standalone_full makes python/install/ the prefix, the build tree left out",
          "[archive][layout]") {
  const LayoutTarget target{.layout = Layout::python_standalone_full, .package = "python"};
  const auto options = layout_options(target);
  CHECK(options.strip_components == 1);
  CHECK(placed(options, "python/install/bin/python3.8") == "bin/python3.8");
  CHECK(placed(options, "python/install/") == "-");
  CHECK(placed(options, "python/build/lib/libpython3.8.a") == "-");
  CHECK(placed(options, "python/PYTHON.json") == "-");
  CHECK(unpack({Entry::dir("python/"), Entry::file("python/PYTHON.json", "{}"),
                Entry::dir("python/build/"), Entry::file("python/build/setup.o", "o"),
                Entry::dir("python/install/"), Entry::dir("python/install/bin/"),
                Entry::file("python/install/bin/python3.8", "elf", 0755),
                Entry::symlink("python/install/bin/python3", "python3.8")},
               target, Format::tar_zst) ==
        std::vector<std::string>{"bin/", "bin/python3 -> python3.8", "bin/python3.8"});
}

TEST_CASE("nvidia_wheel keeps the wheel root's contents and the licences", "[archive][layout]") {
  const LayoutTarget target{.layout = Layout::nvidia_wheel,
                            .package = "cuda",
                            .component = "cuda_runtime",
                            .wheel_root = "nvidia/cuda_runtime"};
  const auto options = layout_options(target);
  CHECK(options.strip_components == 0);
  CHECK(placed(options, "nvidia/cuda_runtime/lib/libcudart.so.12") == "lib/libcudart.so.12");
  CHECK(placed(options, "nvidia/cuda_runtime/include/cuda_runtime_api.h") ==
        "include/cuda_runtime_api.h");
  CHECK(placed(options, "nvidia/cuda_runtime/__init__.py") == "-");
  CHECK(placed(options, "nvidia/cuda_runtime/lib/__init__.py") == "-");
  CHECK(placed(options, "nvidia/cuda_runtime/lib/__pycache__/__init__.cpython-311.pyc") == "-");
  CHECK(placed(options, "nvidia/cuda_runtime/") == "-");
  CHECK(placed(options, "nvidia/__init__.py") == "-");
  CHECK(placed(options, "nvidia/cublas/lib/libcublas.so.12") == "-");
  CHECK(placed(options, "nvidia_cuda_runtime_cu12-12.4.127.dist-info/License.txt") ==
        "share/licenses/cuda/cuda_runtime/License.txt");
  CHECK(placed(options, "nvidia_cuda_runtime_cu12-12.4.127.dist-info/LICENSE.md") ==
        "share/licenses/cuda/cuda_runtime/LICENSE.md");
  CHECK(placed(options, "nvidia_cuda_runtime_cu12-12.4.127.dist-info/licenses/NOTICE") ==
        "share/licenses/cuda/cuda_runtime/NOTICE");
  CHECK(placed(options, "nvidia_cuda_runtime_cu12-12.4.127.dist-info/METADATA") == "-");
  CHECK(placed(options, "nvidia_cuda_runtime_cu12-12.4.127.dist-info/RECORD") == "-");

  const auto cu13 = layout_options({.layout = Layout::nvidia_wheel,
                                    .package = "cuda",
                                    .component = "cuda_nvcc",
                                    .wheel_root = "nvidia/cu13/"});
  CHECK(placed(cu13, "nvidia/cu13/bin/nvcc") == "bin/nvcc");
  CHECK(placed(cu13, "nvidia/cu130/bin/nvcc") == "-");

  CHECK(unpack({Entry::file("nvidia/__init__.py", ""),
                Entry::file("nvidia/cuda_runtime/__init__.py", ""),
                Entry::file("nvidia/cuda_runtime/lib/libcudart.so.12", "elf", 0755),
                Entry::file("nvidia_cuda_runtime_cu12-12.4.127.dist-info/License.txt", "l"),
                Entry::file("nvidia_cuda_runtime_cu12-12.4.127.dist-info/WHEEL", "w")},
               target, Format::zip) ==
        std::vector<std::string>{"lib/", "lib/libcudart.so.12", "share/", "share/licenses/",
                                 "share/licenses/cuda/", "share/licenses/cuda/cuda_runtime/",
                                 "share/licenses/cuda/cuda_runtime/License.txt"});
}

TEST_CASE("source_tree strips one folder, none unpacks nothing", "[archive][layout]") {
  const auto source = layout_options({.layout = Layout::source_tree});
  CHECK(source.strip_components == 1);
  CHECK(placed(source, "zlib-1.3.1/configure") == "configure");
  const auto none = layout_options({.layout = Layout::none});
  CHECK(placed(none, "anything") == "-");
}

TEST_CASE("layout_options keeps the base limits", "[archive][layout]") {
  ExtractOptions base;
  base.max_bytes = 1234;
  base.max_entries = 56;
  base.hash_files = true;
  base.strip_components = 3;
  const auto options = layout_options({.layout = Layout::nvidia_redist}, base);
  CHECK(options.max_bytes == 1234);
  CHECK(options.max_entries == 56);
  CHECK(options.hash_files);
  CHECK(options.strip_components == 1);
}

namespace {

std::vector<std::string> links_made(const fs::path& root) {
  auto made = envkit::archive::add_library_links(root);
  REQUIRE(made.ok());
  std::vector<std::string> out;
  for (const auto& entry : *made) {
    CHECK(entry.type == EntryType::symlink);
    out.push_back(entry.path + " -> " + entry.link_target);
  }
  return out;
}

}  // namespace

TEST_CASE("add_library_links makes the soname and development links", "[archive][layout]") {
  TempDir tmp;
  const auto& root = tmp.path();
  tmp.write("lib/libcudart.so.12", "cudart");
  tmp.write("lib/libcudnn.so.9", "cudnn");
  tmp.write("lib/libcublasLt.so.12", "cublasLt");
  tmp.write("lib/libnvrtc-builtins.so.12.4", "builtins");
  tmp.write("lib/libcufft.so.11.2.1.3", "cufft");
  tmp.write("lib/libnvToolsExt.so.1", "nvtx");
  tmp.write("lib/libnvToolsExt.so", "already there");
  tmp.write("lib/libfoo.so.1.debug", "not a version");
  tmp.write("lib/README", "x");
  CHECK(links_made(root) == std::vector<std::string>{
                                "lib/libcublasLt.so -> libcublasLt.so.12",
                                "lib/libcudart.so -> libcudart.so.12",
                                "lib/libcudnn.so -> libcudnn.so.9",
                                "lib/libcufft.so.11 -> libcufft.so.11.2.1.3",
                                "lib/libcufft.so -> libcufft.so.11",
                                "lib/libnvrtc-builtins.so.12 -> libnvrtc-builtins.so.12.4",
                                "lib/libnvrtc-builtins.so -> libnvrtc-builtins.so.12",
                            });
  CHECK(envkit::test::read_bytes(root / "lib/libcufft.so") == "cufft");
  CHECK(envkit::test::read_bytes(root / "lib/libnvrtc-builtins.so") == "builtins");
  CHECK(envkit::test::read_bytes(root / "lib/libnvToolsExt.so") == "already there");
  // Running again changes nothing.
  CHECK(links_made(root).empty());
}

TEST_CASE("add_library_links picks the highest version and leaves existing links",
          "[archive][layout]") {
  TempDir tmp;
  tmp.write("lib/libx.so.12.1", "old");
  tmp.write("lib/libx.so.12.10", "new");
  tmp.write("lib/libx.so.11.9", "older major");
  tmp.write("lib/liby.so.2.0", "y");
  fs::create_symlink("liby.so.2.0", tmp.path() / "lib/liby.so.2");
  fs::create_symlink("elsewhere", tmp.path() / "lib/liby.so");
  CHECK(links_made(tmp.path()) == std::vector<std::string>{
                                      "lib/libx.so.11 -> libx.so.11.9",
                                      "lib/libx.so.12 -> libx.so.12.10",
                                      "lib/libx.so -> libx.so.12",
                                  });
  CHECK(fs::read_symlink(tmp.path() / "lib/liby.so") == "elsewhere");
}

TEST_CASE("add_library_links without a lib folder makes nothing", "[archive][layout]") {
  TempDir tmp;
  CHECK(links_made(tmp.path()).empty());
}

TEST_CASE("a wheel unpacked and linked works as a CUDA lib folder", "[archive][layout]") {
  TempDir tmp;
  const auto wheel = tmp.path() / "nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl";
  envkit::test::write_bytes(
      wheel,
      make_archive(Format::zip, {Entry::file("nvidia/cudnn/lib/libcudnn.so.9", "cudnn", 0755),
                                 Entry::file("nvidia/cudnn/lib/libcudnn_graph.so.9", "graph", 0755),
                                 Entry::file("nvidia/cudnn/include/cudnn.h", "h")}));
  const auto options = layout_options({.layout = Layout::nvidia_wheel,
                                       .package = "cudnn",
                                       .component = "cudnn",
                                       .wheel_root = "nvidia/cudnn"});
  auto result = envkit::archive::extract_file(wheel, tmp.path() / "prefix", options);
  REQUIRE(result.ok());
  CHECK(links_made(tmp.path() / "prefix") ==
        std::vector<std::string>{"lib/libcudnn.so -> libcudnn.so.9",
                                 "lib/libcudnn_graph.so -> libcudnn_graph.so.9"});
  CHECK(envkit::test::read_bytes(tmp.path() / "prefix/lib/libcudnn.so") == "cudnn");
  CHECK(envkit::test::mode_of(tmp.path() / "prefix/lib/libcudnn.so.9") == 0755);
}
