#pragma once
// Fatbinaries made byte by byte (the layout of docs/fatbin.md) and tiny ELF
// files that hold them in named sections, for the fatbin reader's tests and
// the fuzz target's seeds.

#include <elf.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace envkit::test {

inline void put_le(std::string& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out += static_cast<char>((value >> (8 * i)) & 0xFF);
}

inline void set_le(std::string& out, std::size_t at, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out[at + i] = static_cast<char>((value >> (8 * i)) & 0xFF);
}

struct FakeEntry {
  std::uint16_t kind = 2;  // 1 PTX, 2 ELF (SASS), 8 LTO IR
  std::uint32_t arch = 80;
  std::uint64_t flags = 0x11;  // 64-bit, Linux: as nvcc writes them
  std::uint16_t isa_major = 1, isa_minor = 8;
  std::string payload = std::string(16, 'x');
  std::uint32_t header_size = 64;
  std::uint32_t compressed_size = 0;
};

// One entry header (kind, header size, payload size, compressed size, ISA, arch, flags).
inline std::string entry_bytes(const FakeEntry& entry) {
  std::string out;
  put_le(out, entry.kind, 2);
  put_le(out, 0x0101, 2);
  put_le(out, entry.header_size, 4);
  put_le(out, entry.payload.size(), 8);
  put_le(out, entry.compressed_size, 4);
  put_le(out, 0, 4);
  put_le(out, entry.isa_minor, 2);
  put_le(out, entry.isa_major, 2);
  put_le(out, entry.arch, 4);
  put_le(out, 0, 8);  // name offset and length
  put_le(out, entry.flags, 8);
  put_le(out, 0, 16);  // up to 64 bytes
  out.resize(std::max<std::size_t>(out.size(), entry.header_size), '\0');
  out.resize(entry.header_size);
  return out + entry.payload;
}

// A fatbinary: the 16-byte header (magic, version 1, header size 16, size) and its entries.
inline std::string fatbin_bytes(const std::vector<FakeEntry>& entries) {
  std::string body;
  for (const auto& entry : entries)
    body += entry_bytes(entry);
  std::string out;
  put_le(out, 0xBA55ED50, 4);
  put_le(out, 1, 2);
  put_le(out, 16, 2);
  put_le(out, body.size(), 8);
  return out + body;
}

struct FakeSection {
  std::string name;
  std::string bytes;
  std::uint64_t flags = SHF_ALLOC;
  std::uint32_t type = SHT_PROGBITS;
};

// The offset in the file of section `index` (0-based among `sections`) as tiny_elf lays it out.
inline std::uint64_t section_offset(const std::vector<FakeSection>& sections, std::size_t index) {
  std::uint64_t at = 64;
  for (std::size_t i = 0; i < index; ++i)
    at = (at + sections[i].bytes.size() + 15) / 16 * 16;
  return at;
}

// A 64-bit little-endian ELF shared object with `sections` after its header,
// each 16-byte aligned, mapped at address = offset, then .shstrtab and the
// section header table.
inline std::string tiny_elf(const std::vector<FakeSection>& sections) {
  std::string data;
  std::string names(1, '\0');
  std::vector<std::uint64_t> offsets, name_at;
  for (const auto& section : sections) {
    offsets.push_back(64 + data.size());
    data += section.bytes;
    data.resize((data.size() + 15) / 16 * 16, '\0');
    name_at.push_back(names.size());
    names += section.name + '\0';
  }
  const std::uint64_t strtab_name = names.size();
  names += ".shstrtab";
  names += '\0';
  const std::uint64_t strtab_offset = 64 + data.size();
  data += names;
  data.resize((data.size() + 7) / 8 * 8, '\0');
  const std::uint64_t shoff = 64 + data.size();
  const std::uint64_t shnum = sections.size() + 2;

  std::string out = "\177ELF";
  out += '\2';  // 64-bit
  out += '\1';  // little-endian
  out += '\1';  // version
  out.resize(16, '\0');
  put_le(out, ET_DYN, 2);
  put_le(out, EM_X86_64, 2);
  put_le(out, 1, 4);
  put_le(out, 0, 8);      // entry
  put_le(out, 0, 8);      // phoff
  put_le(out, shoff, 8);  // shoff
  put_le(out, 0, 4);      // flags
  put_le(out, 64, 2);     // ehsize
  put_le(out, 56, 2);
  put_le(out, 0, 2);
  put_le(out, 64, 2);  // shentsize
  put_le(out, shnum, 2);
  put_le(out, shnum - 1, 2);  // shstrndx
  out += data;

  const auto header = [&](std::uint64_t name, std::uint32_t type, std::uint64_t flags,
                          std::uint64_t offset, std::uint64_t size) {
    put_le(out, name, 4);
    put_le(out, type, 4);
    put_le(out, flags, 8);
    put_le(out, (flags & SHF_ALLOC) != 0 ? offset : 0, 8);
    put_le(out, offset, 8);
    put_le(out, size, 8);
    put_le(out, 0, 8);  // link, info
    put_le(out, 8, 8);  // addralign
    put_le(out, 0, 8);  // entsize
  };
  out.append(64, '\0');  // section 0
  for (std::size_t i = 0; i < sections.size(); ++i) {
    header(name_at[i], sections[i].type, sections[i].flags, offsets[i], sections[i].bytes.size());
  }
  header(strtab_name, SHT_STRTAB, 0, strtab_offset, names.size());
  return out;
}

}  // namespace envkit::test
