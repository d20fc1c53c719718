// The elf module on libraries this machine has: the libc this test runs with,
// and a CUDA toolkit with cuDNN when /usr/local/cuda has one.

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>

#include "elf_fixtures.hpp"
#include "envkit/elf/dependency_check.hpp"

namespace fs = std::filesystem;
namespace test = envkit::test;
using envkit::elf::read_elf;

namespace {

// The libc mapped into this process, from /proc/self/maps.
std::optional<fs::path> mapped_libc() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const fs::path path = line.substr(slash);
    const std::string name = path.filename().string();
    if (name.starts_with("libc.so") || (name.starts_with("libc-") && name.ends_with(".so"))) {
      return path;
    }
  }
  return std::nullopt;
}

std::string ld_library_path() {
  const char* value = std::getenv("LD_LIBRARY_PATH");
  return value == nullptr ? std::string() : std::string(value);
}

}  // namespace

TEST_CASE("the libc this test runs with is read and is where ld.so found it", "[elf][system]") {
  const auto libc_path = mapped_libc();
  if (!libc_path) {
    test::skip_test(test::SkipKind::expected, "no libc in /proc/self/maps (not glibc?)");
    return;
  }
  auto libc = read_elf(*libc_path);
  REQUIRE(libc);
  REQUIRE(libc->soname);
  if (const auto readelf = test::readelf_dynamic(*libc_path)) {
    CHECK(libc->soname == readelf->soname);
    CHECK(libc->needed == readelf->needed);
  }

  auto self = read_elf(fs::read_symlink("/proc/self/exe"));
  REQUIRE(self);
  CHECK(self->identity == libc->identity);
  CHECK(std::find(self->needed.begin(), self->needed.end(), *libc->soname) != self->needed.end());
  const auto resolution = envkit::elf::resolve_needed(
      *self, *libc->soname, envkit::elf::system_search_context(ld_library_path()));
  INFO("resolved to " << (resolution.path ? resolution.path->string() : "nothing"));
  REQUIRE(resolution.found());
  CHECK(fs::equivalent(*resolution.path, *libc_path));
}

TEST_CASE("cuDNN's dependencies resolve within the CUDA library folder and the system",
          "[elf][system][cuda]") {
  const fs::path cuda = "/usr/local/cuda";
  const fs::path lib = cuda / "lib64";
  const fs::path ops = lib / "libcudnn_ops.so.9";
  if (!fs::exists(ops)) {
    test::skip_test(test::SkipKind::expected, "no cuDNN 9 at " + ops.string());
    return;
  }
  auto elf = read_elf(ops);
  REQUIRE(elf);
  CHECK(elf->soname == ops.filename().string());
  CHECK_FALSE(elf->needed.empty());
  if (const auto readelf = test::readelf_dynamic(ops)) {
    CHECK(elf->needed == readelf->needed);
    CHECK(elf->runpath == readelf->runpath);
    CHECK(elf->rpath == readelf->rpath);
  }

  const auto system = envkit::elf::system_search_context("");
  auto report = envkit::elf::check_dependencies({cuda, {lib}}, system);
  REQUIRE(report);
  CHECK(report->unreadable.empty());
  std::size_t cudnn_dependencies = 0;
  for (const auto& dependency : report->dependencies) {
    const std::string needed_by = dependency.needed_by.filename().string();
    const auto& resolution = dependency.resolution;
    if (!resolution.found()) {
      // Some CUDA libraries need the driver's libcuda.so.1, absent without a GPU.
      WARN(needed_by << " needs " << dependency.name << ", which is not found");
    }
    if (!needed_by.starts_with("libcudnn")) continue;
    ++cudnn_dependencies;
    INFO(needed_by << " needs " << dependency.name);
    REQUIRE(resolution.found());
    // In the CUDA folder when the folder has it, else from the system.
    CHECK(dependency.from_prefix == fs::exists(lib / dependency.name));
    if (!dependency.from_prefix) CHECK(resolution.rule == envkit::elf::SearchRule::system);
  }
  CHECK(cudnn_dependencies > 0);
}
