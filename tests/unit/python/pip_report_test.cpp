#include <catch2/catch.hpp>
#include <string>

#include "envkit/python/pip.hpp"
#include "python_test_support.hpp"

using envkit::ErrorCode;
using envkit::python::Closure;
using envkit::python::parse_pip_report;
using envkit::python::ResolvedWheel;
using envkit::test::python_fixture;

namespace {

const ResolvedWheel& wheel_named(const Closure& closure, const std::string& name) {
  for (const auto& wheel : closure.wheels) {
    if (wheel.name == name) return wheel;
  }
  FAIL("no wheel " << name);
  throw std::logic_error("unreachable");
}

std::vector<std::string> names(const Closure& closure) {
  std::vector<std::string> out;
  for (const auto& wheel : closure.wheels)
    out.push_back(wheel.name);
  return out;
}

}  // namespace

TEST_CASE("pip 23.2.1's report of requests==2.31.0", "[python][pip-report]") {
  auto closure = parse_pip_report(python_fixture("requests-2.31.0.pip-23.2.1.json"), "report.json");
  REQUIRE(closure);
  CHECK(closure->resolver == "pip 23.2.1 (CPython 3.11.7)");
  CHECK(names(*closure) ==
        std::vector<std::string>{"certifi", "charset-normalizer", "idna", "requests", "urllib3"});

  const auto& requests = wheel_named(*closure, "requests");
  CHECK(requests.version == "2.31.0");
  CHECK(requests.requested);
  CHECK(requests.url ==
        "https://files.pythonhosted.org/packages/70/8e/"
        "0e2d847013cb52cd35b38c009bb167a1a26b2ce6cd6965bf26b47bc0bf44/"
        "requests-2.31.0-py3-none-any.whl");
  CHECK(requests.sha256 == "58cd2187c01e70e6e26505bca751777aa9f2ee0b7f4300988b709f44e013003f");
  CHECK_FALSE(requests.size);
  // As the metadata writes them, markers and extras included.
  CHECK(requests.requires_dist ==
        std::vector<std::string>{"charset-normalizer (<4,>=2)", "idna (<4,>=2.5)",
                                 "urllib3 (<3,>=1.21.1)", "certifi (>=2017.4.17)",
                                 "PySocks (!=1.5.7,>=1.5.6) ; extra == 'socks'",
                                 "chardet (<6,>=3.0.2) ; extra == 'use_chardet_on_py3'"});

  const auto& charset = wheel_named(*closure, "charset-normalizer");
  CHECK_FALSE(charset.requested);
  CHECK(charset.version == "3.5.2");
  CHECK(charset.requires_dist.empty());
  CHECK(charset.sha256 == "211d5a3eb6af8f513b8d4ca19a8c1b7accab1b5f0d3175f9826b03c1a920dc1f");
  CHECK_THAT(charset.url,
             Catch::EndsWith("charset_normalizer-3.5.2-cp311-cp311-manylinux2014_x86_64."
                             "manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl"));
  for (const auto& wheel : closure->wheels) {
    INFO(wheel.name);
    CHECK(wheel.sha256.size() == 64);
    CHECK(wheel.requested == (wheel.name == "requests"));
  }
}

TEST_CASE("pip 26.3's report of anyio==4.0.0 keeps Requires-Dist markers as written",
          "[python][pip-report]") {
  auto closure = parse_pip_report(python_fixture("anyio-4.0.0.pip-26.3.json"), "report.json");
  REQUIRE(closure);
  CHECK(closure->resolver == "pip 26.3 (CPython 3.11.7)");
  CHECK(names(*closure) == std::vector<std::string>{"anyio", "idna", "sniffio"});
  const auto& anyio = wheel_named(*closure, "anyio");
  CHECK(anyio.requested);
  REQUIRE(anyio.requires_dist.size() == 15);
  CHECK(anyio.requires_dist[0] == "idna >=2.8");
  CHECK(anyio.requires_dist[2] == "exceptiongroup >=1.0.2 ; python_version < \"3.11\"");
  CHECK(anyio.requires_dist[13] ==
        "uvloop >=0.17 ; (python_version < \"3.12\" and platform_python_implementation == "
        "\"CPython\" and platform_system != \"Windows\") and extra == 'test'");
  const auto& sniffio = wheel_named(*closure, "sniffio");
  CHECK_FALSE(sniffio.requested);
  CHECK(sniffio.requires_dist.empty());
  CHECK(sniffio.sha256 == "2f6da418d1f1e0fddd844478f41680e794e6051915791a034ff65e5f100525a2");
}

TEST_CASE("pip's report of nvidia-cudnn-cu12: platform wheels and their chain",
          "[python][pip-report]") {
  auto closure =
      parse_pip_report(python_fixture("nvidia-cudnn-cu12-9.1.0.70.pip-23.2.1.json"), "report.json");
  REQUIRE(closure);
  CHECK(names(*closure) == std::vector<std::string>{"nvidia-cublas-cu12", "nvidia-cuda-nvrtc-cu12",
                                                    "nvidia-cudnn-cu12"});
  const auto& cudnn = wheel_named(*closure, "nvidia-cudnn-cu12");
  CHECK(cudnn.requested);
  CHECK(cudnn.version == "9.1.0.70");
  CHECK(cudnn.requires_dist == std::vector<std::string>{"nvidia-cublas-cu12"});
  CHECK_THAT(cudnn.url,
             Catch::EndsWith("/nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl"));
  CHECK(cudnn.sha256 == "165764f44ef8c61fcdfdfdbe769d687e06374059fbb388b6c89ecb0e28793a6f");
  CHECK_FALSE(wheel_named(*closure, "nvidia-cublas-cu12").requested);
  CHECK(wheel_named(*closure, "nvidia-cublas-cu12").requires_dist ==
        std::vector<std::string>{"nvidia-cuda-nvrtc-cu12"});
}

TEST_CASE("a report with only the older `hash` field reads its sha256 there",
          "[python][pip-report]") {
  auto closure = parse_pip_report(python_fixture("edited-legacy-hash.json"), "report.json");
  REQUIRE(closure);
  CHECK(wheel_named(*closure, "anyio").sha256 ==
        "cfdb2b588b9fc25ede96d8db56ed50848b0b649dca3dd1df0b11f683bb9e0b5f");
}

TEST_CASE("credentials in a report's URLs are not kept", "[python][pip-report]") {
  auto closure = parse_pip_report(python_fixture("edited-credentials.json"), "report.json");
  REQUIRE(closure);
  for (const auto& wheel : closure->wheels) {
    INFO(wheel.url);
    CHECK_THAT(wheel.url, Catch::StartsWith("https://pypi.example.test/packages/"));
  }
}

TEST_CASE("report items envkit cannot install are errors naming the report and the item",
          "[python][pip-report]") {
  SECTION("no sha256") {
    auto closure = parse_pip_report(python_fixture("edited-no-sha256.json"), "report.json");
    REQUIRE_FALSE(closure);
    CHECK(closure.error().code() == ErrorCode::input);
    CHECK(closure.error().message() ==
          "`report.json`: install[2] (`sniffio` 1.3.1): "
          "`https://files.pythonhosted.org/packages/e9/44/"
          "75a9c9421471a6c4805dbf2356f7c181a29c1879239abab1ea2cc8f38b40/"
          "sniffio-1.3.1-py3-none-any.whl` has no sha256");
    CHECK_FALSE(closure.error().hints().empty());
  }
  SECTION("a source distribution") {
    auto closure = parse_pip_report(python_fixture("edited-sdist.json"), "report.json");
    REQUIRE_FALSE(closure);
    CHECK_THAT(closure.error().message(),
               Catch::StartsWith("`report.json`: install[2] (`sniffio` 1.3.1): `https://") &&
                   Catch::EndsWith("/sniffio-1.3.1.tar.gz` is not a wheel (.whl)"));
  }
  SECTION("a local folder") {
    auto closure = parse_pip_report(python_fixture("edited-dir-info.json"), "report.json");
    REQUIRE_FALSE(closure);
    CHECK(closure.error().message() ==
          "`report.json`: install[2] (`sniffio` 1.3.1): `file:///home/me/src/sniffio` is a local "
          "folder, not a wheel");
  }
  SECTION("a report of another major version") {
    auto closure = parse_pip_report(python_fixture("edited-version-2.json"), "report.json");
    REQUIRE_FALSE(closure);
    CHECK(closure.error().message() ==
          "`report.json`: a pip installation report of version `2`; envkit reads version 1");
  }
  SECTION("not JSON") {
    auto closure = parse_pip_report("{\"version\": \"1\", \"install\": [", "out.json");
    REQUIRE_FALSE(closure);
    CHECK(closure.error().code() == ErrorCode::input);
    CHECK(closure.error().message() == "`out.json`: not a pip installation report (not JSON)");
  }
  SECTION("an item without a name") {
    auto closure = parse_pip_report(
        R"({"version": "1", "install": [{"metadata": {"version": "1.0"}, "download_info": {}}]})",
        "out.json");
    REQUIRE_FALSE(closure);
    CHECK(closure.error().message() == "`out.json`: install[0]: no `metadata.name`");
  }
  SECTION("a sha256 that is not one") {
    auto closure = parse_pip_report(
        R"({"version": "1", "install": [{"metadata": {"name": "a", "version": "1.0"},
            "download_info": {"url": "https://x.test/a-1.0-py3-none-any.whl",
                              "archive_info": {"hashes": {"sha256": "abc"}}}}]})",
        "out.json");
    REQUIRE_FALSE(closure);
    CHECK(closure.error().message() ==
          "`out.json`: install[0] (`a` 1.0): the sha256 of "
          "`https://x.test/a-1.0-py3-none-any.whl` is `abc`, not 64 hex digits");
  }
}

TEST_CASE("a minimal report: names normalized, sha256 lowercased, requested defaults to false",
          "[python][pip-report]") {
  const std::string upper(64, 'A');
  auto closure = parse_pip_report(
      R"({"version": "1.0", "pip_version": "22.2",
          "install": [{"metadata": {"name": "Zope.Interface", "version": "6.0"},
                       "download_info": {"url": "https://x.test/zope.interface-6.0-cp311-cp311-linux_x86_64.whl",
                                         "archive_info": {"hash": "sha256=)" +
          upper + R"("}}},
                      {"metadata": {"name": "a_b", "version": "1.0"}, "requested": true,
                       "download_info": {"url": "https://x.test/a_b-1.0-py3-none-any.whl#sha256=x",
                                         "archive_info": {"hashes": {"sha256": ")" +
          std::string(64, 'b') + R"("}}}}]})",
      "out.json");
  REQUIRE(closure);
  CHECK(closure->resolver == "pip 22.2");
  REQUIRE(closure->wheels.size() == 2);
  CHECK(closure->wheels[0].name == "a-b");
  CHECK(closure->wheels[0].requested);
  CHECK(closure->wheels[0].url == "https://x.test/a_b-1.0-py3-none-any.whl");  // no fragment
  CHECK(closure->wheels[1].name == "zope-interface");
  CHECK(closure->wheels[1].sha256 == std::string(64, 'a'));
  CHECK_FALSE(closure->wheels[1].requested);
}
