#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"

// Which GPUs a CUDA binary has kernels for, read from its fatbinaries (the
// `.nv_fatbin` section and fatbinaries embedded elsewhere): the SASS of each
// compute capability and the PTX of each virtual architecture (docs/doctor.md).
namespace envkit::elf {

// A compute capability as CUDA numbers its targets: 6.1 -> 61, 9.0 -> 90,
// 10.0 -> 100, 12.0 -> 120 (major * 10 + minor).
using Arch = unsigned;

[[nodiscard]] constexpr Arch arch_of(unsigned major, unsigned minor) {
  return major * 10 + minor;
}
// "6.1" for 61, "10.0" for 100.
[[nodiscard]] std::string capability_text(Arch arch);
// 61 from "6.1"; nullopt for anything else.
[[nodiscard]] std::optional<Arch> parse_capability(std::string_view text);
// Whether PTX ISA `a` ("8.5") is newer than `b` ("9.0"), numerically; an
// unreadable version compares as 0.0.
[[nodiscard]] bool ptx_isa_newer(std::string_view a, std::string_view b);

// One entry of a fatbinary (docs/fatbin.md: the entry header's fields).
struct FatbinEntry {
  enum class Kind { sass, ptx };
  Kind kind = Kind::sass;
  Arch arch = 0;               // sm_XY for SASS, compute_XY for PTX
  bool arch_specific = false;  // sm_90a / compute_100a: runs on exactly that capability
  // sm_100f / compute_100f: runs on the capabilities of the same major with a minor
  // >= its own (for SASS that is any SASS's reach; PTX of it JITs to no other major).
  bool family_specific = false;
  std::string ptx_isa;  // PTX entries: the ISA version ("8.5"); empty for SASS
  bool compressed = false;
};

// "sm_90a", "compute_100f", "sm_75": the target as nvcc's -gencode names it.
[[nodiscard]] std::string target_name(const FatbinEntry& entry);

// One fatbinary found in the file, where it starts.
struct EmbeddedFatbin {
  std::uint64_t offset = 0;  // in the file
  std::string section;       // the ELF section that holds it (".nv_fatbin", ".rodata", ...)
  std::vector<FatbinEntry> entries;
  // Entries of other kinds, which the driver does not load as they are: LTO IR
  // (kind 8, for nvJitLink) and the like. Not in `entries`.
  std::size_t other_entries = 0;
};

// What a file, a package or a prefix can run on: sorted, without duplicates.
struct KernelCoverage {
  std::vector<Arch> sass;      // every SASS capability, arch-specific ones included
  std::vector<Arch> ptx;       // every PTX virtual architecture
  std::string newest_ptx_isa;  // the newest PTX ISA among the PTX entries ("" when none)
  // Where an arch's widest target is narrower than plain sm_XY / compute_XY
  // (each a subset of `sass` or `ptx`): SASS only as sm_XYa (runs on exactly
  // XY), PTX only as compute_XYa (JITs for exactly XY) or at most as
  // compute_XYf (JITs within major X). Empty for the usual builds.
  std::vector<Arch> sass_arch_specific;
  std::vector<Arch> ptx_arch_specific;
  std::vector<Arch> ptx_family_specific;

  [[nodiscard]] bool empty() const { return sass.empty() && ptx.empty(); }
  void merge(const KernelCoverage& other);
  friend bool operator==(const KernelCoverage&, const KernelCoverage&) = default;
};

// Every fatbinary in the ELF file at `path`, read with bounded memory and time.
// A file with none gives an empty list; a malformed one an error naming the
// file, the offset and what was wrong.
[[nodiscard]] Result<std::vector<EmbeddedFatbin>> read_fatbins(const std::filesystem::path& path);
// The same from bytes in memory (the fuzz target); `name` is what errors give.
[[nodiscard]] Result<std::vector<EmbeddedFatbin>> read_fatbins_bytes(
    std::string_view bytes, const std::filesystem::path& name);

// Whether the ELF file at `path` has a section that says it holds kernels the
// CUDA runtime loads (`.nv_fatbin`, `.nvFatBinSegment`): reads the ELF header,
// the section headers and their names, never the rest. False for anything else
// (not ELF, no such section, unreadable).
[[nodiscard]] bool has_fatbin_sections(const std::filesystem::path& path);

[[nodiscard]] KernelCoverage coverage_of(std::span<const EmbeddedFatbin> fatbins);

// How a GPU of capability `gpu` would get a kernel from `coverage`.
enum class Runs {
  sass,         // SASS of the same major, minor <= the GPU's (or exactly it, arch-specific)
  ptx_jit,      // PTX of a virtual arch <= the GPU's, JIT-compiled by the driver
  ptx_too_new,  // only PTX, of an ISA newer than the driver can JIT
  no_kernel     // "no kernel image is available for execution on the device"
};
// `driver_ptx_isa`: the newest PTX ISA the driver JITs ("" when unknown: PTX is assumed to JIT).
// The coverage's newest PTX ISA stands for all of its PTX (one build's PTX shares its nvcc's ISA).
[[nodiscard]] Runs runs_on(const KernelCoverage& coverage, Arch gpu,
                           std::string_view driver_ptx_isa = {});

}  // namespace envkit::elf
