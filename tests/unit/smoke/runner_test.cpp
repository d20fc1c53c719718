// envkit-smoke's parts that need no GPU: which CUDA libraries the process mapped and from
// where, whether the libraries' versions agree, and NVRTC compiling the kernels, the last with
// /usr/local/cuda's real libraries where they exist.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "kernel_compiler.hpp"
#include "libraries.hpp"
#include "setup_error.hpp"
#include "stack.hpp"
#include "support/skip.hpp"

namespace envkit_smoke {
namespace {

namespace fs = std::filesystem;
using Catch::Contains;

const fs::path kCuda = "/usr/local/cuda";

std::string read(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST_CASE("mapped CUDA libraries are told apart by where they come from", "[smoke][runner]") {
  const std::string maps =
      "7f00-7f01 r--p 00000000 08:01 11 /opt/p/lib/libcublas.so.12.4.5.8\n"
      "7f01-7f02 r-xp 00001000 08:01 11 /opt/p/lib/libcublas.so.12.4.5.8\n"
      "7f02-7f03 r--p 00000000 08:01 12 /usr/local/cuda-12.2/lib64/libcublasLt.so.12.2.5.6\n"
      "7f03-7f04 r--p 00000000 08:01 13 /usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05\n"
      "7f04-7f05 r--p 00000000 08:01 14 /usr/lib/x86_64-linux-gnu/libz.so.1.2.13\n"
      "7f05-7f06 rw-p 00000000 00:00 0 \n"
      "7f06-7f07 r--p 00000000 08:01 15 /opt/p/lib/libcudnn_cnn.so.9 (deleted)\n"
      "7f07-7f08 r--p 00000000 08:01 16 /opt/prefix-other/lib/libnvrtc.so.12\n";
  const auto libraries = cuda_libraries_in_maps(maps, "/opt/p");
  REQUIRE(libraries.size() == 5);  // one each, libz is not CUDA's
  CHECK(libraries[0].name == "libcublas.so.12.4.5.8");
  CHECK(libraries[0].in_prefix);
  CHECK_FALSE(libraries[0].driver);
  CHECK(libraries[1].path == "/usr/local/cuda-12.2/lib64/libcublasLt.so.12.2.5.6");
  CHECK_FALSE(libraries[1].in_prefix);
  CHECK(libraries[2].name == "libcuda.so.535.104.05");
  CHECK(libraries[2].driver);
  CHECK(libraries[3].in_prefix);
  // A folder whose name only starts like the prefix's is outside it.
  CHECK(libraries[4].name == "libnvrtc.so.12");
  CHECK_FALSE(libraries[4].in_prefix);
}

StackVersions agreeing() {
  return {.nvrtc = "12.4",
          .cublas = "12.4.5",
          .cudnn = "9.1.0",
          .cudnn_cuda = "12.2",
          .nvrtc_major = 12,
          .cublas_major = 12,
          .cudnn_cuda_major = 12};
}

TEST_CASE("library versions agree with each other and with the lock", "[smoke][runner]") {
  CHECK(version_problems(agreeing(), {.cuda = "12.4.1", .cudnn = "9.1.0.70"}).empty());
  CHECK(version_problems(agreeing(), {}).empty());

  auto cudnn_for_11 = agreeing();
  cudnn_for_11.cudnn_cuda = "11.8";
  cudnn_for_11.cudnn_cuda_major = 11;
  auto problems = version_problems(cudnn_for_11, {});
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Contains("cuDNN 9.1.0 was built for CUDA 11.8, not 12"));

  problems = version_problems(agreeing(), {.cuda = "11.8.0", .cudnn = "8.9.7.29"});
  REQUIRE(problems.size() == 2);
  CHECK_THAT(problems[0], Contains("the lock's CUDA is 11.8.0 but NVRTC is CUDA 12.4"));
  CHECK_THAT(problems[1], Contains("the lock's cuDNN is 8.9.7.29 but the library is 9.1.0"));
}

TEST_CASE("compute capabilities parse as CUDA numbers its targets", "[smoke][runner]") {
  CHECK(parse_arch("8.6") == 86);
  CHECK(parse_arch("10.0") == 100);
  CHECK(arch_text(120) == "12.0");
  CHECK_THROWS_WITH(parse_arch("86"), Contains("not a compute capability: \"86\""));
  CHECK_THROWS_WITH(parse_arch("8.x"), Contains("not a compute capability"));
}

// The real CUDA stack under /usr/local/cuda, or a skip.
std::optional<StackPaths> real_stack() {
  const auto lib = kCuda / "lib64";
  StackPaths paths{.nvrtc = (lib / "libnvrtc.so").string(),
                   .cudnn = (lib / "libcudnn.so").string(),
                   .cublas = (lib / "libcublas.so").string(),
                   .also = {}};
  for (const auto& path : {paths.nvrtc, paths.cudnn, paths.cublas}) {
    if (!fs::exists(path)) {
      envkit::test::skip_test(envkit::test::SkipKind::expected, "no " + path);
      return std::nullopt;
    }
  }
  return paths;
}

TEST_CASE("the real NVRTC, cuDNN and cuBLAS open by path and report their versions",
          "[smoke][runner][cuda]") {
  const auto paths = real_stack();
  if (!paths) return;
  const Stack stack = open_stack(*paths);
  // The toolkit's own statement of its release: cuda.h's CUDA_VERSION (13000 for 13.0).
  const auto cuda_h = read(kCuda / "include" / "cuda.h");
  const auto defined = cuda_h.find("#define CUDA_VERSION ");
  REQUIRE(defined != std::string::npos);
  const int cuda_version = std::stoi(cuda_h.substr(defined + 21));
  CHECK(stack.versions.nvrtc == cuda_version_text(cuda_version));
  CHECK(
      version_problems(stack.versions, {.cuda = stack.versions.nvrtc + ".0", .cudnn = ""}).empty());
  // cuDNN's own header says which version the library must report.
  const auto header = read(kCuda / "include" / "cudnn_version.h");
  const auto define = [&](const std::string& name) {
    const auto at = header.find("#define " + name + " ");
    return std::stoi(header.substr(at + name.size() + 9));
  };
  CHECK(stack.versions.cudnn == std::to_string(define("CUDNN_MAJOR")) + "." +
                                    std::to_string(define("CUDNN_MINOR")) + "." +
                                    std::to_string(define("CUDNN_PATCHLEVEL")));
  const auto mapped = mapped_cuda_libraries(kCuda.string());
  CHECK(std::any_of(mapped.begin(), mapped.end(), [](const auto& library) {
    return library.name.starts_with("libcudnn.so") && library.in_prefix;
  }));
}

TEST_CASE("NVRTC compiles the smoke kernels to a cubin, or says which targets it has",
          "[smoke][runner][cuda]") {
  const auto paths = real_stack();
  if (!paths) return;
  const Stack stack = open_stack(*paths);
  const auto source = read(fs::path(ENVKIT_SOURCE_DIR) / "share/envkit/smoke/kernels.cuh");
  const auto oldest = oldest_supported_arch(stack.nvrtc);
  REQUIRE(oldest);
  const auto compiled = compile_kernels(stack.nvrtc, source, *oldest);
  CHECK(compiled.sass);
  CHECK(
      compiled.image.starts_with("\x7f"
                                 "ELF"));
  // Every kernel the program launches is in it, by its unmangled name.
  for (const char* kernel : {"bias_relu_forward", "relu_backward", "softmax_cross_entropy",
                             "column_sums", "sgd_update"}) {
    CHECK(compiled.image.find(kernel) != std::string::npos);
  }
  // An architecture older than this NVRTC's oldest is refused, with the ones it has.
  CHECK_THROWS_WITH(compile_kernels(stack.nvrtc, source, 30),
                    Contains("NVRTC could not compile the smoke kernels for sm_30") &&
                        Contains("this NVRTC compiles for sm_" + std::to_string(*oldest)));
  CHECK_THROWS_WITH(
      compile_kernels(stack.nvrtc, "this is not CUDA", *oldest),
      Contains("NVRTC could not compile the smoke kernels") && Contains("kernels.cuh"));
}

TEST_CASE("a library without the functions its role needs is named with what it lacks",
          "[smoke][runner][cuda]") {
  auto paths = real_stack();
  if (!paths) return;
  paths->cudnn = paths->cublas;  // cuBLAS where cuDNN should be
  CHECK_THROWS_WITH(open_stack(*paths), Contains("does not export cudnnGetVersion") &&
                                            Contains("not a cuDNN 8 or 9 library"));
  paths->cudnn = "/nonexistent/libcudnn.so.9";
  CHECK_THROWS_WITH(open_stack(*paths), Contains("cannot load /nonexistent/libcudnn.so.9"));
}

}  // namespace
}  // namespace envkit_smoke
