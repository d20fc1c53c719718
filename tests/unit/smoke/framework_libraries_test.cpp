// The framework smoke test's library report: /proc/<pid>/maps parsed, CUDA
// libraries named, and each checked against the prefix and the lock; with this
// process's own maps after it dlopen()s a real CUDA library from /usr/local/cuda.
#include <dlfcn.h>

#include <catch2/catch.hpp>

#include "envkit/smoke/framework.hpp"
#include "envkit/sys/fs.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
namespace smoke = envkit::smoke;
using Catch::Matchers::Contains;
using Kind = smoke::LibraryProblem::Kind;

constexpr std::string_view kCudart = "/usr/local/cuda/lib64/libcudart.so.13";

envkit::specs::Version v(std::string_view text) {
  return envkit::specs::Version::parse(text).value();
}

smoke::MappedFile mapped(const fs::path& path, std::uint64_t inode) {
  return {path, "103:02", inode};
}

std::vector<Kind> kinds(const smoke::LibraryReport& report) {
  std::vector<Kind> out;
  for (const auto& problem : report.problems)
    out.push_back(problem.kind);
  return out;
}

std::string maps_of_this_process() {
  return envkit::sys::read_file("/proc/self/maps").value();
}

// A library dlopen()ed for one test and closed after it.
struct Loaded {
  void* handle;
  explicit Loaded(const fs::path& path) : handle(::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    INFO(::dlerror());
    REQUIRE(handle != nullptr);
  }
  ~Loaded() { ::dlclose(handle); }
  Loaded(const Loaded&) = delete;
  Loaded& operator=(const Loaded&) = delete;
};

}  // namespace

TEST_CASE("maps lines give each mapped file once, with paths as the kernel wrote them",
          "[smoke][framework]") {
  const std::string maps =
      "55d0c0a00000-55d0c0a28000 r--p 00000000 103:02 1317 /usr/bin/python3.11\n"
      "55d0c0a28000-55d0c0b00000 r-xp 00028000 103:02 1317 /usr/bin/python3.11\n"
      "55d0c1e5a000-55d0c1f7b000 rw-p 00000000 00:00 0                          [heap]\n"
      "7f3a10000000-7f3a10021000 rw-p 00000000 00:00 0 \n"
      "7f3a20000000-7f3a20100000 r--p 00000000 103:02 99 /opt/my envs/lib/libcublas.so.12\n"
      "7f3a30000000-7f3a30100000 r--p 00000000 103:02 77 /tmp/lib/libcudnn.so.9 (deleted)\n"
      "7f3a40000000-7f3a40001000 r--s 00000000 00:05 0 /dev/zero (deleted)\n"
      "7ffd4b9e0000-7ffd4b9e4000 r--p 00000000 00:00 0                          [vvar]\n"
      "this is not a maps line\n";
  const auto files = smoke::parse_proc_maps(maps);
  REQUIRE(files.size() == 3);
  CHECK(files[0].path == "/usr/bin/python3.11");
  CHECK(files[0].device == "103:02");
  CHECK(files[0].inode == 1317);
  CHECK(files[1].path == "/opt/my envs/lib/libcublas.so.12");
  CHECK(files[2].path == "/tmp/lib/libcudnn.so.9");
}

TEST_CASE("CUDA libraries are named by their file's stem, with the version it carries",
          "[smoke][framework]") {
  using Name = std::optional<std::pair<std::string, std::string>>;
  CHECK(smoke::cuda_library_name("libcublasLt.so.12.4.5.8") == Name({"libcublasLt", "12.4.5.8"}));
  CHECK(smoke::cuda_library_name("libcudart.so.13") == Name({"libcudart", "13"}));
  CHECK(smoke::cuda_library_name("libcudart-d0da41ae.so.11.0") == Name({"libcudart", "11.0"}));
  CHECK(smoke::cuda_library_name("libcudnn_cnn_infer.so.8") == Name({"libcudnn_cnn_infer", "8"}));
  CHECK(smoke::cuda_library_name("libnvrtc-builtins.so.13.0") ==
        Name({"libnvrtc-builtins", "13.0"}));
  CHECK(smoke::cuda_library_name("libcuda.so.1") == Name({"libcuda", "1"}));
  CHECK(smoke::cuda_library_name("libnccl.so.2") == Name({"libnccl", "2"}));
  CHECK_FALSE(smoke::cuda_library_name("libc.so.6"));
  CHECK_FALSE(smoke::cuda_library_name("libcudaxx.so.1"));
  CHECK_FALSE(smoke::cuda_library_name("libtorch_cuda.so"));
  CHECK_FALSE(smoke::cuda_library_name("libcudart.sox"));
  CHECK_FALSE(smoke::cuda_library_name("libcudart_static.a"));
}

TEST_CASE("a library from outside the prefix, a second copy and other versions are problems",
          "[smoke][framework]") {
  envkit::test::TempDir dir;
  const auto prefix = dir.path() / "env";
  fs::create_directories(prefix / "lib");
  const auto site = prefix / "lib/python3.11/site-packages";
  const smoke::LockedStack locked{.cuda = v("12.4.1"), .cudnn = v("9.1.0.70")};
  const smoke::FrameworkFacts torch{
      .name = "torch", .module = site / "torch/__init__.py", .cuda = "12.4", .cudnn = "9.1.0"};

  SECTION("all from the prefix, of the lock's versions: no problem") {
    const std::vector<smoke::MappedFile> files = {
        mapped(site / "torch/lib/libtorch_cuda.so", 1),
        mapped(site / "nvidia/cuda_runtime/lib/libcudart.so.12", 2),
        mapped(site / "nvidia/cublas/lib/libcublasLt.so.12", 3),
        mapped(prefix / "lib/libcudnn.so.9.1.0", 4),
        mapped("/usr/lib/x86_64-linux-gnu/libcuda.so.580.82.07", 5)};
    const auto report = smoke::check_loaded_libraries(files, prefix, locked, torch);
    CHECK(report.problems.empty());
    REQUIRE(report.libraries.size() == 4);  // libtorch_cuda is the framework's, not CUDA's
    CHECK(report.libraries[0].name == "libcudart");
    CHECK(report.libraries[0].in_prefix);
    CHECK(report.libraries[2].version == "9.1.0");
    CHECK(report.libraries[3].name == "libcuda");
    CHECK_FALSE(report.libraries[3].in_prefix);  // the driver's: expected outside
  }
  SECTION("the machine's libcublasLt, and two libcublas files") {
    const std::vector<smoke::MappedFile> files = {
        mapped(site / "nvidia/cublas/lib/libcublas.so.12", 3),
        mapped("/usr/local/cuda-12.4/lib64/libcublas.so.12", 40),
        mapped("/usr/local/cuda-12.4/lib64/libcublasLt.so.12", 41)};
    const auto report = smoke::check_loaded_libraries(files, prefix, locked, torch);
    CHECK(kinds(report) ==
          std::vector<Kind>{Kind::outside_prefix, Kind::outside_prefix, Kind::duplicate});
    CHECK(report.problems[1].message ==
          "libcublasLt was loaded from outside the prefix: "
          "/usr/local/cuda-12.4/lib64/libcublasLt.so.12");
    CHECK_THAT(report.problems[2].message, Contains("2 different libcublas files"));
    CHECK(report.problems[2].path == "/usr/local/cuda-12.4/lib64/libcublas.so.12");
  }
  SECTION("an external CUDA is expected from outside, but not an external cuDNN's CUDA") {
    auto external = locked;
    external.cuda_external = true;
    const std::vector<smoke::MappedFile> files = {
        mapped("/usr/local/cuda-12.4/lib64/libcublas.so.12", 40),
        mapped("/usr/lib/x86_64-linux-gnu/libcudnn.so.9", 41)};
    const auto report = smoke::check_loaded_libraries(files, prefix, external, torch);
    CHECK(kinds(report) == std::vector<Kind>{Kind::outside_prefix});
    CHECK(report.problems[0].path == "/usr/lib/x86_64-linux-gnu/libcudnn.so.9");
  }
  SECTION("sonames and stated versions of another CUDA or cuDNN") {
    const std::vector<smoke::MappedFile> files = {
        mapped(site / "nvidia/cuda_runtime/lib/libcudart.so.11.0", 2),
        mapped(site / "nvidia/cufft/lib/libcufft.so.11", 3),  // cuFFT's own numbering
        mapped(site / "nvidia/cudnn/lib/libcudnn.so.8", 4)};
    auto old_torch = torch;
    old_torch.cuda = "11.8";
    old_torch.cudnn = "8.7.0";
    const auto report = smoke::check_loaded_libraries(files, prefix, locked, old_torch);
    CHECK(kinds(report) ==
          std::vector<Kind>{Kind::version, Kind::version, Kind::version, Kind::version});
    CHECK_THAT(report.problems[0].message, Contains("libcudart of CUDA 11"));
    CHECK_THAT(report.problems[0].message, Contains("the lock's CUDA is 12.4.1"));
    CHECK_THAT(report.problems[1].message, Contains("the lock's cuDNN is 9.1.0.70"));
    CHECK(report.problems[2].message == "torch states CUDA 11.8, but the lock's CUDA is 12.4.1");
  }
  SECTION("the toolkit's stub libcuda, and a framework from a user site-packages") {
    const std::vector<smoke::MappedFile> files = {
        mapped("/usr/local/cuda-12.4/lib64/stubs/libcuda.so", 9)};
    auto user_torch = torch;
    user_torch.module = "/home/me/.local/lib/python3.11/site-packages/torch/__init__.py";
    const auto report = smoke::check_loaded_libraries(files, prefix, locked, user_torch);
    CHECK(kinds(report) == std::vector<Kind>{Kind::driver_stub, Kind::framework_outside});
  }
}

TEST_CASE(
    "this process's maps show a real CUDA library loaded from the prefix and another "
    "from outside",
    "[smoke][framework]") {
  std::error_code ec;
  if (!fs::exists(kCudart, ec)) {
    envkit::test::skip_test(envkit::test::SkipKind::expected,
                            std::string(kCudart) + " is absent (no CUDA toolkit here)");
    return;
  }
  envkit::test::TempDir dir;
  const auto prefix = dir.path() / "env";
  fs::create_directories(prefix / "lib");
  fs::copy_file(kCudart, prefix / "lib/libcudart.so.13");
  const smoke::LockedStack locked{.cuda = v("13.0")};  // /usr/local/cuda is 13.0

  const Loaded ours(prefix / "lib/libcudart.so.13");
  auto report = smoke::check_loaded_libraries(smoke::parse_proc_maps(maps_of_this_process()),
                                              prefix, locked, {});
  REQUIRE(report.libraries.size() == 1);
  CHECK(report.libraries[0].name == "libcudart");
  CHECK(report.libraries[0].path == fs::canonical(prefix / "lib/libcudart.so.13"));
  CHECK(report.libraries[0].in_prefix);
  CHECK(report.libraries[0].version == "13");
  CHECK(report.problems.empty());

  const Loaded machines(kCudart);  // the same soname, another file
  report = smoke::check_loaded_libraries(smoke::parse_proc_maps(maps_of_this_process()), prefix,
                                         locked, {});
  REQUIRE(report.libraries.size() == 2);
  // In the maps' order, by address: one from each place.
  CHECK(report.libraries[0].in_prefix != report.libraries[1].in_prefix);
  CHECK(kinds(report) == std::vector<Kind>{Kind::outside_prefix, Kind::duplicate});
  CHECK(report.problems[0].path == fs::canonical(kCudart));
  CHECK(report.problems[1].path == fs::canonical(kCudart));  // the copy to be rid of
}
