// A large zip unpacked on several threads gives exactly what one thread gives,
// with the same checks.
#include <catch2/catch.hpp>

#include "archive_maker.hpp"
#include "same_extract.hpp"
#include "support/temp_dir.hpp"

namespace {

using Catch::Matchers::Contains;
using envkit::archive::ExtractOptions;
using envkit::archive::ExtractResult;
using envkit::test::Entry;
using envkit::test::Format;
using envkit::test::make_archive;
using envkit::test::pseudo_random;
using envkit::test::read_bytes;
using envkit::test::TempDir;
using envkit::test::tree;

// Like a cuDNN wheel: a few large libraries (more than the 16 MiB one thread
// handles alone), headers, and the dist-info.
std::vector<Entry> wheel_like() {
  std::vector<Entry> entries = {Entry::dir("nvidia/"), Entry::dir("nvidia/cudnn/")};
  for (int i = 0; i < 5; ++i) {
    Entry library = Entry::file("nvidia/cudnn/lib/libpart" + std::to_string(i) + ".so.9",
                                pseudo_random(200'000, static_cast<unsigned>(i + 1)), 0755);
    library.zeros = static_cast<std::uint64_t>(i + 1) << 22;  // 4..20 MiB
    entries.push_back(std::move(library));
  }
  for (int i = 0; i < 40; ++i) {
    entries.push_back(Entry::file("nvidia/cudnn/include/h" + std::to_string(i) + ".h",
                                  "// header " + std::to_string(i) + "\n"));
  }
  entries.push_back(Entry::file("nvidia_cudnn-9.dist-info/RECORD", "nvidia/...\n"));
  return entries;
}

std::filesystem::path write_zip(const TempDir& tmp, const std::vector<Entry>& entries) {
  const auto file = tmp.path() / "wheel.whl";
  envkit::test::write_bytes(file, make_archive(Format::zip, entries));
  return file;
}

ExtractOptions with_threads(unsigned threads) {
  ExtractOptions options;
  options.hash_files = true;
  options.threads = threads;
  return options;
}

}  // namespace

TEST_CASE("a large zip unpacks on several threads to the same tree and records", "[archive]") {
  TempDir tmp;
  const auto zip = write_zip(tmp, wheel_like());
  auto one = envkit::archive::extract_file(zip, tmp.path() / "one", with_threads(1));
  auto many = envkit::archive::extract_file(zip, tmp.path() / "many", with_threads(4));
  REQUIRE(one.ok());
  REQUIRE(many.ok());
  envkit::test::check_same_extract(*one, *many);
  CHECK(tree(tmp.path() / "many") == tree(tmp.path() / "one"));
  for (int i = 0; i < 5; ++i) {
    const auto name = "nvidia/cudnn/lib/libpart" + std::to_string(i) + ".so.9";
    CHECK(read_bytes(tmp.path() / "many" / name) == read_bytes(tmp.path() / "one" / name));
  }
  CHECK(envkit::test::mode_of(tmp.path() / "many/nvidia/cudnn/lib/libpart0.so.9") == 0755);
}

TEST_CASE("folders' and files' modes come out the same on several threads", "[archive]") {
  // The folder's mode is set once every thread is done: a thread making
  // `private/` on its way to a file would otherwise reset it.
  auto entries = wheel_like();
  entries.insert(
      entries.begin(),
      {.path = "nvidia/cudnn/lib/", .kind = envkit::test::Kind::directory, .mode = 0750});
  entries.push_back({.path = "private/", .kind = envkit::test::Kind::directory, .mode = 0700});
  entries.push_back(Entry::file("private/key", "secret", 0600));
  TempDir tmp;
  const auto zip = write_zip(tmp, entries);
  for (const unsigned threads : {1U, 4U}) {
    const auto dest = tmp.path() / std::to_string(threads);
    REQUIRE(envkit::archive::extract_file(zip, dest, with_threads(threads)).ok());
    CHECK(envkit::test::mode_of(dest / "nvidia/cudnn/lib") == 0750);
    CHECK(envkit::test::mode_of(dest / "nvidia/cudnn/lib/libpart4.so.9") == 0755);
    CHECK(envkit::test::mode_of(dest / "private") == 0700);
    CHECK(envkit::test::mode_of(dest / "private/key") == 0600);
  }
}

TEST_CASE("the byte limit holds across threads", "[archive]") {
  TempDir tmp;
  const auto zip = write_zip(tmp, wheel_like());
  auto options = with_threads(4);
  options.max_bytes = 30 << 20;  // the libraries alone are 61 MiB
  auto result = envkit::archive::extract_file(zip, tmp.path() / "dest", options);
  REQUIRE_FALSE(result.ok());
  CHECK_THAT(result.error().to_string(), Contains("more than 31457280 bytes, the limit"));
}

TEST_CASE("a zip naming a path twice is refused on any number of threads", "[archive]") {
  // A zip tool never writes one; which copy is "the" file would depend on the reader.
  auto entries = wheel_like();
  entries.push_back(Entry::file("nvidia/cudnn/include/h1.h", "// the later one\n"));
  TempDir tmp;
  const auto zip = write_zip(tmp, entries);
  for (const unsigned threads : {1U, 4U}) {
    auto result = envkit::archive::extract_file(zip, tmp.path() / "dest", with_threads(threads));
    REQUIRE_FALSE(result.ok());
    CHECK_THAT(result.error().to_string(),
               Contains("wheel.whl") && Contains("entry `nvidia/cudnn/include/h1.h`: the archive "
                                                 "names it twice"));
  }
}

TEST_CASE("a zip's symlinks beside its files give what one thread gives", "[archive]") {
  auto entries = wheel_like();
  entries.push_back(Entry::symlink("nvidia/cudnn/lib/libpart.so", "libpart0.so.9"));
  TempDir tmp;
  const auto zip = write_zip(tmp, entries);
  auto one = envkit::archive::extract_file(zip, tmp.path() / "one", with_threads(1));
  auto many = envkit::archive::extract_file(zip, tmp.path() / "many", with_threads(4));
  REQUIRE(one.ok());
  REQUIRE(many.ok());
  envkit::test::check_same_extract(*one, *many);
  CHECK(tree(tmp.path() / "many") == tree(tmp.path() / "one"));
  CHECK(read_bytes(tmp.path() / "many/nvidia/cudnn/include/h1.h") ==
        read_bytes(tmp.path() / "one/nvidia/cudnn/include/h1.h"));
}

TEST_CASE("damage found by one thread fails the whole unpack and names the entry", "[archive]") {
  TempDir tmp;
  auto bytes = make_archive(Format::zip, wheel_like());
  // Inside the compressed data of the first library (after its local header).
  const auto at = bytes.find("nvidia/cudnn/lib/libpart0.so.9") + 200;
  for (std::size_t i = 0; i < 64; ++i)
    bytes[at + i] = static_cast<char>(~bytes[at + i]);
  const auto zip = tmp.path() / "damaged.whl";
  envkit::test::write_bytes(zip, bytes);
  auto result = envkit::archive::extract_file(zip, tmp.path() / "dest", with_threads(4));
  REQUIRE_FALSE(result.ok());
  CHECK_THAT(result.error().to_string(), Contains("libpart0.so.9"));
  CHECK_THAT(result.error().to_string(), Contains("damaged.whl"));
}
