// The smoke build's decisions that need no nvcc: linking, the prefix check, the cache key.
#include "envkit/smoke/build.hpp"

#include <catch2/catch.hpp>
#include <filesystem>

#include "support/temp_dir.hpp"

namespace envkit::smoke {
namespace {

namespace fs = std::filesystem;

TEST_CASE("a library links by its development link, else by its soname", "[smoke]") {
  const std::vector<std::string> archive = {"libcudnn.so", "libcudnn.so.9", "libcudnn_ops.so.9"};
  CHECK(link_flag("cudnn", archive) == "-lcudnn");
  const std::vector<std::string> wheel = {"libcudnn.so.9.1.0", "libcudnn.so.9", "libcudnn.so.8",
                                          "libcudnn_ops.so.9"};
  CHECK(link_flag("cudnn", wheel) == "-l:libcudnn.so.9");
  // libcublasLt is another library, not a version of libcublas.
  const std::vector<std::string> lt_only = {"libcublasLt.so.12", "libcublasLt.so"};
  CHECK_FALSE(link_flag("cublas", lt_only));
  CHECK_FALSE(link_flag("cudnn", {}));
}

TEST_CASE("the prefix check names every missing part and how to get it", "[smoke]") {
  const test::TempDir prefix;
  auto checked = check_prefix(prefix.path());
  REQUIRE_FALSE(checked);
  const auto& error = checked.error();
  CHECK(error.code() == ErrorCode::failed);
  CHECK_THAT(error.headline(), Catch::Contains("bin/nvcc"));
  CHECK_THAT(error.headline(), Catch::Contains("cuDNN"));
  CHECK_THAT(error.headline(), Catch::Contains("libcublas"));
  const auto hints = Catch::Detail::stringify(error.hints());
  CHECK_THAT(hints, Catch::Contains("--packaging archive"));
  CHECK_THAT(hints, Catch::Contains("cudnn"));

  prefix.write("bin/nvcc", "#!/bin/sh\n");
  prefix.write("include/cudnn_version.h", "");
  prefix.write("lib/libcudnn.so.9", "");
  prefix.write("lib/libcublas.so", "");
  checked = check_prefix(prefix.path());
  REQUIRE(checked);
  CHECK(checked->nvcc == prefix.path() / "bin" / "nvcc");
  const std::vector<std::string> links = {"-l:libcudnn.so.9", "-lcublas"};
  CHECK(checked->link_flags == links);
}

TEST_CASE("the cache key changes with every input", "[smoke]") {
  const CacheKeyInputs base{.smoke_cu = "cu",
                            .smoke_model = "model",
                            .nvcc_version = "release 12.4",
                            .nvcc_flags = {"-gencode", "arch=compute_90,code=sm_90"},
                            .host_compiler = "/usr/bin/gcc",
                            .host_compiler_version = "gcc 12.2.0",
                            .prefix_packages = "cudnn 9.1.0.70 cuda12 cudnn 0123\n"};
  const auto key = cache_key(base);
  CHECK(key.size() == 64);
  CHECK(cache_key(base) == key);
  auto changed = base;
  changed.prefix_packages = "cudnn 9.1.1.17 cuda12 cudnn 4567\n";
  CHECK(cache_key(changed) != key);
  changed = base;
  changed.nvcc_flags.clear();
  CHECK(cache_key(changed) != key);
  changed = base;
  changed.host_compiler = "/usr/bin/g++-11";
  CHECK(cache_key(changed) != key);
  // Where one input ends and the next begins is part of the key.
  changed = base;
  changed.smoke_cu = "cum";
  changed.smoke_model = "odel";
  CHECK(cache_key(changed) != key);
}

TEST_CASE("last_lines keeps the end of a log, indented", "[smoke]") {
  CHECK(last_lines("a\nb\nc\n\n", 2) == "    b\n    c");
  CHECK(last_lines("only", 5) == "    only");
  CHECK(last_lines("", 3).empty());
}

TEST_CASE("the sources directory holds the smoke program", "[smoke]") {
  CHECK(fs::is_regular_file(sources_dir() / "smoke.cu"));
  CHECK(fs::is_regular_file(sources_dir() / "smoke_model.hpp"));
  CHECK(fs::is_regular_file(sources_dir() / "framework_smoke.py"));
}

}  // namespace
}  // namespace envkit::smoke
