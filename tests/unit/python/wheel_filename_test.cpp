#include "envkit/python/wheel_filename.hpp"

#include <catch2/catch.hpp>
#include <string>

using envkit::ErrorCode;
using envkit::python::parse_wheel_filename;

TEST_CASE("wheel file names of PyPI's NVIDIA wheels", "[python][wheel]") {
  // As pip's report of `nvidia-cudnn-cu12==9.1.0.70` names them (tests/data/python).
  auto cudnn = parse_wheel_filename("nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl");
  REQUIRE(cudnn);
  CHECK(cudnn->distribution == "nvidia-cudnn-cu12");
  CHECK(cudnn->version == "9.1.0.70");
  CHECK(cudnn->build_tag.empty());
  CHECK(cudnn->python_tag == "py3");
  CHECK(cudnn->abi_tag == "none");
  CHECK(cudnn->platform_tag == "manylinux2014_x86_64");

  // A compressed tag set stays as written.
  auto nvrtc = parse_wheel_filename(
      "nvidia_cuda_nvrtc_cu12-12.9.86-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl");
  REQUIRE(nvrtc);
  CHECK(nvrtc->distribution == "nvidia-cuda-nvrtc-cu12");
  CHECK(nvrtc->platform_tag == "manylinux2010_x86_64.manylinux_2_12_x86_64");

  auto windows = parse_wheel_filename("nvidia_cublas_cu12-12.9.2.10-py3-none-win_amd64.whl");
  REQUIRE(windows);
  CHECK(windows->platform_tag == "win_amd64");
}

TEST_CASE("wheel file names of torch, with and without a local version", "[python][wheel]") {
  auto pypi = parse_wheel_filename("torch-2.4.0-cp311-cp311-manylinux1_x86_64.whl");
  REQUIRE(pypi);
  CHECK(pypi->distribution == "torch");
  CHECK(pypi->version == "2.4.0");
  CHECK(pypi->python_tag == "cp311");
  CHECK(pypi->abi_tag == "cp311");
  CHECK(pypi->platform_tag == "manylinux1_x86_64");

  // download.pytorch.org/whl/cu121 (the URL spells `+` as %2B; the file name has `+`).
  auto cu121 = parse_wheel_filename("torch-2.4.0+cu121-cp311-cp311-linux_x86_64.whl");
  REQUIRE(cu121);
  CHECK(cu121->version == "2.4.0+cu121");
  CHECK(cu121->platform_tag == "linux_x86_64");

  auto universal = parse_wheel_filename("six-1.16.0-py2.py3-none-any.whl");
  REQUIRE(universal);
  CHECK(universal->python_tag == "py2.py3");
  CHECK(universal->platform_tag == "any");

  auto mixed_case = parse_wheel_filename("PyYAML-6.0.1-cp311-cp311-manylinux_2_17_x86_64.whl");
  REQUIRE(mixed_case);
  CHECK(mixed_case->distribution == "pyyaml");
}

TEST_CASE("wheel file names with a build tag", "[python][wheel]") {
  // PEP 427's optional build tag, which starts with a digit (made-up names of that shape).
  auto tagged = parse_wheel_filename("tensorflow_gpu-1.6.0-1-cp36-cp36m-manylinux1_x86_64.whl");
  REQUIRE(tagged);
  CHECK(tagged->distribution == "tensorflow-gpu");
  CHECK(tagged->version == "1.6.0");
  CHECK(tagged->build_tag == "1");
  CHECK(tagged->python_tag == "cp36");
  CHECK(tagged->abi_tag == "cp36m");
  CHECK(tagged->platform_tag == "manylinux1_x86_64");

  auto letters = parse_wheel_filename("foo-1.0-2abc-py3-none-any.whl");
  REQUIRE(letters);
  CHECK(letters->build_tag == "2abc");
}

TEST_CASE("names that are not wheels are refused, saying why", "[python][wheel]") {
  struct Case {
    std::string name;
    std::string because;
  };
  const Case cases[] = {
      {"torch-2.4.0.tar.gz", "does not end with `.whl`"},
      {".whl", "does not end with `.whl`"},
      {"torch-2.4.0-cp311.whl", "it has 3 parts"},
      {"torch-2.4.0-1-2-cp311-cp311-linux_x86_64.whl", "it has 7 parts"},
      {"torch-2.4.0-abc-cp311-cp311-linux_x86_64.whl",
       "build tag `abc` does not start with a digit"},
      {"torch-two-py3-none-any.whl", "version `two` is not a PEP 440 version"},
      {"torch-2.4.0%2Bcu121-cp311-cp311-linux_x86_64.whl", "not a PEP 440 version"},
      {"-1.0-py3-none-any.whl", "its distribution is empty"},
      {"foo-1.0-py3--any.whl", "its abi tag is empty"},
      {"to rch-1.0-py3-none-any.whl", "distribution `to rch` holds a character"},
      {"torch-1.0-py3-none-linux x86.whl", "platform tag `linux x86` holds a character"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    auto parsed = parse_wheel_filename(c.name);
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().code() == ErrorCode::input);
    CHECK(parsed.error().message() == "`" + c.name + "` is not a wheel file name");
    REQUIRE(parsed.error().causes().size() == 1);
    CHECK_THAT(parsed.error().causes()[0], Catch::Contains(c.because));
  }
}

TEST_CASE("the glibc a wheel's manylinux tags need", "[python]") {
  using envkit::python::manylinux_glibc_minor;
  using envkit::python::wheel_glibc_minor;
  CHECK(manylinux_glibc_minor("manylinux1_x86_64", "x86_64") == 5u);
  CHECK(manylinux_glibc_minor("manylinux2010_x86_64", "x86_64") == 12u);
  CHECK(manylinux_glibc_minor("manylinux2014_aarch64", "aarch64") == 17u);
  CHECK(manylinux_glibc_minor("manylinux_2_28_x86_64", "x86_64") == 28u);
  CHECK_FALSE(manylinux_glibc_minor("manylinux_2_28_x86_64", "aarch64"));
  CHECK_FALSE(manylinux_glibc_minor("linux_x86_64", "x86_64"));
  CHECK_FALSE(manylinux_glibc_minor("musllinux_1_2_x86_64", "x86_64"));
  // A compressed tag set needs only the lowest of its tags.
  const auto markupsafe = parse_wheel_filename(
      "markupsafe-3.0.4-cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_"
      "x86_64.whl");
  REQUIRE(markupsafe.ok());
  CHECK(wheel_glibc_minor(*markupsafe, "x86_64") == 17u);
  const auto pure = parse_wheel_filename("six-1.16.0-py2.py3-none-any.whl");
  REQUIRE(pure.ok());
  CHECK_FALSE(wheel_glibc_minor(*pure, "x86_64"));
}
