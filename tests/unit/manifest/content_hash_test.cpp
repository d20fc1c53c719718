// The manifest content hash the lock records: what counts and what does not.

#include <catch2/catch.hpp>
#include <string>

#include "envkit/manifest/manifest.hpp"

namespace envkit::manifest {
namespace {

std::string hash_of(std::string_view text) {
  auto result = parse(text, "envkit.yaml");
  INFO((result ? std::string() : result.error().to_string()));
  REQUIRE(result.ok());
  return content_hash(*result);
}

constexpr std::string_view kManifest = R"(name: mask-rcnn
framework: tensorflow-gpu ==1.6.0
requires:
  cudnn: "7"
  zlib:
external:
  python: "3.6.9"
platforms: [linux-x86_64, windows-x86_64]
system:
  driver: ">=390.30"
  cuda-arch: ["6.1", "7.0"]
  glibc: ">=2.28"
smoke: { steps: 200 }
python-requirements: requirements.txt
)";

// kManifest with the first `from` replaced by `to`.
std::string with(std::string_view from, std::string_view to) {
  std::string text(kManifest);
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

TEST_CASE("the content hash is sha256 of the manifest's content", "[manifest][hash]") {
  const std::string hash = hash_of(kManifest);
  REQUIRE(hash.size() == 7 + 64);
  CHECK(hash.starts_with("sha256:"));
  CHECK(hash.find_first_not_of("0123456789abcdef", 7) == std::string::npos);
  CHECK(hash_of(kManifest) == hash);
}

TEST_CASE("comments, key order, quoting and layout do not count", "[manifest][hash]") {
  const std::string hash = hash_of(kManifest);
  CHECK(hash_of(R"(# The Mask R-CNN demo.
python-requirements: [requirements.txt]   # the rest of the project
smoke:
  steps: 200
system:
  glibc: '>=2.28'
  cuda-arch: [7.0, "6.1", sm_70]
  driver: ">= 390.30"
platforms:
  - linux-x86_64
  - windows-x86_64
external: { python: 3.6.9 }
requires:
  zlib: ~
  cudnn: 7
framework: "tensorflow-gpu==1.6.0"
name: "mask-rcnn"
)") == hash);
  // Specifiers count as what they mean: a bare `7` is `==7.*`.
  CHECK(hash_of(with("cudnn: \"7\"", "cudnn: \"==7.*\"")) == hash);
}

TEST_CASE("every change of content changes the hash", "[manifest][hash]") {
  const std::string hash = hash_of(kManifest);
  const auto changed = GENERATE(
      with("name: mask-rcnn", "name: mask-rcnn-2"), with("==1.6.0", "==1.7.0"),
      with("tensorflow-gpu ==1.6.0", "tensorflow ==1.6.0"), with("cudnn: \"7\"", "cudnn: \"7.1\""),
      with("  zlib:\n", ""), with("  zlib:\n", "  zlib: \">=1.2\"\n"),
      with("python: \"3.6.9\"", "python: \"3.6.8\""), with("python: \"3.6.9\"", "python: system"),
      with("python: \"3.6.9\"", "python: /usr/bin/python3.6"),
      with("[linux-x86_64, windows-x86_64]", "[linux-x86_64]"),
      with("[linux-x86_64, windows-x86_64]", "[windows-x86_64, linux-x86_64]"),
      with("driver: \">=390.30\"", "driver: \">=390.31\""), with("  driver: \">=390.30\"\n", ""),
      with("[\"6.1\", \"7.0\"]", "[\"6.1\", \"7.5\"]"),
      with("glibc: \">=2.28\"", "glibc: \">=2.31\""), with("steps: 200", "steps: 100"),
      with("requirements.txt", "pyproject.toml"));
  CAPTURE(changed);
  CHECK(hash_of(changed) != hash);
}

TEST_CASE("values cannot imitate one another across fields", "[manifest][hash]") {
  // A path that spells another field's text still hashes apart from it.
  CHECK(hash_of("external:\n  python: system\n") != hash_of("external:\n  python: ./system\n"));
  CHECK(hash_of("name: a\npython-requirements: [b, c]\n") !=
        hash_of("name: a\npython-requirements: [\"b c\"]\n"));
}

}  // namespace
}  // namespace envkit::manifest
