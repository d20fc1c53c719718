// Reads the fatbinaries of an ELF file: the `.nv_fatbin` section, the targets
// of `.nvFatBinSegment`'s wrappers, and fatbinaries embedded in other data
// sections. Only headers are read, with pread; payloads (compressed cubins and
// PTX, hundreds of MB in a CUDA library) are skipped. The layout, as read from
// real binaries, is in docs/fatbin.md.
#include "envkit/elf/fatbin.hpp"

#include <elf.h>
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "file_reader.hpp"

namespace envkit::elf {

namespace fs = std::filesystem;

namespace {

// The fatbinary's own header (16 bytes) and the runtime's wrapper of it
// (__fatBinC_Wrapper_t in CUDA's include/fatbinary_section.h).
constexpr std::uint32_t kFatbinMagic = 0xBA55ED50;
constexpr std::uint32_t kWrapperMagic = 0x466243B1;
constexpr std::string_view kMagicBytes{"\x50\xED\x55\xBA", 4};  // kFatbinMagic, little-endian
constexpr std::uint64_t kFatbinHeaderSize = 16;
constexpr std::uint64_t kMaxFatbinHeaderSize = 4096;  // 16 in every fatbinary seen

// An entry header: 64 to 120 bytes in real binaries; the fields envkit reads
// end at 48 (the flags).
constexpr std::uint64_t kEntryFieldsEnd = 48;
constexpr std::uint64_t kEntryHeaderRead = 64;
constexpr std::uint16_t kKindPtx = 1;
constexpr std::uint16_t kKindElf = 2;
constexpr std::uint64_t kFlagCompressed = 0x1000 | 0x2000 | 0x8000;  // old, LZ4, zstd
constexpr std::uint64_t kFlagArchSpecific = 0x100000;                // sm_90a
constexpr std::uint64_t kFlagFamilySpecific = 0x200000;              // sm_100f

// Bounds on hostile input. A real file has a few thousand fatbinaries and tens
// of thousands of entries (cuFFT: 24,000 fatbinaries in .ldata).
constexpr std::size_t kMaxEntryReads = std::size_t{1} << 20;
constexpr std::uint64_t kMaxSections = std::uint64_t{1} << 16;
constexpr std::uint64_t kMaxSectionNames = std::uint64_t{16} << 20;
constexpr std::uint64_t kMaxWrapperBytes = std::uint64_t{64} << 20;
constexpr std::uint64_t kScanChunk = std::uint64_t{1} << 20;

// The sections that say a file has kernels the CUDA runtime loads: nvcc's
// `.nv_fatbin` (the fatbinaries) and `.nvFatBinSegment` (the wrappers the
// runtime registers, also in files whose fatbinaries sit in other sections:
// cuFFT's .ldata). `__nv_relfatbin` alone (device code for nvlink) runs nothing.
constexpr std::string_view kFatbinSection = ".nv_fatbin";
constexpr std::string_view kWrapperSection = ".nvFatBinSegment";
// Pre-linked relocatable fatbinaries for nvlink's device linking (fatbinary_section.h):
// the runtime never loads them, so their archs are not what the file runs on.
constexpr std::string_view kRelocatableSection = "__nv_relfatbin";

std::uint64_t align_up(std::uint64_t value, std::uint64_t alignment) {
  return value + (alignment - value % alignment) % alignment;
}

// Unsigned integers of either byte order from a buffer the caller has sized.
std::uint64_t decode(std::string_view bytes, std::size_t at, std::size_t size, bool little) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < size; ++i) {
    const std::size_t index = little ? at + size - 1 - i : at + i;
    value = (value << 8) | static_cast<unsigned char>(bytes[index]);
  }
  return value;
}
// Fatbinaries are little-endian on every platform CUDA runs on.
std::uint64_t le(std::string_view bytes, std::size_t at, std::size_t size) {
  return decode(bytes, at, size, true);
}

using detail::FileReader;

struct Section {
  std::string name;
  std::uint64_t name_offset = 0;  // in the section name table
  std::uint32_t type = 0;
  std::uint64_t flags = 0;
  std::uint64_t address = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;

  [[nodiscard]] std::uint64_t end() const { return offset + size; }
  [[nodiscard]] bool has_bytes() const { return type != SHT_NOBITS && size > 0; }
};

struct ElfLayout {
  bool little = true;
  bool is64 = true;
  std::vector<Section> sections;
};

Error not_elf(const fs::path& path, std::string why) {
  return Error::input(fmt::format("{} is not an ELF file", path.string())).because(std::move(why));
}

Error malformed_elf(const fs::path& path, std::string why) {
  return Error::input(fmt::format("{} is not a valid ELF file", path.string()))
      .because(std::move(why));
}

Error malformed_fatbin(const fs::path& path, const Section& section, std::uint64_t fatbin,
                       std::string why) {
  return Error::input(fmt::format("{} holds a malformed fatbinary", path.string()))
      .because(
          fmt::format("the fatbinary at offset {:#x} (section {}): {}", fatbin, section.name, why));
}

// The section header table and the section names, as the headers give them.
Result<ElfLayout> read_section_headers(const FileReader& source) {
  const fs::path& path = source.path();
  if (source.size() < EI_NIDENT) {
    return not_elf(path, fmt::format("it holds {} bytes, fewer than an ELF identification ({})",
                                     source.size(), EI_NIDENT));
  }
  auto ident = source.read(0, EI_NIDENT);
  if (!ident) return std::move(ident).error();
  if (ident->substr(0, SELFMAG) != ELFMAG) {
    return not_elf(path, "it does not start with the ELF magic 7f 45 4c 46");
  }
  ElfLayout layout;
  const auto elf_class = static_cast<unsigned char>((*ident)[EI_CLASS]);
  const auto data = static_cast<unsigned char>((*ident)[EI_DATA]);
  if ((elf_class != ELFCLASS32 && elf_class != ELFCLASS64) ||
      (data != ELFDATA2LSB && data != ELFDATA2MSB)) {
    return malformed_elf(path,
                         fmt::format("its class byte is {} and its data byte {}", elf_class, data));
  }
  layout.is64 = elf_class == ELFCLASS64;
  layout.little = data == ELFDATA2LSB;
  const std::uint64_t ehdr_size = layout.is64 ? 64 : 52;
  if (source.size() < ehdr_size) {
    return malformed_elf(
        path, fmt::format("it ends at offset {:#x}, inside its ELF header", source.size()));
  }
  auto ehdr = source.read(0, ehdr_size);
  if (!ehdr) return std::move(ehdr).error();
  const auto field = [&](std::string_view bytes, std::size_t at, std::size_t size) {
    return decode(bytes, at, size, layout.little);
  };
  const std::size_t word = layout.is64 ? 8 : 4;
  const std::uint64_t shoff = field(*ehdr, layout.is64 ? 0x28 : 0x20, word);
  const std::uint64_t shentsize = field(*ehdr, layout.is64 ? 0x3A : 0x2E, 2);
  std::uint64_t shnum = field(*ehdr, layout.is64 ? 0x3C : 0x30, 2);
  std::uint64_t shstrndx = field(*ehdr, layout.is64 ? 0x3E : 0x32, 2);
  if (shoff == 0) return layout;  // no section headers: nothing to read fatbinaries from
  const std::uint64_t shdr_size = layout.is64 ? 64 : 40;
  if (shentsize < shdr_size) {
    return malformed_elf(path, fmt::format("e_shentsize is {}, smaller than a section header ({})",
                                           shentsize, shdr_size));
  }
  const auto section_header = [&](std::uint64_t index) -> Result<std::string> {
    if (shoff > source.size() || index >= (source.size() - shoff) / shentsize) {
      return malformed_elf(path, fmt::format("section header {} (the table at offset {:#x}) ends "
                                             "past the end of the file ({} bytes)",
                                             index, shoff, source.size()));
    }
    return source.read(shoff + index * shentsize, shdr_size);
  };
  if (shnum == 0 || shstrndx == SHN_XINDEX) {
    // Extended numbering: the real values are in section header 0.
    auto first = section_header(0);
    if (!first) return std::move(first).error();
    if (shnum == 0) shnum = field(*first, layout.is64 ? 32 : 20, word);
    if (shstrndx == SHN_XINDEX) shstrndx = field(*first, layout.is64 ? 40 : 24, 4);
  }
  if (shnum > kMaxSections) {
    return malformed_elf(
        path, fmt::format("it claims {} sections; envkit reads at most {}", shnum, kMaxSections));
  }
  for (std::uint64_t i = 0; i < shnum; ++i) {
    auto bytes = section_header(i);
    if (!bytes) return std::move(bytes).error();
    Section section;
    section.name_offset = field(*bytes, 0, 4);
    section.type = static_cast<std::uint32_t>(field(*bytes, 4, 4));
    section.flags = field(*bytes, 8, word);
    section.address = field(*bytes, layout.is64 ? 16 : 12, word);
    section.offset = field(*bytes, layout.is64 ? 24 : 16, word);
    section.size = field(*bytes, layout.is64 ? 32 : 20, word);
    layout.sections.push_back(std::move(section));
  }

  std::string names;
  if (shstrndx != SHN_UNDEF && shstrndx < layout.sections.size()) {
    const Section& table = layout.sections[shstrndx];
    if (table.has_bytes()) {
      if (table.offset > source.size() || table.size > source.size() - table.offset) {
        return malformed_elf(path, fmt::format("its section name table (offset {:#x}, {} bytes) "
                                               "ends past the end of the file ({} bytes)",
                                               table.offset, table.size, source.size()));
      }
      if (table.size > kMaxSectionNames) {
        return malformed_elf(path, fmt::format("its section name table holds {} bytes; envkit "
                                               "reads at most {}",
                                               table.size, kMaxSectionNames));
      }
      auto read = source.read(table.offset, table.size);
      if (!read) return std::move(read).error();
      names = std::move(*read);
    }
  }
  for (Section& section : layout.sections) {
    if (section.name_offset < names.size()) section.name = names.c_str() + section.name_offset;
  }
  return layout;
}

// The section headers, checked against the file's size for reading its sections.
Result<ElfLayout> read_sections(const FileReader& source) {
  auto layout = read_section_headers(source);
  if (!layout) return layout;
  for (std::size_t i = 0; i < layout->sections.size(); ++i) {
    const Section& section = layout->sections[i];
    // An allocated section past the end is a truncated file (ld.so could not map it).
    if ((section.flags & SHF_ALLOC) != 0 && section.has_bytes() &&
        (section.offset > source.size() || section.size > source.size() - section.offset)) {
      return malformed_elf(source.path(),
                           fmt::format("section {} (offset {:#x}, {} bytes) ends past the "
                                       "end of the file ({} bytes)",
                                       i, section.offset, section.size, source.size()));
    }
  }
  return layout;
}

// Counts the entry headers read, so that no input makes the reader loop long.
class Budget {
 public:
  explicit Budget(const fs::path& path) : path_(path) {}
  [[nodiscard]] bool exhausted() const { return used_ >= kMaxEntryReads; }
  [[nodiscard]] Result<void> spend() {
    if (++used_ < kMaxEntryReads) return {};
    return Error::input(fmt::format("{} holds too many fatbinary entries", path_.string()))
        .because(fmt::format("envkit reads at most {} entry headers in one file", kMaxEntryReads));
  }

 private:
  const fs::path& path_;
  std::size_t used_ = 0;
};

std::string isa_text(std::uint64_t major, std::uint64_t minor) {
  return fmt::format("{}.{}", major, minor);
}

// The fatbinary at `at` in `section`, which it must not run past. Returns its
// end in the file along with it.
Result<std::pair<EmbeddedFatbin, std::uint64_t>> read_fatbin(const FileReader& source,
                                                             const Section& section,
                                                             std::uint64_t at, Budget& budget) {
  const auto bad = [&](std::string why) {
    return malformed_fatbin(source.path(), section, at, std::move(why));
  };
  const std::uint64_t limit = section.end();
  if (at > limit || limit - at < kFatbinHeaderSize) {
    return bad(
        fmt::format("its 16-byte header runs past the end of the section at offset {:#x}", limit));
  }
  auto header = source.read(at, kFatbinHeaderSize);
  if (!header) return std::move(header).error();
  const auto magic = le(*header, 0, 4);
  const auto version = le(*header, 4, 2);
  const auto header_size = le(*header, 6, 2);
  const auto size = le(*header, 8, 8);
  if (magic != kFatbinMagic) {
    return bad(fmt::format("it starts with {:#010x}, not the fatbinary magic {:#010x}", magic,
                           kFatbinMagic));
  }
  if (version != 1) return bad(fmt::format("its version is {}; envkit reads version 1", version));
  if (header_size < kFatbinHeaderSize || header_size > kMaxFatbinHeaderSize) {
    return bad(fmt::format("its header size is {} bytes, not between {} and {}", header_size,
                           kFatbinHeaderSize, kMaxFatbinHeaderSize));
  }
  if (header_size > limit - at || size > limit - at - header_size) {
    return bad(
        fmt::format("its header ({} bytes) and its entries ({} bytes) run past the end of "
                    "the section at offset {:#x}",
                    header_size, size, limit));
  }

  EmbeddedFatbin fatbin;
  fatbin.offset = at;
  fatbin.section = section.name;
  const std::uint64_t end = at + header_size + size;
  for (std::uint64_t next = at + header_size; next < end;) {
    if (auto spent = budget.spend(); !spent) return std::move(spent).error();
    const std::uint64_t entry = next;
    const auto bad_entry = [&](std::string why) {
      return bad(fmt::format("the entry at offset {:#x}: {}", entry, why));
    };
    if (end - entry < kEntryFieldsEnd) {
      return bad_entry(
          fmt::format("its header needs {} bytes but the fatbinary ends {} bytes "
                      "after it starts",
                      kEntryFieldsEnd, end - entry));
    }
    auto bytes = source.read(entry, std::min(kEntryHeaderRead, end - entry));
    if (!bytes) return std::move(bytes).error();
    const auto kind = static_cast<std::uint16_t>(le(*bytes, 0, 2));
    const auto entry_header_size = le(*bytes, 4, 4);
    const auto payload = le(*bytes, 8, 8);
    const auto compressed_size = le(*bytes, 0x10, 4);
    const auto isa_minor = le(*bytes, 0x18, 2);
    const auto isa_major = le(*bytes, 0x1A, 2);
    const auto arch = le(*bytes, 0x1C, 4);
    const auto flags = le(*bytes, 0x28, 8);
    if (entry_header_size < kEntryFieldsEnd) {
      return bad_entry(
          fmt::format("its header size is {} bytes, fewer than the {} that hold its "
                      "kind, sizes, arch and flags",
                      entry_header_size, kEntryFieldsEnd));
    }
    if (entry_header_size > end - entry || payload > end - entry - entry_header_size) {
      return bad_entry(
          fmt::format("its header ({} bytes) and payload ({} bytes) run past the end "
                      "of the fatbinary at offset {:#x}",
                      entry_header_size, payload, end));
    }
    next = entry + entry_header_size + payload;
    if (kind != kKindPtx && kind != kKindElf) {
      ++fatbin.other_entries;
      continue;
    }
    if (arch < 10 || arch >= 1000) {  // sm_10 (CUDA 1.0) to sm_999
      return bad_entry(fmt::format("its arch {} is no compute capability", arch));
    }
    FatbinEntry read;
    read.kind = kind == kKindPtx ? FatbinEntry::Kind::ptx : FatbinEntry::Kind::sass;
    read.arch = static_cast<Arch>(arch);
    read.arch_specific = (flags & kFlagArchSpecific) != 0;
    read.family_specific = !read.arch_specific && (flags & kFlagFamilySpecific) != 0;
    read.compressed = (flags & kFlagCompressed) != 0;
    if (read.compressed && compressed_size > payload) {
      return bad_entry(fmt::format("it is compressed to {} bytes, more than its payload of {}",
                                   compressed_size, payload));
    }
    if (read.kind == FatbinEntry::Kind::ptx) read.ptx_isa = isa_text(isa_major, isa_minor);
    fatbin.entries.push_back(std::move(read));
  }
  return std::pair{std::move(fatbin), end};
}

class Reader {
 public:
  Reader(const FileReader& source, const ElfLayout& layout)
      : source_(source), layout_(layout), budget_(source.path()) {}

  Result<std::vector<EmbeddedFatbin>> read_all() && {
    for (const Section& section : layout_.sections) {
      if (section.name == kFatbinSection && section.has_bytes()) {
        if (auto r = read_fatbin_section(section); !r) return std::move(r).error();
      }
    }
    for (const Section& section : layout_.sections) {
      if (section.name == kWrapperSection && section.has_bytes()) {
        if (auto r = read_wrapper_targets(section); !r) return std::move(r).error();
      }
    }
    for (const Section& section : layout_.sections) {
      if (scanned(section)) {
        if (auto r = scan(section); !r) return std::move(r).error();
      }
    }
    std::sort(found_.begin(), found_.end(),
              [](const auto& a, const auto& b) { return a.offset < b.offset; });
    return std::move(found_);
  }

 private:
  // Data sections that may embed a fatbinary as an array (cuBLASLt's
  // .cask_resource, cuFFT's .ldata, cuSPARSE's .rodata).
  static bool scanned(const Section& section) {
    return section.type == SHT_PROGBITS && (section.flags & SHF_ALLOC) != 0 &&
           (section.flags & SHF_EXECINSTR) == 0 && section.has_bytes() &&
           section.name != kFatbinSection && section.name != kWrapperSection &&
           section.name != kRelocatableSection;
  }

  Result<std::uint64_t> add(const Section& section, std::uint64_t at) {
    auto fatbin = read_fatbin(source_, section, at, budget_);
    if (!fatbin) return std::move(fatbin).error();
    offsets_.insert(at);
    found_.push_back(std::move(fatbin->first));
    return fatbin->second;
  }

  // Fatbinaries one after the other, each at an 8-byte boundary, zeros between.
  Result<void> read_fatbin_section(const Section& section) {
    std::uint64_t at = section.offset;
    while (at < section.end()) {
      auto start = skip_padding(section, at);
      if (!start) return std::move(start).error();
      at = *start;
      if (at >= section.end()) break;
      auto end = add(section, at);
      if (!end) return std::move(end).error();
      at = section.offset + align_up(*end - section.offset, 8);
    }
    return {};
  }

  // The first 8-byte word at or after `at` that is not zero (the section's end when none).
  Result<std::uint64_t> skip_padding(const Section& section, std::uint64_t at) const {
    constexpr std::uint64_t kChunk = 64 * 1024;
    while (at < section.end()) {
      auto chunk = source_.read(at, std::min(kChunk, section.end() - at));
      if (!chunk) return std::move(chunk).error();
      const auto nonzero = chunk->find_first_not_of('\0');
      if (nonzero != std::string::npos) return at + nonzero / 8 * 8;
      at += chunk->size();
    }
    return section.end();
  }

  // The fatbinaries the CUDA runtime registers: each wrapper's `data` pointer.
  Result<void> read_wrapper_targets(const Section& section) {
    const std::size_t word = layout_.is64 ? 8 : 4;
    const std::uint64_t wrapper_size = 8 + 2 * word;
    if (section.size > kMaxWrapperBytes) {
      return malformed_elf(source_.path(),
                           fmt::format("section {} holds {} bytes; envkit reads at most {}",
                                       section.name, section.size, kMaxWrapperBytes));
    }
    auto bytes = source_.read(section.offset, section.size);
    if (!bytes) return std::move(bytes).error();
    for (std::uint64_t at = 0; at + wrapper_size <= bytes->size(); at += wrapper_size) {
      if (decode(*bytes, at, 4, layout_.little) != kWrapperMagic) continue;
      // 0 where the linker left the address to a relocation only: the fatbinary
      // is then read from .nv_fatbin or found by the scan.
      const std::uint64_t address = decode(*bytes, at + 8, word, layout_.little);
      const Section* home = section_at(address);
      if (home == nullptr || home->name == kRelocatableSection) continue;
      const std::uint64_t offset = home->offset + (address - home->address);
      if (offsets_.contains(offset)) continue;
      if (auto end = add(*home, offset); !end) return std::move(end).error();
    }
    return {};
  }

  const Section* section_at(std::uint64_t address) const {
    if (address == 0) return nullptr;
    for (const Section& section : layout_.sections) {
      if ((section.flags & SHF_ALLOC) != 0 && section.has_bytes() && address >= section.address &&
          address - section.address < section.size) {
        return &section;
      }
    }
    return nullptr;
  }

  // Looks for the magic at each 8-byte boundary; a match that does not read as
  // a whole fatbinary is data that happens to hold those bytes, and is passed.
  Result<void> scan(const Section& section) {
    std::uint64_t at = align_up(section.offset, 8);
    while (at + kFatbinHeaderSize <= section.end()) {
      const std::uint64_t length = std::min(kScanChunk, section.end() - at);
      auto chunk = source_.read(at, length);
      if (!chunk) return std::move(chunk).error();
      std::uint64_t next = at + length;
      const std::string_view bytes = *chunk;
      for (std::size_t i = bytes.find(kMagicBytes); i != std::string_view::npos;
           i = bytes.find(kMagicBytes, i + 1)) {
        if (i % 8 != 0 || offsets_.contains(at + i)) continue;
        auto fatbin = read_fatbin(source_, section, at + i, budget_);
        if (!fatbin) {
          if (fatbin.error().code() != ErrorCode::input || budget_.exhausted()) {
            return std::move(fatbin).error();
          }
          continue;
        }
        offsets_.insert(at + i);
        found_.push_back(std::move(fatbin->first));
        next = align_up(fatbin->second, 8);
        break;
      }
      at = next;
    }
    return {};
  }

  const FileReader& source_;
  const ElfLayout& layout_;
  Budget budget_;
  std::vector<EmbeddedFatbin> found_;
  std::set<std::uint64_t> offsets_;
};

Result<std::vector<EmbeddedFatbin>> read_from(const FileReader& source) {
  auto layout = read_sections(source);
  if (!layout) return std::move(layout).error();
  return Reader(source, *layout).read_all();
}

}  // namespace

Result<std::vector<EmbeddedFatbin>> read_fatbins(const fs::path& path) {
  // A file that is not there is the caller's input error (exit 2), as for any input file.
  auto source = FileReader::open(path, ErrorCode::input);
  if (!source) return std::move(source).error();
  return read_from(*source);
}

bool has_fatbin_sections(const fs::path& path) {
  auto source = FileReader::open(path);
  if (!source) return false;
  auto layout = read_section_headers(*source);
  if (!layout) return false;
  return std::any_of(layout->sections.begin(), layout->sections.end(), [](const Section& section) {
    return section.name == kFatbinSection || section.name == kWrapperSection;
  });
}

Result<std::vector<EmbeddedFatbin>> read_fatbins_bytes(std::string_view bytes,
                                                       const fs::path& name) {
  return read_from(FileReader::of_bytes(bytes, name));
}

}  // namespace envkit::elf
