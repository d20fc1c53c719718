#include "envkit/sys/fs.hpp"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <vector>

#include "support/temp_dir.hpp"

using envkit::test::TempDir;
namespace fs = std::filesystem;

TEST_CASE("write_file_atomic replaces a file whole and leaves no temp files", "[sys][fs]") {
  TempDir dir;
  const auto path = dir.path() / "envkit.yaml";
  REQUIRE(envkit::sys::write_file_atomic(path, "first\n").ok());
  REQUIRE(envkit::sys::write_file_atomic(path, "second\n").ok());
  CHECK(envkit::sys::read_file(path).value() == "second\n");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path()))
    ++entries;
  CHECK(entries == 1);
}

TEST_CASE("write_file_atomic fails cleanly where it cannot write", "[sys][fs]") {
  TempDir dir;
  const auto missing = dir.path() / "no-such-dir" / "file";
  auto result = envkit::sys::write_file_atomic(missing, "x");
  REQUIRE_FALSE(result);
  CHECK(result.error().message() == "cannot write " + missing.string());
  CHECK(result.error().causes().at(0) == "No such file or directory");
}

TEST_CASE(
    "write_files_atomic writes several files, and one that cannot be written leaves none of "
    "them",
    "[sys][fs]") {
  TempDir dir;
  const auto receipt = dir.path() / "cuda.json";
  const auto state = dir.path() / "state.json";
  REQUIRE(envkit::sys::write_file_atomic(receipt, "old receipt\n").ok());
  const std::vector<envkit::sys::FileContent> both{{receipt, "new receipt\n"}, {state, "state\n"}};
  REQUIRE(envkit::sys::write_files_atomic(both).ok());
  CHECK(envkit::sys::read_file(receipt).value() == "new receipt\n");
  CHECK(envkit::sys::read_file(state).value() == "state\n");

  // The second cannot be written: the first keeps its old content, no temp stays.
  const auto missing = dir.path() / "no-such-dir" / "state.json";
  const std::vector<envkit::sys::FileContent> broken{{receipt, "newer receipt\n"},
                                                     {missing, "state\n"}};
  auto result = envkit::sys::write_files_atomic(broken);
  REQUIRE_FALSE(result);
  CHECK(result.error().message() == "cannot write " + missing.string());
  CHECK(envkit::sys::read_file(receipt).value() == "new receipt\n");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path()))
    ++entries;
  CHECK(entries == 2);
}

TEST_CASE("read_file names the path it could not read", "[sys][fs]") {
  auto result = envkit::sys::read_file("/nonexistent/envkit.yaml");
  REQUIRE_FALSE(result);
  CHECK(result.error().message() == "cannot read /nonexistent/envkit.yaml");
}

TEST_CASE("read_file refuses what never ends: a FIFO and a device", "[sys][fs]") {
  TempDir dir;
  const auto fifo = dir.path() / "envkit.yaml";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // Nobody writes to the FIFO: reading it would wait forever.
  auto from_fifo = envkit::sys::read_file(fifo);
  REQUIRE_FALSE(from_fifo);
  CHECK(from_fifo.error().message() == fifo.string() + " is a FIFO, not a regular file");
  auto from_zero = envkit::sys::read_file("/dev/zero");
  REQUIRE_FALSE(from_zero);
  CHECK(from_zero.error().message() == "/dev/zero is a character device, not a regular file");
  auto from_dir = envkit::sys::read_file(dir.path());
  CHECK_FALSE(from_dir);
}

TEST_CASE("read_file stops one byte past its limit", "[sys][fs]") {
  TempDir dir;
  const auto path = dir.path() / "envkit.lock";
  REQUIRE(envkit::sys::write_file_atomic(path, std::string(3 << 20, 'x')).ok());
  auto too_big = envkit::sys::read_file(path, std::size_t{2} << 20);
  REQUIRE_FALSE(too_big);
  CHECK(too_big.error().message() ==
        path.string() + " is larger than 2 MiB, the most envkit reads from an input file");
  CHECK(envkit::sys::read_file(path, std::size_t{3} << 20).value().size() == std::size_t{3} << 20);
  // A /proc file states no size; it is read all the same.
  CHECK_THAT(envkit::sys::read_file("/proc/self/status").value(), Catch::Contains("Name:"));
}
