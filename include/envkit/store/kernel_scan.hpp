#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/elf/fatbin.hpp"
#include "envkit/specs/version.hpp"
#include "envkit/store/records.hpp"

// Kernel coverage of installed packages (docs/doctor.md, "Kernel coverage"):
// what the fatbinaries of a package's CUDA files hold, read once at install
// into its receipt, and which GPUs that gives no kernel. `envkit install`
// stops before the switch on such a gap; `envkit doctor` names it.
namespace envkit::store {

// Whether a receipt's file is one that can carry kernels: a regular file named
// like a shared object (`libcublasLt.so.13`, `_C.cpython-311-x86_64-linux-gnu.so`)
// or an executable in bin/. Only those are opened.
[[nodiscard]] bool may_hold_kernels(const FileRecord& file);

// Whether the ELF file at `path` has a section that says it holds kernels
// (`.nv_fatbin`, `.nvFatBinSegment`): reads the ELF header, the
// section headers and their names with pread, never the rest. False for
// anything else (not ELF, no such section, unreadable).
[[nodiscard]] bool has_fatbin_section(const std::filesystem::path& path);

// The kernels of one receipt file under `root`: nullopt unless it may hold
// kernels, has a fatbin section and a fatbinary in it (read with
// elf::read_fatbins); one whose fatbinaries cannot be read has the reader's error.
[[nodiscard]] std::optional<KernelFile> scan_kernel_file(const std::filesystem::path& root,
                                                         const FileRecord& file);
// A package's kernel files, sorted by path, with their coverage together.
[[nodiscard]] PackageKernels package_kernels(std::vector<KernelFile> files);
// Both for each of `files` (a package's receipt files, relative to `root`).
[[nodiscard]] PackageKernels scan_kernels(const std::filesystem::path& root,
                                          std::span<const FileRecord> files);

// The coverage of the kernel files among `paths` (an artifact's files, prefix-relative).
[[nodiscard]] elf::KernelCoverage coverage_among(const PackageKernels& kernels,
                                                 std::span<const FileRecord> paths);

// The newest PTX ISA a driver supporting CUDA `driver_cuda` JIT-compiles
// ("8.8" for 12.9): NVIDIA's PTX ISA release history. "" for a CUDA newer than
// the table knows (its PTX is then taken to JIT).
[[nodiscard]] std::string driver_ptx_isa(const specs::Version& driver_cuda);

// The GPUs kernels are judged for, and how the driver JITs PTX.
struct KernelTargets {
  std::vector<elf::Arch> gpus;  // sorted, unique; empty: nothing to judge
  std::string driver_ptx_isa;   // "" when unknown: PTX is taken to JIT
  std::string source;           // "this machine's GPUs", "envkit.lock `system.cuda-arch`"
};

// One package on one GPU.
struct KernelVerdict {
  std::string name;     // the package's: "torch"
  std::string package;  // as messages name it: "torch 2.8.0 (cu128)"
  elf::Arch gpu = 0;
  elf::Runs runs = elf::Runs::sass;  // from all its files together
  // When it has no kernel the GPU runs (ptx_too_new, no_kernel): its kernel files,
  // with what each holds.
  std::vector<KernelFile> lacking;
};

// Every package with kernels on every GPU of `targets`, judged by all its files
// together: a library may carry kernels for fewer GPUs than the package's main
// one (CUDA 13's libcufftw.so holds sm_75 alone). Packages without a fatbinary,
// and files that could not be read, are not judged.
[[nodiscard]] std::vector<KernelVerdict> judge_kernels(std::span<const PackageReceipt> packages,
                                                       const KernelTargets& targets);

// Each target as nvcc's -gencode and cuobjdump name it: SASS "sm_80", "sm_90a";
// PTX "compute_90", "compute_100f" (receipts store coverage so).
[[nodiscard]] std::vector<std::string> sass_targets(const elf::KernelCoverage& coverage);
[[nodiscard]] std::vector<std::string> ptx_targets(const elf::KernelCoverage& coverage);
// The coverage of those names; nullopt for a name that is not one.
[[nodiscard]] std::optional<elf::KernelCoverage> coverage_of_targets(
    std::span<const std::string> sass, std::span<const std::string> ptx, std::string ptx_isa);

// "sm_70 sm_75 sm_80, no PTX"; "sm_80 sm_90a, PTX compute_90 (ISA 8.8)".
[[nodiscard]] std::string describe(const elf::KernelCoverage& coverage);

// What a build needs to have a kernel for `gpu`: "SASS for sm_60 or sm_61, or
// PTX for compute_61 or older".
[[nodiscard]] std::string what_covers(elf::Arch gpu);

// A failing verdict in one sentence: the package, the GPU, each lacking file
// and what it holds ("no kernel image is available for execution on the
// device" named before it happens).
[[nodiscard]] std::string describe_gap(const KernelVerdict& verdict,
                                       std::string_view driver_ptx_isa);

// A package as verdicts name it: "torch 2.8.0 (cu128)".
[[nodiscard]] std::string package_label(const PackageReceipt& receipt);

}  // namespace envkit::store
