#include "envkit/elf/elf_file.hpp"

#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "elf_fixtures.hpp"
#include "envkit/sys/fs.hpp"
#include "support/temp_dir.hpp"

using envkit::elf::ByteOrder;
using envkit::elf::ElfClass;
using envkit::elf::read_elf;
using envkit::test::TempDir;
namespace fs = std::filesystem;
namespace test = envkit::test;

namespace {

// The first `size` bytes of `from`, as a new file `to`.
fs::path truncated_copy(const fs::path& from, const fs::path& to, std::uintmax_t size) {
  fs::copy_file(from, to);
  fs::resize_file(to, size);
  return to;
}

std::uint64_t little_endian(const std::string& bytes, std::size_t at, std::size_t size) {
  std::uint64_t value = 0;
  for (std::size_t i = size; i-- > 0;)
    value = (value << 8) | static_cast<unsigned char>(bytes[at + i]);
  return value;
}

}  // namespace

TEST_CASE("read_elf reads SONAME, NEEDED in order and RUNPATH of a built library", "[elf]") {
  if (!test::has_c_compiler()) return;
  TempDir dir;
  const auto deps = dir.path() / "deps";
  test::shared_library(deps, "libbar.so.2", "bar");
  test::shared_library(deps, "libbaz.so.3", "baz");
  const auto foo =
      test::shared_library(dir.path() / "lib", "libfoo.so.1", "foo",
                           {"-L" + deps.string(), "-l:libbaz.so.3", "-l:libbar.so.2",
                            "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/../deps:/opt/elsewhere"});

  auto elf = read_elf(foo);
  REQUIRE(elf);
  CHECK(elf->path == foo);
  CHECK(elf->identity == test::host_identity());
  CHECK(elf->type == 3);  // ET_DYN
  CHECK(elf->has_dynamic_section);
  CHECK(elf->soname == "libfoo.so.1");
  REQUIRE(elf->needed.size() >= 2);
  CHECK(elf->needed[0] == "libbaz.so.3");
  CHECK(elf->needed[1] == "libbar.so.2");
  CHECK(elf->runpath == "$ORIGIN/../deps:/opt/elsewhere");
  CHECK_FALSE(elf->rpath);
  CHECK_FALSE(elf->nodeflib);
  if (const auto readelf = test::readelf_dynamic(foo)) {
    CHECK(elf->needed == readelf->needed);
    CHECK(elf->runpath == readelf->runpath);
  }
}

TEST_CASE("read_elf reads DT_RPATH from a library linked with --disable-new-dtags", "[elf]") {
  if (!test::has_c_compiler()) return;
  TempDir dir;
  const auto lib = test::shared_library(dir.path(), "libold.so.1", "old",
                                        {"-Wl,--disable-new-dtags", "-Wl,-rpath,${ORIGIN}/x"});
  auto elf = read_elf(lib);
  REQUIRE(elf);
  CHECK(elf->rpath == "${ORIGIN}/x");
  CHECK_FALSE(elf->runpath);
}

TEST_CASE("read_elf reads the -z nodefaultlib flag (DF_1_NODEFLIB)", "[elf]") {
  if (!test::has_c_compiler()) return;
  TempDir dir;
  const auto lib = test::shared_library(dir.path(), "libnodef.so.1", "f", {"-Wl,-z,nodefaultlib"});
  auto elf = read_elf(lib);
  REQUIRE(elf);
  CHECK(elf->nodeflib);
}

TEST_CASE("a static executable has no dynamic section and no dependencies", "[elf]") {
  if (!test::has_c_compiler()) return;
  TempDir dir;
  const auto exe = test::compile(dir.path() / "static", "void _start(void) { for (;;) {} }\n",
                                 {"-static", "-nostdlib"});
  auto elf = read_elf(exe);
  REQUIRE(elf);
  CHECK(elf->type == 2);  // ET_EXEC
  CHECK_FALSE(elf->has_dynamic_section);
  CHECK(elf->needed.empty());
  CHECK_FALSE(elf->soname);
}

TEST_CASE("read_elf reads 32- and 64-bit files of either byte order", "[elf]") {
  const auto elf_class = GENERATE(ElfClass::elf32, ElfClass::elf64);
  const auto byte_order = GENERATE(ByteOrder::little, ByteOrder::big);
  test::MiniElf spec;
  spec.elf_class = elf_class;
  spec.byte_order = byte_order;
  spec.machine = 20;  // PowerPC
  spec.needed = {"libone.so.1", "libtwo.so.2"};
  spec.soname = "libmini.so.4";
  spec.rpath = "/r";
  spec.runpath = "$ORIGIN";
  TempDir dir;
  auto elf = read_elf(dir.write("libmini.so.4", test::mini_elf(spec)));
  REQUIRE(elf);
  CHECK(elf->identity.elf_class == elf_class);
  CHECK(elf->identity.byte_order == byte_order);
  CHECK(elf->identity.machine == 20);
  CHECK(elf->needed == spec.needed);
  CHECK(elf->soname == spec.soname);
  CHECK(elf->rpath == spec.rpath);
  CHECK(elf->runpath == spec.runpath);
}

TEST_CASE("describe names class, byte order and machine", "[elf]") {
  CHECK(envkit::elf::describe({ElfClass::elf32, ByteOrder::little, 3}) ==
        "32-bit little-endian i386");
  CHECK(envkit::elf::describe({ElfClass::elf64, ByteOrder::big, 9999}) ==
        "64-bit big-endian machine 9999");
}

TEST_CASE("a file that is not ELF is reported as such, naming the file", "[elf]") {
  TempDir dir;
  const auto script = dir.write("libc.so", "/* GNU ld script */\nGROUP ( libc.so.6 )\n");
  auto result = read_elf(script);
  REQUIRE_FALSE(result);
  CHECK(result.error().message() == script.string() + " is not an ELF file");
  CHECK(result.error().causes().at(0) ==
        "it starts with the bytes 2f 2a 20 47, not the ELF magic 7f 45 4c 46");
  CHECK_FALSE(envkit::elf::has_elf_magic(script));

  const auto empty = dir.write("libempty.so", "");
  auto empty_result = read_elf(empty);
  REQUIRE_FALSE(empty_result);
  CHECK(empty_result.error().message() == empty.string() + " is not an ELF file");
  CHECK(empty_result.error().causes().at(0) == "it is empty");

  auto folder = read_elf(dir.path());
  REQUIRE_FALSE(folder);
  CHECK(folder.error().causes().at(0) == "it is not a regular file");

  auto missing = read_elf(dir.path() / "libnone.so");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code() == envkit::ErrorCode::failed);
  CHECK(missing.error().message() == "cannot read " + (dir.path() / "libnone.so").string());
}

TEST_CASE("a truncated ELF file is reported with the part that is cut", "[elf]") {
  if (!test::has_c_compiler()) return;
  TempDir dir;
  const auto lib = test::shared_library(dir.path() / "build", "libwhole.so.1", "whole");
  REQUIRE(envkit::elf::has_elf_magic(lib));
  const std::string header = envkit::sys::read_file(lib).value().substr(0, 64);
  REQUIRE(header[4] == 2);  // the arithmetic below is for ELFCLASS64
  REQUIRE(header[5] == 1);
  const auto phoff = little_endian(header, 32, 8);
  const auto phentsize = little_endian(header, 54, 2);
  const auto phnum = little_endian(header, 56, 2);
  const auto headers_end = phoff + phentsize * phnum;

  const auto check = [&](std::uintmax_t size, const std::string& cut) {
    const auto path = truncated_copy(lib, dir.path() / fmt::format("cut-{}.so", size), size);
    auto result = read_elf(path);
    REQUIRE_FALSE(result);
    CHECK(result.error().message() == path.string() + " is a truncated ELF file");
    CHECK_THAT(result.error().causes().at(0), Catch::StartsWith("the " + cut + " at offset"));
    CHECK_THAT(result.error().causes().at(0), Catch::Contains(fmt::format("({} bytes)", size)));
  };
  check(3, "ELF identification");
  check(40, "ELF header");
  check(phoff + phentsize, "program header table");
  check(headers_end, "dynamic section");
}

TEST_CASE("a malformed ELF file names what is wrong and where", "[elf]") {
  TempDir dir;
  test::MiniElf spec;
  spec.needed = {"libx.so.1"};
  spec.strtab_outside_segments = true;
  const auto path = dir.write("libbad.so", test::mini_elf(spec));
  auto result = read_elf(path);
  REQUIRE_FALSE(result);
  CHECK(result.error().message() == path.string() + " is not a valid ELF file");
  CHECK_THAT(result.error().causes().at(0),
             Catch::StartsWith("DT_STRTAB address 0x900000 (in the dynamic section at offset 0x"));
  CHECK_THAT(result.error().causes().at(0), Catch::EndsWith("is in no PT_LOAD segment"));

  std::string other_class = test::mini_elf({});
  other_class[4] = 3;
  auto unsupported = read_elf(dir.write("libclass3.so", other_class));
  REQUIRE_FALSE(unsupported);
  CHECK_THAT(unsupported.error().message(), Catch::EndsWith("has an unsupported ELF class"));
  CHECK(unsupported.error().causes().at(0) ==
        "the class byte at offset 0x4 is 3, neither 1 (32-bit) nor 2 (64-bit)");
}

TEST_CASE("read_elf_bytes reads a file's bytes as read_elf reads the file", "[elf]") {
  test::MiniElf spec;
  spec.elf_class = GENERATE(ElfClass::elf32, ElfClass::elf64);
  spec.byte_order = ByteOrder::big;
  spec.needed = {"libone.so.1"};
  spec.soname = "libmini.so.2";
  spec.runpath = "$ORIGIN";
  const std::string bytes = test::mini_elf(spec);
  TempDir dir;
  const auto path = dir.write("libmini.so.2", bytes);
  auto from_file = read_elf(path);
  auto from_bytes = envkit::elf::read_elf_bytes(bytes, path);
  REQUIRE(from_file);
  REQUIRE(from_bytes);
  CHECK(from_bytes->path == path);
  CHECK(from_bytes->identity == from_file->identity);
  CHECK(from_bytes->needed == spec.needed);
  CHECK(from_bytes->soname == spec.soname);
  CHECK(from_bytes->runpath == spec.runpath);

  // Cut anywhere, both refuse it with the same words.
  for (const std::size_t size :
       {std::size_t{0}, std::size_t{3}, std::size_t{40}, bytes.size() - 1}) {
    const auto cut_path = dir.write(fmt::format("cut-{}.so", size), bytes.substr(0, size));
    auto cut_file = read_elf(cut_path);
    auto cut_bytes = envkit::elf::read_elf_bytes(std::string_view(bytes).substr(0, size), cut_path);
    REQUIRE_FALSE(cut_file);
    REQUIRE_FALSE(cut_bytes);
    CHECK(cut_bytes.error().to_string() == cut_file.error().to_string());
  }
}
