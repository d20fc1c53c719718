#include "envkit/store/kernel_scan.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <iterator>

#include "envkit/store/records.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

namespace envkit::store {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using test::TempDir;

const fs::path kCudaLib = "/usr/local/cuda/lib64";

// A prefix-like folder with `names` from /usr/local/cuda/lib64 in lib/ (hard
// links where the filesystem allows, else symlinks: nothing is copied), and
// the receipt files that name them.
std::vector<FileRecord> link_cuda_libraries(const fs::path& root,
                                            const std::vector<std::string>& names) {
  fs::create_directories(root / "lib");
  std::vector<FileRecord> files;
  for (const auto& name : names) {
    const auto source = fs::canonical(kCudaLib / name);
    std::error_code error;
    fs::create_hard_link(source, root / "lib" / name, error);
    if (error) fs::create_symlink(source, root / "lib" / name);
    files.push_back(
        {.path = "lib/" + name, .type = archive::EntryType::file, .size = fs::file_size(source)});
  }
  return files;
}

bool cuda_libraries_missing(const std::vector<std::string>& names) {
  for (const auto& name : names) {
    if (!fs::exists(kCudaLib / name)) {
      test::skip_test(test::SkipKind::expected, "no " + (kCudaLib / name).string());
      return true;
    }
  }
  return false;
}

PackageReceipt receipt_of(std::string name, PackageKernels kernels) {
  return {.name = std::move(name),
          .version = "1.0",
          .build = {},
          .packaging = "archive",
          .artifacts = {},
          .files = {},
          .kernels = std::move(kernels)};
}

PackageKernels one_file(std::string path, elf::KernelCoverage coverage) {
  return {.coverage = coverage, .files = {{.path = std::move(path), .coverage = coverage}}};
}

TEST_CASE("CUDA 13's cuBLASLt has no kernel for a Pascal GPU and runs on Hopper",
          "[store][kernels]") {
  const std::vector<std::string> names = {"libcublasLt.so.13", "libcudart.so.13"};
  if (cuda_libraries_missing(names)) return;
  TempDir prefix;
  auto files = link_cuda_libraries(prefix.path(), names);
  files.push_back({.path = "include/cublasLt.h", .type = archive::EntryType::file});

  const auto kernels = scan_kernels(prefix.path(), files);
  // libcudart holds no fatbinary: only cuBLASLt is a kernel file.
  REQUIRE(kernels.files.size() == 1);
  const auto& lt = kernels.files.front();
  CHECK(lt.path == "lib/libcublasLt.so.13");
  CHECK(lt.error.empty());
  CHECK(kernels.coverage == lt.coverage);
  INFO(describe(lt.coverage));
  CHECK_FALSE(lt.coverage.sass.empty());

  const std::vector<PackageReceipt> packages = {receipt_of("cuda", kernels)};
  const auto verdicts = judge_kernels(packages, {.gpus = {61, 90}, .driver_ptx_isa = "9.0"});
  REQUIRE(verdicts.size() == 2);
  CHECK(verdicts[0].gpu == 61);
  CHECK(verdicts[0].runs == elf::Runs::no_kernel);
  REQUIRE(verdicts[0].lacking.size() == 1);
  CHECK(verdicts[0].lacking.front().path == "lib/libcublasLt.so.13");
  const auto gap = describe_gap(verdicts[0], "9.0");
  CHECK_THAT(gap, Contains("cuda 1.0") && Contains("compute capability 6.1") &&
                      Contains("lib/libcublasLt.so.13 holds sm_") &&
                      Contains("no kernel image is available"));
  CHECK(verdicts[1].gpu == 90);
  CHECK(verdicts[1].runs == elf::Runs::sass);
  CHECK(verdicts[1].lacking.empty());
}

TEST_CASE("CUDA 13's cuBLAS and cuDNN have kernels for every GPU generation CUDA 13 supports",
          "[store][kernels]") {
  const std::vector<std::string> blas = {"libcublas.so.13", "libcublasLt.so.13"};
  const std::vector<std::string> dnn = {
      "libcudnn_adv.so.9", "libcudnn_cnn.so.9", "libcudnn_engines_precompiled.so.9",
      "libcudnn_engines_runtime_compiled.so.9", "libcudnn_ops.so.9"};
  if (cuda_libraries_missing(blas) || cuda_libraries_missing(dnn)) return;
  TempDir prefix;
  const std::vector<PackageReceipt> packages = {
      receipt_of("cuda", scan_kernels(prefix.path(), link_cuda_libraries(prefix.path(), blas))),
      receipt_of("cudnn", scan_kernels(prefix.path(), link_cuda_libraries(prefix.path(), dnn)))};
  CHECK(packages[0].kernels->files.size() == blas.size());
  CHECK(packages[1].kernels->files.size() == dnn.size());
  // Turing to Blackwell: T4, A100, RTX 3090, L4, H100, B200, RTX 5090.
  const auto verdicts =
      judge_kernels(packages, {.gpus = {75, 80, 86, 89, 90, 100, 120}, .driver_ptx_isa = "9.0"});
  REQUIRE(verdicts.size() == 14);
  for (const auto& verdict : verdicts) {
    INFO(verdict.package << " on " << elf::capability_text(verdict.gpu));
    CHECK(verdict.runs == elf::Runs::sass);
  }
}

TEST_CASE("only shared objects and bin/ programs with a fatbin section are read",
          "[store][kernels]") {
  const auto file = [](std::string path, bool executable = false) {
    return FileRecord{.path = std::move(path), .executable = executable};
  };
  CHECK(may_hold_kernels(file("lib/libcublasLt.so.13")));
  CHECK(may_hold_kernels(file("lib/libcudnn.so")));
  CHECK(may_hold_kernels(
      file("lib/python3.11/site-packages/torch/_C.cpython-311-x86_64-linux-gnu.so")));
  CHECK(may_hold_kernels(file("bin/nvcc", true)));
  CHECK_FALSE(may_hold_kernels(file("bin/nvcc.profile")));
  CHECK_FALSE(may_hold_kernels(file("include/cuda.h")));
  CHECK_FALSE(may_hold_kernels(file("lib/libcudadevrt.a")));
  CHECK_FALSE(may_hold_kernels(FileRecord{.path = "lib/libcudart.so",
                                          .type = archive::EntryType::symlink,
                                          .link_target = "libcudart.so.13"}));

  TempDir dir;
  CHECK_FALSE(has_fatbin_section(dir.write("libfake.so", "not an ELF file")));
  CHECK_FALSE(has_fatbin_section(dir.write("libtruncated.so", "\177ELF\2\1\1")));
  CHECK_FALSE(has_fatbin_section(dir.path() / "missing.so"));
  if (cuda_libraries_missing({"libcublasLt.so.13", "libcudart.so.13"})) return;
  CHECK(has_fatbin_section(kCudaLib / "libcublasLt.so.13"));
  CHECK_FALSE(has_fatbin_section(kCudaLib / "libcudart.so.13"));
}

TEST_CASE("a file whose fatbinary cannot be read is kept with the reason and not judged",
          "[store][kernels]") {
  if (cuda_libraries_missing({"libcudnn_cnn.so.9"})) return;
  // A real library (4 MB) whose first fatbinary says it is far larger than its section.
  std::ifstream in(kCudaLib / "libcudnn_cnn.so.9", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto magic = bytes.find("\x50\xed\x55\xba");
  REQUIRE(magic != std::string::npos);
  bytes.replace(magic + 8, 8, std::string(8, '\xff'));  // the fatbinary's size
  TempDir prefix;
  prefix.write("lib/libcut.so", bytes);
  const std::vector<FileRecord> files = {{.path = "lib/libcut.so"}};

  const auto kernels = scan_kernels(prefix.path(), files);
  REQUIRE(kernels.files.size() == 1);
  CHECK(kernels.files[0].path == "lib/libcut.so");
  CHECK_THAT(kernels.files[0].error, Contains("libcut.so"));
  CHECK(kernels.coverage.empty());
  const std::vector<PackageReceipt> packages = {receipt_of("cudnn", kernels)};
  CHECK(judge_kernels(packages, {.gpus = {90}}).empty());
}

TEST_CASE("PTX runs through the driver's JIT only when its ISA is not newer than the driver's",
          "[store][kernels]") {
  const elf::KernelCoverage ptx_only{.sass = {}, .ptx = {80}, .newest_ptx_isa = "8.8"};
  const std::vector<PackageReceipt> packages = {
      receipt_of("jitted", one_file("lib/libjit.so", ptx_only))};
  const auto on = [&](std::string isa) {
    return judge_kernels(packages, {.gpus = {86}, .driver_ptx_isa = std::move(isa)}).at(0).runs;
  };
  CHECK(on(driver_ptx_isa(specs::Version::parse("12.9").value())) == elf::Runs::ptx_jit);
  CHECK(on(driver_ptx_isa(specs::Version::parse("12.4").value())) == elf::Runs::ptx_too_new);
  const auto verdict = judge_kernels(packages, {.gpus = {86}, .driver_ptx_isa = "8.4"}).at(0);
  CHECK_THAT(describe_gap(verdict, "8.4"),
             Contains("PTX compute_80 (ISA 8.8)") && Contains("PTX ISA 8.4 or older"));
}

TEST_CASE("the driver's newest PTX ISA follows NVIDIA's PTX release history", "[store][kernels]") {
  const auto isa = [](std::string_view cuda) {
    return driver_ptx_isa(specs::Version::parse(cuda).value());
  };
  CHECK(isa("10.2") == "6.5");
  CHECK(isa("11.8") == "7.8");
  CHECK(isa("12.4") == "8.4");
  CHECK(isa("12.6") == "8.5");  // CUDA 12.6 brought no new PTX ISA
  CHECK(isa("12.8") == "8.7");
  CHECK(isa("13.0") == "9.0");
  CHECK(isa("99.0").empty());  // newer than the table: its PTX is taken to JIT
}

TEST_CASE("a package is judged by all its kernel files together", "[store][kernels]") {
  const elf::KernelCoverage modern{.sass = {70, 75, 80, 86, 90, 100, 120}};
  const elf::KernelCoverage pascal{.sass = {60}, .ptx = {60}, .newest_ptx_isa = "8.0"};
  const auto package = [](std::string name, std::vector<KernelFile> files) {
    PackageKernels kernels{.coverage = {}, .files = std::move(files)};
    for (const auto& file : kernels.files)
      kernels.coverage.merge(file.coverage);
    return receipt_of(std::move(name), std::move(kernels));
  };
  const std::vector<PackageReceipt> packages = {
      package("torch", {{.path = "lib/libtorch_cuda.so", .coverage = modern},
                        {.path = "lib/libc10_cuda.so", .coverage = modern},
                        {.path = "lib/libbad.so", .error = "damaged"}}),
      package("mixed", {{.path = "lib/libnew.so", .coverage = modern},
                        {.path = "lib/libold.so", .coverage = pascal}}),
      receipt_of("numpy", PackageKernels{})};
  const auto verdicts = judge_kernels(packages, {.gpus = {61}});
  REQUIRE(verdicts.size() == 2);  // numpy has no kernel file: not judged
  CHECK(verdicts[0].package == "torch 1.0");
  CHECK(verdicts[0].runs == elf::Runs::no_kernel);
  // Each file that holds kernels is named; the unreadable one is not judged.
  REQUIRE(verdicts[0].lacking.size() == 2);
  CHECK(verdicts[0].lacking[0].path == "lib/libtorch_cuda.so");
  CHECK(verdicts[0].lacking[1].path == "lib/libc10_cuda.so");
  CHECK(verdicts[1].package == "mixed 1.0");
  CHECK(verdicts[1].runs == elf::Runs::sass);  // libold.so's sm_60 runs on 6.1
  CHECK(describe(modern) == "sm_70 sm_75 sm_80 sm_86 sm_90 sm_100 sm_120, no PTX");
  CHECK_THAT(what_covers(61), Contains("sm_60 or sm_61") && Contains("compute_61 or older"));
}

TEST_CASE("receipts keep what each kernel file holds, and older receipts read without it",
          "[store][kernels]") {
  TempDir root;
  elf::KernelCoverage coverage{.sass = {80, 90}, .ptx = {90, 100}, .newest_ptx_isa = "8.8"};
  coverage.sass_arch_specific = {90};
  coverage.ptx_family_specific = {100};
  const PackageKernels kernels{
      .coverage = coverage,
      .files = {{.path = "lib/libk.so", .coverage = coverage},
                {.path = "lib/libbad.so", .error = "the fatbinary at 0x40 is cut short"}}};
  PrefixState state{.generation = 1, .platform = "linux-x86_64"};
  state.packages.push_back(receipt_of("withkernels", kernels));
  state.packages.push_back(receipt_of("old", kernels));
  state.packages.back().kernels.reset();
  REQUIRE(write_state(root.path(), state));

  auto read = read_state(root.path());
  REQUIRE(read);
  REQUIRE(*read);
  REQUIRE((*read)->packages.size() == 2);
  const auto& with = (*read)->packages[0];
  REQUIRE(with.kernels);
  CHECK(*with.kernels == kernels);
  CHECK(describe(with.kernels->files[0].coverage) ==
        "sm_80 sm_90a, PTX compute_90 compute_100f (ISA 8.8)");
  CHECK_FALSE((*read)->packages[1].kernels);

  // A receipt with a target that is not one is damaged, and says so.
  root.write(".envkit/receipts/withkernels.json",
             R"({"name": "withkernels", "version": "1.0", "artifacts": [], "files": [],
                 "kernels": {"sass": ["sm_9x"], "ptx": [], "files": []}})");
  auto damaged = read_state(root.path());
  REQUIRE_FALSE(damaged);
  CHECK_THAT(damaged.error().message(), Contains("withkernels.json"));
}

TEST_CASE("reading /usr/local/cuda's libraries takes seconds, not minutes", "[store][kernels]") {
  std::vector<FileRecord> files;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(kCudaLib, error)) {
    if (entry.is_regular_file() && !entry.is_symlink())
      files.push_back({.path = entry.path().filename().string()});
  }
  if (files.empty()) {
    test::skip_test(test::SkipKind::expected, "no libraries in " + kCudaLib.string());
    return;
  }
  const auto started = std::chrono::steady_clock::now();
  const auto kernels = scan_kernels(kCudaLib, files);
  const auto took = std::chrono::steady_clock::now() - started;
  WARN(fmt::format("{} files, {} with kernels, read in {} ms", files.size(), kernels.files.size(),
                   std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
  CHECK(took < std::chrono::minutes(1));
  for (const auto& file : kernels.files)
    CHECK(file.error.empty());
}

}  // namespace
}  // namespace envkit::store
