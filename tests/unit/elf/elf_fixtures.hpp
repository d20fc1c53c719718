#pragma once
// Real ELF files for the elf tests: shared libraries built with the host C
// compiler, tiny hand-made ELF files for what the compiler will not make
// (other classes, machines, byte orders, broken files), and readelf as an
// independent reader to compare with.

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <source_location>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/elf/elf_file.hpp"
#include "envkit/sys/process.hpp"
#include "support/skip.hpp"

namespace envkit::test {

// The host C compiler, when there is one.
inline std::optional<std::filesystem::path> c_compiler() {
  if (auto cc = sys::find_on_path("cc")) return cc;
  return sys::find_on_path("gcc");
}

// Whether the tests that build libraries can run; records the skip where they
// cannot (scripts/setup installs build-essential).
inline bool has_c_compiler(std::source_location where = std::source_location::current()) {
  if (c_compiler()) return true;
  skip_test(SkipKind::setup_should_provide,
            "no C compiler (cc or gcc) on PATH to build the test's libraries (scripts/setup "
            "installs build-essential)",
            where);
  return false;
}

// Compiles `source` (C) into `output` with `cc -fPIC <flags>`; REQUIREs success.
inline std::filesystem::path compile(const std::filesystem::path& output, std::string_view source,
                                     const std::vector<std::string>& flags) {
  const auto cc = c_compiler();
  REQUIRE(cc);
  std::filesystem::create_directories(output.parent_path());
  const auto source_file = output.parent_path() / (output.filename().string() + ".c");
  {
    std::ofstream out(source_file);
    out << source;
  }
  std::vector<std::string> argv{cc->string(), "-fPIC", "-o", output.string(), source_file.string()};
  argv.insert(argv.end(), flags.begin(), flags.end());
  auto run = sys::run_process(argv);
  REQUIRE(run);
  INFO(run->err);
  REQUIRE(run->exit_code == 0);
  std::filesystem::remove(source_file);
  return output;
}

// A shared library `dir/soname` exporting `symbol`, linked with `flags`
// (-L/-l for what it needs, -Wl,-rpath,...).
inline std::filesystem::path shared_library(const std::filesystem::path& dir,
                                            const std::string& soname, const std::string& symbol,
                                            std::vector<std::string> flags = {}) {
  flags.insert(flags.begin(), {"-shared", "-Wl,--no-as-needed", "-Wl,-soname," + soname});
  return compile(dir / soname, "int " + symbol + "(void) { return 1; }\n", flags);
}

// The class and machine of this test binary: what the compiler makes here.
inline elf::ElfIdentity host_identity() {
  auto identity = elf::read_elf_identity(std::filesystem::read_symlink("/proc/self/exe"));
  REQUIRE(identity);
  return *identity;
}

// An ELF machine other than this host's, for files ld.so must pass over.
inline std::uint16_t other_machine() {
  return host_identity().machine == 183 ? 62 : 183;  // x86-64 or AArch64
}

// What a hand-made ELF file holds.
struct MiniElf {
  elf::ElfClass elf_class = elf::ElfClass::elf64;
  elf::ByteOrder byte_order = elf::ByteOrder::little;
  std::uint16_t machine = 62;  // EM_X86_64
  std::vector<std::string> needed;
  std::optional<std::string> soname, rpath, runpath;
  bool strtab_outside_segments = false;  // DT_STRTAB pointing at no PT_LOAD
};

// The bytes of a minimal ELF shared object: header, a PT_LOAD covering the
// whole file at address 0x10000 (so addresses and offsets differ), a
// PT_DYNAMIC, the string table, the dynamic section.
inline std::string mini_elf(const MiniElf& spec) {
  const bool is64 = spec.elf_class == elf::ElfClass::elf64;
  const std::size_t word = is64 ? 8 : 4;
  const std::size_t ehdr_size = is64 ? 64 : 52, phdr_size = is64 ? 56 : 32;
  const std::uint64_t base = 0x10000;

  std::string strings(1, '\0');
  const auto add_string = [&](const std::string& s) {
    const std::uint64_t at = strings.size();
    strings += s;
    strings += '\0';
    return at;
  };
  std::vector<std::pair<std::uint64_t, std::uint64_t>> dynamic;  // tag, value
  for (const auto& name : spec.needed)
    dynamic.emplace_back(1, add_string(name));  // DT_NEEDED
  if (spec.soname) dynamic.emplace_back(14, add_string(*spec.soname));
  if (spec.rpath) dynamic.emplace_back(15, add_string(*spec.rpath));
  if (spec.runpath) dynamic.emplace_back(29, add_string(*spec.runpath));
  const std::uint64_t strtab_offset = ehdr_size + 2 * phdr_size;
  const std::uint64_t dynamic_offset = strtab_offset + strings.size();
  dynamic.emplace_back(5, spec.strtab_outside_segments ? 0x900000 : base + strtab_offset);
  dynamic.emplace_back(10, strings.size());  // DT_STRSZ
  dynamic.emplace_back(0, 0);                // DT_NULL
  const std::uint64_t dynamic_size = dynamic.size() * 2 * word;
  const std::uint64_t file_size = dynamic_offset + dynamic_size;

  std::string out;
  const auto put = [&](std::uint64_t value, std::size_t size) {
    for (std::size_t i = 0; i < size; ++i) {
      const std::size_t shift = spec.byte_order == elf::ByteOrder::little ? i : size - 1 - i;
      out += static_cast<char>((value >> (8 * shift)) & 0xff);
    }
  };
  // e_ident, e_type ET_DYN, e_machine, e_version, e_entry, e_phoff, e_shoff, e_flags,
  // e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx
  out += "\177ELF";  // the magic, 0x7f first
  out += static_cast<char>(is64 ? 2 : 1);
  out += static_cast<char>(spec.byte_order == elf::ByteOrder::little ? 1 : 2);
  out += static_cast<char>(1);
  out += std::string(9, '\0');
  put(3, 2), put(spec.machine, 2), put(1, 4), put(0, word), put(ehdr_size, word), put(0, word);
  put(0, 4), put(ehdr_size, 2), put(phdr_size, 2), put(2, 2), put(0, 2), put(0, 2), put(0, 2);
  const auto program_header = [&](std::uint32_t type, std::uint64_t offset, std::uint64_t size) {
    if (is64) {  // type, flags, offset, vaddr, paddr, filesz, memsz, align
      put(type, 4), put(6, 4), put(offset, 8), put(base + offset, 8), put(base + offset, 8);
      put(size, 8), put(size, 8), put(8, 8);
    } else {  // type, offset, vaddr, paddr, filesz, memsz, flags, align
      put(type, 4), put(offset, 4), put(base + offset, 4), put(base + offset, 4);
      put(size, 4), put(size, 4), put(6, 4), put(4, 4);
    }
  };
  program_header(1, 0, file_size);                  // PT_LOAD
  program_header(2, dynamic_offset, dynamic_size);  // PT_DYNAMIC
  out += strings;
  for (const auto& [tag, value] : dynamic)
    put(tag, word), put(value, word);
  return out;
}

// What `readelf -dW` says about a file's dynamic section, to compare with.
struct ReadelfDynamic {
  std::vector<std::string> needed;
  std::optional<std::string> soname, rpath, runpath;
};

// Nullopt, with the comparison recorded as skipped, where readelf is missing
// (binutils; scripts/setup installs it with build-essential).
inline std::optional<ReadelfDynamic> readelf_dynamic(
    const std::filesystem::path& path,
    std::source_location where = std::source_location::current()) {
  if (program_missing("readelf", where)) return std::nullopt;
  auto run = sys::run_process({"readelf", "-dW", path.string()});
  REQUIRE(run);
  INFO(run->err);
  REQUIRE(run->exit_code == 0);
  ReadelfDynamic result;
  std::istringstream lines(run->out);
  for (std::string line; std::getline(lines, line);) {
    const auto open = line.find('['), close = line.rfind(']');
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    const std::string value = line.substr(open + 1, close - open - 1);
    if (line.find("(NEEDED)") != std::string::npos) result.needed.push_back(value);
    if (line.find("(SONAME)") != std::string::npos) result.soname = value;
    if (line.find("(RPATH)") != std::string::npos) result.rpath = value;
    if (line.find("(RUNPATH)") != std::string::npos) result.runpath = value;
  }
  return result;
}

}  // namespace envkit::test
