// Fuzz target: the ELF reader `doctor` runs on every library of a prefix
// (elf::read_elf, here on the file's bytes in memory).

#include "envkit/elf/elf_file.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace envkit;
  auto elf = elf::read_elf_bytes(fuzz::text_of(data, size), "libfuzz.so");
  if (!elf) {
    fuzz::check_refusal(elf.error());
    return 0;
  }
  (void)elf::describe(elf->identity);
  return 0;
}
