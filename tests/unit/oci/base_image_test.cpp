#include "envkit/oci/base_image.hpp"

#include <catch2/catch.hpp>

#include "envkit/oci/layer_encoder.hpp"
#include "envkit/oci/tar_writer.hpp"
#include "support/temp_dir.hpp"

namespace envkit::oci {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

// A one-layer base layout holding a libc.so.6 that says `banner`.
fs::path base_layout(const TempDir& dir, const std::string& banner) {
  const auto blob = dir.path() / "base-layer.gz";
  auto encoder = LayerEncoder::create(blob, Compression::gzip);
  REQUIRE(encoder);
  REQUIRE(write_tar({{.path = "etc/os-release", .content = "ID=test\n"},
                     {.path = "usr/lib/x86_64-linux-gnu/libc.so.6",
                      .executable = true,
                      .content = std::string(3000, '\x7f') + banner + std::string(700, '\0')}},
                    0, [&](std::string_view bytes) { return encoder->write(bytes); }));
  auto digests = encoder->finish();
  REQUIRE(digests);
  const auto layout = dir.path() / "base";
  REQUIRE(write_image(layout, {.ref = "bookworm",
                               .env = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"},
                               .layers = {{.digests = *digests, .blob = blob}}}));
  return layout;
}

lock::PlatformLock lock_with_wheel(const std::string& file) {
  lock::PythonClosure closure;
  closure.packages.push_back({.name = "numpy",
                              .version = "2.0.0",
                              .url = "https://files.pythonhosted.org/packages/ab/" + file,
                              .sha256 = std::string(64, 'a')});
  return {.platform = specs::Platform::linux_x86_64, .python = closure};
}

TEST_CASE("export base image: a local layout's layers, Env and glibc", "[oci][base]") {
  const TempDir dir;
  const auto layout =
      base_layout(dir, "GNU C Library (Debian GLIBC 2.36-9) stable release version 2.36.\n");
  auto base = read_base_image(layout, "bookworm", specs::Platform::linux_x86_64);
  INFO((base ? "" : base.error().to_string()));
  REQUIRE(base);
  CHECK(base->layers.size() == 1);
  CHECK(base->glibc == "2.36");
  CHECK(base->env == std::vector<std::string>{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"});
  CHECK(check_base_glibc(*base,
                         lock_with_wheel("numpy-2.0.0-cp311-cp311-manylinux_2_28_x86_64.whl")));

  auto missing = read_base_image(layout, "sid", specs::Platform::linux_x86_64);
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message(), Catch::Contains("no such image"));
}

TEST_CASE("export base image: a glibc older than the wheels' manylinux tag is refused, naming both",
          "[oci][base]") {
  const TempDir dir;
  const auto layout =
      base_layout(dir, "GNU C Library stable release version 2.17, by Roland McGrath\n");
  auto base = read_base_image(layout, "bookworm", specs::Platform::linux_x86_64);
  REQUIRE(base);
  CHECK(base->glibc == "2.17");
  const auto wheel = "numpy-2.0.0-cp311-cp311-manylinux_2_28_x86_64.whl";
  auto refused = check_base_glibc(*base, lock_with_wheel(wheel));
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message(), Catch::Contains("glibc 2.17") && Catch::Contains(wheel) &&
                                            Catch::Contains("glibc 2.28"));
  CHECK(check_base_glibc(
      *base,
      lock_with_wheel("numpy-1.26.4-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.whl")));
}

TEST_CASE("export base image: glibc versions from names and banners, Env merged by name",
          "[oci][base]") {
  CHECK(glibc_version_of("libc-2.31.so", "") == "2.31");
  CHECK(glibc_version_of("libc.so.6", "xx release version 2.39.\n") == "2.39");
  CHECK_FALSE(glibc_version_of("libc.so.6", "no banner"));
  CHECK(
      merged_env({"PATH=/bin", "LANG=C"}, {"PATH=/opt/envkit/bin:/bin", "CUDA_HOME=/opt/envkit"}) ==
      std::vector<std::string>{"PATH=/opt/envkit/bin:/bin", "LANG=C", "CUDA_HOME=/opt/envkit"});
}

}  // namespace
}  // namespace envkit::oci
