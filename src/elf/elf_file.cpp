#include "envkit/elf/elf_file.hpp"

#include <elf.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <string_view>

#include "envkit/sys/unique_fd.hpp"
#include "file_reader.hpp"

namespace envkit::elf {

namespace fs = std::filesystem;

namespace {

// Field offsets that differ between ELFCLASS32 and ELFCLASS64 (<elf.h> Elf*_Ehdr,
// Elf*_Phdr, Elf*_Dyn, Elf*_Shdr); we decode bytes ourselves so that either byte
// order reads on any host.
struct Layout {
  std::size_t word;  // size of an address or offset
  std::size_t ehdr_size, e_phoff, e_shoff, e_phentsize, e_phnum, e_shentsize;
  std::size_t phdr_size, p_offset, p_vaddr, p_filesz;
  std::size_t dyn_size;
  std::size_t shdr_size, sh_info;
};

constexpr Layout kLayout32{4, 52, 28, 32, 42, 44, 46, 32, 4, 8, 16, 8, 40, 28};
constexpr Layout kLayout64{8, 64, 32, 40, 54, 56, 58, 56, 8, 16, 32, 16, 64, 44};

constexpr std::string_view kMagic = "\177ELF";  // \177 is 0x7f

// Reads integers of the file's byte order out of a buffer the caller has sized.
class Decoder {
 public:
  Decoder(ByteOrder order, const Layout& layout) : order_(order), layout_(layout) {}

  [[nodiscard]] std::uint64_t uint(std::string_view bytes, std::size_t at, std::size_t size) const {
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < size; ++i) {
      const std::size_t index = order_ == ByteOrder::little ? at + size - 1 - i : at + i;
      value = (value << 8) | static_cast<unsigned char>(bytes[index]);
    }
    return value;
  }
  [[nodiscard]] std::uint16_t u16(std::string_view bytes, std::size_t at) const {
    return static_cast<std::uint16_t>(uint(bytes, at, 2));
  }
  [[nodiscard]] std::uint32_t u32(std::string_view bytes, std::size_t at) const {
    return static_cast<std::uint32_t>(uint(bytes, at, 4));
  }
  [[nodiscard]] std::uint64_t word(std::string_view bytes, std::size_t at) const {
    return uint(bytes, at, layout_.word);
  }

 private:
  ByteOrder order_;
  const Layout& layout_;
};

Error malformed(const fs::path& path, std::string detail) {
  return Error::input(fmt::format("{} is not a valid ELF file", path.string()))
      .because(std::move(detail));
}

using detail::FileReader;

Error truncated(const FileReader& file, std::uint64_t offset, std::uint64_t length,
                std::string_view what) {
  return Error::input(fmt::format("{} is a truncated ELF file", file.path().string()))
      .because(fmt::format("the {} at offset {:#x} ({} bytes) ends past the end of the file "
                           "({} bytes)",
                           what, offset, length, file.size()));
}

// Exactly `length` bytes at `offset`, or an error saying which part is cut.
Result<std::string> read_part(const FileReader& file, std::uint64_t offset, std::uint64_t length,
                              std::string_view what) {
  if (offset > file.size() || length > file.size() - offset) {
    return truncated(file, offset, length, what);
  }
  auto bytes = file.read_some(offset, length);
  if (bytes && bytes->size() != length) return truncated(file, offset, length, what);
  return bytes;
}

std::string hex_bytes(std::string_view bytes) {
  std::string out;
  for (const char c : bytes) {
    if (!out.empty()) out += ' ';
    out += fmt::format("{:02x}", static_cast<unsigned char>(c));
  }
  return out;
}

struct Header {
  ElfIdentity identity;
  const Layout* layout = nullptr;
  std::uint16_t type = 0;
  std::uint64_t phoff = 0;
  std::uint64_t phentsize = 0;
  std::uint64_t phnum = 0;
};

Result<Header> read_header(const FileReader& file) {
  const fs::path& path = file.path();
  auto start = file.read_some(0, EI_NIDENT);
  if (!start) return std::move(start).error();
  const std::string_view ident = *start;
  const std::string_view magic = kMagic;
  if (ident.size() < magic.size() || ident.substr(0, magic.size()) != magic) {
    if (magic.starts_with(ident)) {
      if (ident.empty()) {
        return Error::input(fmt::format("{} is not an ELF file", path.string()))
            .because("it is empty");
      }
      return truncated(file, 0, EI_NIDENT, "ELF identification");
    }
    return Error::input(fmt::format("{} is not an ELF file", path.string()))
        .because(fmt::format("it starts with the bytes {}, not the ELF magic 7f 45 4c 46",
                             hex_bytes(ident.substr(0, magic.size()))));
  }
  if (ident.size() < EI_NIDENT) return truncated(file, 0, EI_NIDENT, "ELF identification");

  Header header;
  switch (static_cast<unsigned char>(ident[EI_CLASS])) {
    case ELFCLASS32:
      header.identity.elf_class = ElfClass::elf32;
      header.layout = &kLayout32;
      break;
    case ELFCLASS64:
      header.identity.elf_class = ElfClass::elf64;
      header.layout = &kLayout64;
      break;
    default:
      return Error::input(fmt::format("{} has an unsupported ELF class", path.string()))
          .because(fmt::format("the class byte at offset {:#x} is {}, neither 1 (32-bit) nor "
                               "2 (64-bit)",
                               EI_CLASS, static_cast<unsigned char>(ident[EI_CLASS])));
  }
  switch (static_cast<unsigned char>(ident[EI_DATA])) {
    case ELFDATA2LSB:
      header.identity.byte_order = ByteOrder::little;
      break;
    case ELFDATA2MSB:
      header.identity.byte_order = ByteOrder::big;
      break;
    default:
      return Error::input(fmt::format("{} has an unsupported ELF byte order", path.string()))
          .because(fmt::format("the data byte at offset {:#x} is {}, neither 1 (little-endian) "
                               "nor 2 (big-endian)",
                               EI_DATA, static_cast<unsigned char>(ident[EI_DATA])));
  }

  const Layout& layout = *header.layout;
  auto bytes = read_part(file, 0, layout.ehdr_size, "ELF header");
  if (!bytes) return std::move(bytes).error();
  const Decoder decode(header.identity.byte_order, layout);
  header.type = decode.u16(*bytes, 16);
  header.identity.machine = decode.u16(*bytes, 18);
  header.phoff = decode.word(*bytes, layout.e_phoff);
  header.phentsize = decode.u16(*bytes, layout.e_phentsize);
  header.phnum = decode.u16(*bytes, layout.e_phnum);
  if (header.phnum == PN_XNUM) {
    // Too many program headers for e_phnum: the count is in section header 0's sh_info.
    const std::uint64_t shoff = decode.word(*bytes, layout.e_shoff);
    auto section0 = read_part(file, shoff, layout.shdr_size, "section header 0");
    if (!section0) return std::move(section0).error();
    header.phnum = decode.u32(*section0, layout.sh_info);
  }
  if (header.phnum > 0 && header.phentsize < layout.phdr_size) {
    return malformed(path, fmt::format("e_phentsize at offset {:#x} is {}, smaller than a "
                                       "program header ({} bytes)",
                                       layout.e_phentsize, header.phentsize, layout.phdr_size));
  }
  return header;
}

struct Segment {
  std::uint64_t offset = 0;
  std::uint64_t vaddr = 0;
  std::uint64_t filesz = 0;
};

// The dynamic-section entries we use; string-valued ones are offsets into DT_STRTAB.
struct DynamicEntries {
  std::vector<std::uint64_t> needed;
  std::optional<std::uint64_t> soname, rpath, runpath, strtab, strsz;
  std::uint64_t flags_1 = 0;
};

DynamicEntries read_dynamic_entries(std::string_view bytes, const Decoder& decode,
                                    const Layout& layout) {
  DynamicEntries entries;
  for (std::size_t at = 0; at + layout.dyn_size <= bytes.size(); at += layout.dyn_size) {
    const std::uint64_t tag = decode.word(bytes, at);
    const std::uint64_t value = decode.word(bytes, at + layout.word);
    switch (tag) {
      case DT_NULL:
        return entries;
      case DT_NEEDED:
        entries.needed.push_back(value);
        break;
      case DT_SONAME:
        entries.soname = value;
        break;
      case DT_RPATH:
        entries.rpath = value;
        break;
      case DT_RUNPATH:
        entries.runpath = value;
        break;
      case DT_STRTAB:
        entries.strtab = value;
        break;
      case DT_STRSZ:
        entries.strsz = value;
        break;
      case DT_FLAGS_1:
        entries.flags_1 = value;
        break;
      default:
        break;
    }
  }
  return entries;
}

// The dynamic string table, located in the file through the PT_LOAD segment
// that maps DT_STRTAB's address. Strings are read one at a time: the table
// holds every symbol name, which in a CUDA library is megabytes we do not need.
class StringTable {
 public:
  StringTable(const FileReader& file, std::uint64_t offset, std::uint64_t size)
      : file_(file), offset_(offset), size_(size) {}

  [[nodiscard]] Result<std::string> at(std::uint64_t index, std::string_view entry) const {
    if (index >= size_) {
      return malformed(file_.path(), fmt::format("the {} string offset {:#x} is past the end of "
                                                 "the string table at offset {:#x} ({} bytes)",
                                                 entry, index, offset_, size_));
    }
    std::string text;
    constexpr std::uint64_t kChunk = 256;
    for (std::uint64_t at = index; at < size_; at += kChunk) {
      auto chunk = file_.read_some(offset_ + at, std::min(kChunk, size_ - at));
      if (!chunk) return std::move(chunk).error();
      const auto end = chunk->find('\0');
      if (end != std::string::npos) return text + chunk->substr(0, end);
      text += *chunk;
    }
    return malformed(file_.path(), fmt::format("the {} string at offset {:#x} has no terminating "
                                               "NUL before the end of the string table",
                                               entry, offset_ + index));
  }

 private:
  const FileReader& file_;
  std::uint64_t offset_;
  std::uint64_t size_;
};

Result<ElfFile> read_dynamic(const FileReader& file, const Header& header, ElfFile elf) {
  const Layout& layout = *header.layout;
  const Decoder decode(header.identity.byte_order, layout);
  auto table =
      read_part(file, header.phoff, header.phnum * header.phentsize, "program header table");
  if (!table) return std::move(table).error();

  std::vector<Segment> loads;
  std::optional<Segment> dynamic;
  for (std::uint64_t i = 0; i < header.phnum; ++i) {
    const std::string_view phdr = std::string_view(*table).substr(i * header.phentsize);
    const std::uint32_t type = decode.u32(phdr, 0);
    const Segment segment{decode.word(phdr, layout.p_offset), decode.word(phdr, layout.p_vaddr),
                          decode.word(phdr, layout.p_filesz)};
    if (type == PT_LOAD) loads.push_back(segment);
    // As ld.so: a PT_DYNAMIC of size 0 (debuginfo-only files) is no dynamic section.
    if (type == PT_DYNAMIC && segment.filesz > 0 && !dynamic) dynamic = segment;
  }
  if (!dynamic) return elf;

  auto bytes = read_part(file, dynamic->offset, dynamic->filesz, "dynamic section");
  if (!bytes) return std::move(bytes).error();
  const DynamicEntries entries = read_dynamic_entries(*bytes, decode, layout);
  elf.has_dynamic_section = true;
  elf.nodeflib = (entries.flags_1 & DF_1_NODEFLIB) != 0;
  const bool has_strings =
      !entries.needed.empty() || entries.soname || entries.rpath || entries.runpath;
  if (!has_strings) return elf;
  if (!entries.strtab) {
    return malformed(file.path(), fmt::format("the dynamic section at offset {:#x} names "
                                              "libraries but has no DT_STRTAB",
                                              dynamic->offset));
  }

  const std::uint64_t address = *entries.strtab;
  const Segment* home = nullptr;
  for (const Segment& load : loads) {
    if (address >= load.vaddr && address - load.vaddr < load.filesz) home = &load;
  }
  if (home == nullptr) {
    return malformed(file.path(), fmt::format("DT_STRTAB address {:#x} (in the dynamic section "
                                              "at offset {:#x}) is in no PT_LOAD segment",
                                              address, dynamic->offset));
  }
  const std::uint64_t strtab_offset = home->offset + (address - home->vaddr);
  const std::uint64_t strtab_size = entries.strsz.value_or(home->filesz - (address - home->vaddr));
  if (strtab_offset > file.size() || strtab_size > file.size() - strtab_offset) {
    return truncated(file, strtab_offset, strtab_size, "dynamic string table");
  }
  const StringTable strings(file, strtab_offset, strtab_size);

  for (const std::uint64_t index : entries.needed) {
    auto name = strings.at(index, "DT_NEEDED");
    if (!name) return std::move(name).error();
    elf.needed.push_back(std::move(*name));
  }
  const auto optional_string = [&](const std::optional<std::uint64_t>& index,
                                   std::string_view entry,
                                   std::optional<std::string>& into) -> Result<void> {
    if (!index) return {};
    auto text = strings.at(*index, entry);
    if (!text) return std::move(text).error();
    into = std::move(*text);
    return {};
  };
  if (auto r = optional_string(entries.soname, "DT_SONAME", elf.soname); !r) return r.error();
  if (auto r = optional_string(entries.rpath, "DT_RPATH", elf.rpath); !r) return r.error();
  if (auto r = optional_string(entries.runpath, "DT_RUNPATH", elf.runpath); !r) return r.error();
  return elf;
}

std::string_view machine_name(std::uint16_t machine) {
  switch (machine) {
    case EM_386:
      return "i386";
    case EM_X86_64:
      return "x86-64";
    case EM_AARCH64:
      return "AArch64";
    case EM_ARM:
      return "ARM";
    case EM_PPC:
      return "PowerPC";
    case EM_PPC64:
      return "PowerPC64";
    case EM_S390:
      return "s390";
    case EM_RISCV:
      return "RISC-V";
    case EM_MIPS:
      return "MIPS";
    default:
      return {};
  }
}

}  // namespace

std::string describe(const ElfIdentity& identity) {
  const std::string_view name = machine_name(identity.machine);
  return fmt::format("{}-bit {}-endian {}", identity.elf_class == ElfClass::elf64 ? 64 : 32,
                     identity.byte_order == ByteOrder::little ? "little" : "big",
                     name.empty() ? fmt::format("machine {}", identity.machine) : name);
}

bool has_elf_magic(const fs::path& path) {
  const sys::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return false;
  std::array<char, kMagic.size()> start{};
  return ::pread(fd.get(), start.data(), start.size(), 0) == static_cast<ssize_t>(start.size()) &&
         std::string_view(start.data(), start.size()) == kMagic;
}

Result<ElfIdentity> read_elf_identity(const fs::path& path) {
  auto file = FileReader::open(path);
  if (!file) return std::move(file).error();
  auto header = read_header(*file);
  if (!header) return std::move(header).error();
  return header->identity;
}

namespace {

Result<ElfFile> read_elf_from(const FileReader& file) {
  auto header = read_header(file);
  if (!header) return std::move(header).error();
  ElfFile elf;
  elf.path = file.path();
  elf.identity = header->identity;
  elf.type = header->type;
  if (header->phnum == 0) return elf;  // no program headers: nothing to load dynamically
  return read_dynamic(file, *header, std::move(elf));
}

}  // namespace

Result<ElfFile> read_elf(const fs::path& path) {
  auto file = FileReader::open(path);
  if (!file) return std::move(file).error();
  return read_elf_from(*file);
}

Result<ElfFile> read_elf_bytes(std::string_view bytes, const fs::path& name) {
  return read_elf_from(FileReader::of_bytes(bytes, name));
}

}  // namespace envkit::elf
