#include "envkit/sys/fs.hpp"

#include <sys/stat.h>

#include <catch2/catch.hpp>

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

TEST_CASE("read_file names the path it could not read", "[sys][fs]") {
  auto result = envkit::sys::read_file("/nonexistent/envkit.yaml");
  REQUIRE_FALSE(result);
  CHECK(result.error().message() == "cannot read /nonexistent/envkit.yaml");
}
