// Fuzz target: the fatbin reader install and doctor run on every CUDA library
// (elf::read_fatbins, here on the file's bytes in memory). Seeds: a real
// cuBLASLt fatbinary's headers in a small ELF file, and hostile variants.

#include "envkit/elf/fatbin.hpp"

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace envkit;
  auto fatbins = elf::read_fatbins_bytes(fuzz::text_of(data, size), "libfuzz.so");
  if (!fatbins) {
    fuzz::check_refusal(fatbins.error());
    return 0;
  }
  const elf::KernelCoverage coverage = elf::coverage_of(*fatbins);
  for (const elf::Arch gpu : {61U, 75U, 80U, 86U, 90U, 100U, 120U}) {
    (void)elf::runs_on(coverage, gpu, "8.5");
  }
  elf::KernelCoverage merged = coverage;
  merged.merge(coverage);
  if (!(merged == coverage)) fuzz::finding("merging a coverage with itself changed it");
  for (const auto& fatbin : *fatbins) {
    for (const auto& entry : fatbin.entries) {
      if (elf::parse_capability(elf::capability_text(entry.arch)) != entry.arch) {
        fuzz::finding("an entry's arch does not read back from its text", elf::target_name(entry));
      }
    }
  }
  return 0;
}
