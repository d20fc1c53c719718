#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"

namespace envkit::elf {

enum class ElfClass { elf32, elf64 };
enum class ByteOrder { little, big };

// What ld.so compares before it accepts a file as a library for an object:
// a 64-bit x86-64 program cannot load a 32-bit or an AArch64 library.
struct ElfIdentity {
  ElfClass elf_class = ElfClass::elf64;
  ByteOrder byte_order = ByteOrder::little;
  std::uint16_t machine = 0;  // e_machine: 62 is x86-64, 183 AArch64, 3 i386 (<elf.h> EM_*)

  bool operator==(const ElfIdentity&) const = default;
};

// "64-bit little-endian x86-64", for messages.
[[nodiscard]] std::string describe(const ElfIdentity& identity);

// The dynamic-linking facts of one ELF shared object or executable.
struct ElfFile {
  std::filesystem::path path;  // as given to read_elf
  ElfIdentity identity;
  std::uint16_t type = 0;            // e_type: 2 executable, 3 shared object (or PIE)
  bool has_dynamic_section = false;  // false for static executables
  std::optional<std::string> soname;
  std::vector<std::string> needed;     // DT_NEEDED, in the file's order
  std::optional<std::string> rpath;    // DT_RPATH, raw ($ORIGIN not expanded)
  std::optional<std::string> runpath;  // DT_RUNPATH, raw
  bool nodeflib = false;               // DF_1_NODEFLIB: ld.so skips the system dirs for it
};

// Whether `path` starts with the ELF magic bytes (false when it cannot be read).
// Tells a shared object from a linker script named libc.so.
[[nodiscard]] bool has_elf_magic(const std::filesystem::path& path);

// Reads only the ELF header (the first 64 bytes).
[[nodiscard]] Result<ElfIdentity> read_elf_identity(const std::filesystem::path& path);

// Reads the ELF header, the program headers, the dynamic section and its string
// table with pread, never the whole file (CUDA libraries are hundreds of MB).
// Supports 32- and 64-bit, little- and big-endian files. Errors name the file;
// for a truncated or malformed file, also what is wrong and at which offset.
[[nodiscard]] Result<ElfFile> read_elf(const std::filesystem::path& path);

// The same from the whole file's bytes in memory (the fuzz target's entry
// point); `name` is the path the result and errors give.
[[nodiscard]] Result<ElfFile> read_elf_bytes(std::string_view bytes,
                                             const std::filesystem::path& name);

}  // namespace envkit::elf
