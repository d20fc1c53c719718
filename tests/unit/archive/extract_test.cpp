// The safe extractor on well-formed archives: every format, streamed and
// from a file; symlinks, exec bits, hashes, duplicates, stripping, mapping.
#include "envkit/archive/extract.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "archive_maker.hpp"
#include "envkit/core/sha256.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
using envkit::archive::EntryType;
using envkit::archive::ExtractedEntry;
using envkit::archive::ExtractOptions;
using envkit::archive::ExtractResult;
using envkit::test::Entry;
using envkit::test::Format;
using envkit::test::make_archive;
using envkit::test::MemorySource;
using envkit::test::mode_of;
using envkit::test::pseudo_random;
using envkit::test::read_bytes;
using envkit::test::TempDir;
using envkit::test::tree;

namespace {

// A CUDA-like tree: a symlink chain, an executable, a big library.
std::vector<Entry> cuda_like(const std::string& library) {
  return {
      Entry::dir("pkg/"),
      Entry::dir("pkg/lib/"),
      Entry::file("pkg/lib/libcudart.so.12.4.127", library, 0755),
      Entry::symlink("pkg/lib/libcudart.so.12", "libcudart.so.12.4.127"),
      Entry::symlink("pkg/lib/libcudart.so", "libcudart.so.12"),
      Entry::file("pkg/bin/nvcc", "#!/bin/sh\n", 0775),
      Entry::file("pkg/include/cuda_runtime_api.h", "#pragma once\n", 0444),
      Entry::symlink("pkg/include/up", "../lib"),
      Entry::file("pkg/LICENSE", "licence text\n", 0600),
  };
}

const ExtractedEntry* find(const ExtractResult& result, const std::string& path) {
  for (const auto& entry : result.entries) {
    if (entry.path == path) return &entry;
  }
  return nullptr;
}

void check_cuda_like(const fs::path& dest, const ExtractResult& result, const std::string& library,
                     bool modes_known) {
  CHECK(read_bytes(dest / "pkg/lib/libcudart.so") == library);
  CHECK(read_bytes(dest / "pkg/bin/nvcc") == "#!/bin/sh\n");
  CHECK(read_bytes(dest / "pkg/include/up/libcudart.so.12") == library);
  CHECK(fs::read_symlink(dest / "pkg/lib/libcudart.so") == "libcudart.so.12");
  CHECK(fs::read_symlink(dest / "pkg/lib/libcudart.so.12") == "libcudart.so.12.4.127");
  CHECK(result.bytes_written == library.size() + 10 + 13 + 13);
  const auto* lib = find(result, "pkg/lib/libcudart.so.12.4.127");
  REQUIRE(lib != nullptr);
  CHECK(lib->type == EntryType::file);
  CHECK(lib->size == library.size());
  const auto* link = find(result, "pkg/lib/libcudart.so");
  REQUIRE(link != nullptr);
  CHECK(link->type == EntryType::symlink);
  CHECK(link->link_target == "libcudart.so.12");
  if (!modes_known) return;
  CHECK(lib->executable);
  CHECK(mode_of(dest / "pkg/lib/libcudart.so.12.4.127") == 0755);
  CHECK(mode_of(dest / "pkg/bin/nvcc") == 0755);
  CHECK(mode_of(dest / "pkg/include/cuda_runtime_api.h") == 0644);
  CHECK(mode_of(dest / "pkg/LICENSE") == 0600);
  CHECK(mode_of(dest / "pkg/include") == 0755);
}

}  // namespace

TEST_CASE("every format unpacks the same tree from a file and from a stream", "[archive]") {
  const auto library = pseudo_random(300'000);
  const auto entries = cuda_like(library);
  for (const auto format :
       {Format::tar, Format::gnutar, Format::tar_gz, Format::tar_xz, Format::tar_bz2,
        Format::tar_zst, Format::tar_lz4, Format::zip, Format::zip_stored}) {
    DYNAMIC_SECTION(envkit::test::format_name(format)) {
      const auto bytes = make_archive(format, entries);
      const bool zip = format == Format::zip || format == Format::zip_stored;
      TempDir tmp;
      const auto file = tmp.path() / (zip ? "cuda.whl" : "cuda.archive");
      envkit::test::write_bytes(file, bytes);

      auto from_file = envkit::archive::extract_file(file, tmp.path() / "file");
      REQUIRE(from_file.ok());
      check_cuda_like(tmp.path() / "file", *from_file, library, true);

      // A stream cannot reach a zip's central directory: the contents arrive,
      // the modes and links it keeps there do not, so only tars are compared.
      if (zip) continue;
      MemorySource source(bytes, 7000);
      auto streamed = envkit::archive::extract(source, tmp.path() / "stream");
      REQUIRE(streamed.ok());
      check_cuda_like(tmp.path() / "stream", *streamed, library, true);
      CHECK(tree(tmp.path() / "stream") == tree(tmp.path() / "file"));
    }
  }
}

TEST_CASE("a zip streamed still gives its files' contents", "[archive]") {
  const auto library = pseudo_random(100'000, 7);
  for (const auto format : {Format::zip, Format::zip_stored}) {
    DYNAMIC_SECTION(envkit::test::format_name(format)) {
      TempDir tmp;
      MemorySource source(
          make_archive(format, {Entry::file("a/lib.so", library), Entry::file("a/b.txt", "b")}),
          7000);
      auto result = envkit::archive::extract(source, tmp.path() / "dest");
      REQUIRE(result.ok());
      CHECK(read_bytes(tmp.path() / "dest/a/lib.so") == library);
      CHECK(read_bytes(tmp.path() / "dest/a/b.txt") == "b");
    }
  }
}

TEST_CASE("a zip's external attributes give the executable bit and symlinks", "[archive]") {
  TempDir tmp;
  const auto file = tmp.path() / "nvidia_cuda_nvcc_cu12-12.4.131-py3-none-manylinux2014_x86_64.whl";
  envkit::test::write_bytes(
      file, make_archive(Format::zip, {Entry::file("nvidia/cuda_nvcc/bin/ptxas", "elf", 0755),
                                       Entry::file("nvidia/cuda_nvcc/bin/data", "d", 0644),
                                       Entry::symlink("nvidia/cuda_nvcc/bin/link", "ptxas")}));
  auto result = envkit::archive::extract_file(file, tmp.path() / "dest");
  REQUIRE(result.ok());
  const auto bin = tmp.path() / "dest/nvidia/cuda_nvcc/bin";
  CHECK(mode_of(bin / "ptxas") == 0755);
  CHECK(mode_of(bin / "data") == 0644);
  CHECK(fs::is_symlink(bin / "link"));
  CHECK(find(*result, "nvidia/cuda_nvcc/bin/ptxas")->executable);
  CHECK_FALSE(find(*result, "nvidia/cuda_nvcc/bin/data")->executable);
}

TEST_CASE("hash_files gives each file's sha256", "[archive]") {
  TempDir tmp;
  const auto big = pseudo_random(3'000'000, 3);  // several reads of the 1 MiB buffer
  MemorySource source(
      make_archive(Format::tar_xz, {Entry::file("big.bin", big), Entry::file("empty", ""),
                                    Entry::symlink("link", "big.bin")}),
      4099);
  ExtractOptions options;
  options.hash_files = true;
  auto result = envkit::archive::extract(source, tmp.path() / "dest", options);
  REQUIRE(result.ok());
  CHECK(find(*result, "big.bin")->sha256 == envkit::core::sha256_hex(big));
  CHECK(find(*result, "empty")->sha256 == envkit::core::sha256_hex(""));
  CHECK(find(*result, "link")->sha256.empty());
  CHECK(result->bytes_written == big.size());
}

TEST_CASE("setuid, setgid, sticky and group/other write bits are dropped", "[archive]") {
  TempDir tmp;
  MemorySource source(make_archive(
      Format::tar, {Entry::file("suid", "x", 04755),
                    Entry::file("sgid", "x", 02640),
                    Entry::file("odd", "x", 0401),
                    Entry::file("open", "x", 0666),
                    {.path = "sticky/", .kind = envkit::test::Kind::directory, .mode = 01777}}));
  auto result = envkit::archive::extract(source, tmp.path() / "dest");
  REQUIRE(result.ok());
  CHECK(mode_of(tmp.path() / "dest/suid") == 0755);
  CHECK(mode_of(tmp.path() / "dest/sgid") == 0640);
  // The owner may always read and write what envkit unpacked.
  CHECK(mode_of(tmp.path() / "dest/odd") == 0601);
  CHECK(mode_of(tmp.path() / "dest/open") == 0644);
  CHECK(mode_of(tmp.path() / "dest/sticky") == 0755);
}

TEST_CASE("restrictive modes are kept, files and folders, in every format", "[archive]") {
  const std::vector<Entry> entries = {
      {.path = "private/", .kind = envkit::test::Kind::directory, .mode = 0700},
      Entry::file("private/id_rsa", "key", 0600),
      {.path = "group/", .kind = envkit::test::Kind::directory, .mode = 0750},
      Entry::file("group/tool", "#!/bin/sh\n", 0750),
      Entry::file("group/run", "#!/bin/sh\n", 0700),
      Entry::file("group/data", "d", 0640),
      Entry::file("public/lib.so", "elf", 0755),
      Entry::file("public/header.h", "h", 0644),
  };
  for (const auto format : {Format::tar, Format::tar_gz, Format::zip}) {
    for (const unsigned threads : {1U, 4U}) {
      INFO(envkit::test::format_name(format) << " threads: " << threads);
      TempDir tmp;
      const auto file = tmp.path() / "modes";
      envkit::test::write_bytes(file, make_archive(format, entries));
      ExtractOptions options;
      options.threads = threads;
      auto result = envkit::archive::extract_file(file, tmp.path() / "dest", options);
      REQUIRE(result.ok());
      const auto dest = tmp.path() / "dest";
      CHECK(mode_of(dest / "private") == 0700);
      CHECK(mode_of(dest / "private/id_rsa") == 0600);
      CHECK(mode_of(dest / "group") == 0750);
      CHECK(mode_of(dest / "group/tool") == 0750);
      CHECK(mode_of(dest / "group/run") == 0700);
      CHECK(mode_of(dest / "group/data") == 0640);
      CHECK(mode_of(dest / "public") == 0755);
      CHECK(mode_of(dest / "public/lib.so") == 0755);
      CHECK(mode_of(dest / "public/header.h") == 0644);
      CHECK(find(*result, "group/run")->executable);
      CHECK_FALSE(find(*result, "private/id_rsa")->executable);
    }
  }
}

TEST_CASE("a later file replaces an earlier one at the same path", "[archive]") {
  TempDir tmp;
  MemorySource source(
      make_archive(Format::tar, {Entry::file("a/x", "first", 0755), Entry::hardlink("a/y", "a/x"),
                                 Entry::file("a/x", "second")}));
  auto result = envkit::archive::extract(source, tmp.path() / "dest");
  REQUIRE(result.ok());
  CHECK(read_bytes(tmp.path() / "dest/a/x") == "second");
  CHECK(mode_of(tmp.path() / "dest/a/x") == 0644);
  // The hard link made before keeps the first file.
  CHECK(read_bytes(tmp.path() / "dest/a/y") == "first");
  std::size_t records = 0;
  for (const auto& entry : result->entries) {
    if (entry.path == "a/x") ++records;
  }
  CHECK(records == 1);
  CHECK(find(*result, "a/x")->size == 6);
}

TEST_CASE("hard links to files unpacked before them", "[archive]") {
  TempDir tmp;
  MemorySource source(
      make_archive(Format::gnutar, {Entry::file("lib/libz.so.1.3", "zlib", 0755),
                                    Entry::hardlink("lib/libz.so.1", "lib/libz.so.1.3"),
                                    Entry::hardlink("other/copy", "lib/libz.so.1.3")}));
  ExtractOptions options;
  options.hash_files = true;
  auto result = envkit::archive::extract(source, tmp.path() / "dest", options);
  REQUIRE(result.ok());
  CHECK(read_bytes(tmp.path() / "dest/lib/libz.so.1") == "zlib");
  CHECK(read_bytes(tmp.path() / "dest/other/copy") == "zlib");
  CHECK(fs::hard_link_count(tmp.path() / "dest/lib/libz.so.1.3") == 3);
  const auto* linked = find(*result, "other/copy");
  REQUIRE(linked != nullptr);
  CHECK(linked->type == EntryType::file);
  CHECK(linked->executable);
  CHECK(linked->size == 4);
  CHECK(linked->sha256 == envkit::core::sha256_hex("zlib"));
}

TEST_CASE("strip_components drops leading folders as tar does", "[archive]") {
  TempDir tmp;
  MemorySource source(make_archive(
      Format::tar_gz, {Entry::dir("./"), Entry::dir("./top/"), Entry::file("./top/README", "r"),
                       Entry::file("./top/lib/libx.so.1", "x"), Entry::file("loose", "skipped"),
                       Entry::hardlink("./top/lib/libx.so", "./top/lib/libx.so.1")}));
  ExtractOptions options;
  options.strip_components = 1;
  auto result = envkit::archive::extract(source, tmp.path() / "dest", options);
  REQUIRE(result.ok());
  CHECK(tree(tmp.path() / "dest") ==
        std::vector<std::string>{"README", "lib/", "lib/libx.so", "lib/libx.so.1"});
  std::vector<std::string> paths;
  for (const auto& entry : result->entries)
    paths.push_back(entry.path);
  CHECK(paths == std::vector<std::string>{"README", "lib", "lib/libx.so.1", "lib/libx.so"});
}

TEST_CASE("the map places entries or leaves them out, folders come with a slash", "[archive]") {
  TempDir tmp;
  MemorySource source(
      make_archive(Format::tar, {Entry::dir("in/"), Entry::file("in/a", "a"),
                                 Entry::file("in/sub/b", "b"), Entry::file("out/c", "c")}));
  std::vector<std::string> seen;
  ExtractOptions options;
  options.map = [&](std::string_view path) -> std::optional<std::string> {
    seen.emplace_back(path);
    if (!path.starts_with("in/")) return std::nullopt;
    return "moved/" + std::string(path.substr(3));
  };
  auto result = envkit::archive::extract(source, tmp.path() / "dest", options);
  REQUIRE(result.ok());
  CHECK(seen == std::vector<std::string>{"in/", "in/a", "in/sub/b", "out/c"});
  CHECK(tree(tmp.path() / "dest") ==
        std::vector<std::string>{"moved/", "moved/a", "moved/sub/", "moved/sub/b"});
}

TEST_CASE("the same symlink twice and folders listed again are fine", "[archive]") {
  TempDir tmp;
  MemorySource source(make_archive(Format::tar, {Entry::dir("d/"), Entry::symlink("d/l", "x"),
                                                 Entry::dir("d/"), Entry::symlink("d/l", "x")}));
  auto result = envkit::archive::extract(source, tmp.path() / "dest");
  REQUIRE(result.ok());
  CHECK(result->entries.size() == 2);
  CHECK(tree(tmp.path() / "dest") == std::vector<std::string>{"d/", "d/l -> x"});
}

TEST_CASE("an empty tar unpacks to nothing", "[archive]") {
  TempDir tmp;
  MemorySource source(make_archive(Format::tar_gz, {}));
  auto result = envkit::archive::extract(source, tmp.path() / "dest");
  REQUIRE(result.ok());
  CHECK(result->entries.empty());
  CHECK(fs::is_directory(tmp.path() / "dest"));
}

namespace {

// The peak resident memory since the last reset, in KiB (nullopt off Linux).
std::optional<long> peak_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("VmHWM:")) return std::stol(line.substr(6));
  }
  return std::nullopt;
}

bool reset_peak() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

}  // namespace

TEST_CASE("memory stays flat however big the files are", "[archive][memory]") {
  constexpr std::uint64_t kSize = std::uint64_t{256} << 20;
  const auto bytes = make_archive(Format::tar_zst, {{.path = "zeros", .zeros = kSize}});
  TempDir tmp;
  if (!reset_peak() || !peak_kib()) {
    envkit::test::skip_test(envkit::test::SkipKind::expected,
                            "no /proc/self/clear_refs to measure peak memory with");
    return;
  }
  const auto before = *peak_kib();
  MemorySource source(bytes);
  auto result = envkit::archive::extract(source, tmp.path() / "dest");
  REQUIRE(result.ok());
  CHECK(fs::file_size(tmp.path() / "dest/zeros") == kSize);
  // Two 1 MiB buffers and the decompressor's window, nowhere near the file.
  CHECK(*peak_kib() - before < 32 * 1024);
}

TEST_CASE("real CUDA files survive a tar.xz round trip byte for byte", "[archive][cuda]") {
  const fs::path cuda = "/usr/local/cuda";
  std::vector<std::pair<std::string, fs::path>> picks;
  for (const char* lib : {"lib64/libcudart.so.13", "lib64/libcudart.so.12"}) {
    if (fs::is_regular_file(cuda / lib)) {
      picks.emplace_back(lib, cuda / lib);
      break;
    }
  }
  if (fs::is_regular_file(cuda / "include/cuda_runtime_api.h")) {
    picks.emplace_back("include/cuda_runtime_api.h", cuda / "include/cuda_runtime_api.h");
  }
  if (picks.size() < 2) {
    envkit::test::skip_test(envkit::test::SkipKind::expected,
                            "no CUDA toolkit at " + cuda.string());
    return;
  }
  std::vector<Entry> entries;
  for (const auto& [name, path] : picks) {
    entries.push_back(Entry::file("cuda-archive/" + name, read_bytes(path), 0755));
  }
  TempDir tmp;
  envkit::test::write_bytes(tmp.path() / "cuda.tar.xz", make_archive(Format::tar_xz, entries));
  ExtractOptions options;
  options.strip_components = 1;
  options.hash_files = true;
  auto result =
      envkit::archive::extract_file(tmp.path() / "cuda.tar.xz", tmp.path() / "dest", options);
  REQUIRE(result.ok());
  for (const auto& [name, path] : picks) {
    const auto original = read_bytes(path);
    CHECK(read_bytes(tmp.path() / "dest" / name) == original);
    CHECK(find(*result, name)->sha256 == envkit::core::sha256_hex(original));
  }
}
