// doctor's library check on a lock whose cuDNN or CUDA is the machine's (`external:`):
// what is missing is the machine's tree's to provide, and no fix sends the user to an
// `envkit install` that would say "nothing to do".
#include <catch2/catch.hpp>
#include <string>

#include "envkit/doctor/prefix_checks.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
namespace doctor = envkit::doctor;
namespace project = envkit::project;
using envkit::specs::Version;
using envkit::test::TempDir;

constexpr std::string_view kCudnnVersionH9 =
    "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 19\n#define CUDNN_PATCHLEVEL 0\n";

doctor::ExternalStack external_cudnn(std::string_view locked, const project::TreeSearch& search) {
  return {"cudnn", Version::parse(locked).value(), project::find_stack("cudnn", search)};
}

// The libraries findings, errors first.
std::vector<doctor::Finding> errors_of(const doctor::Findings& findings) {
  std::vector<doctor::Finding> out;
  for (const auto& finding : findings) {
    if (finding.severity == doctor::Severity::error) out.push_back(finding);
  }
  return out;
}

TEST_CASE("an external cuDNN missing from the prefix names the machine's tree, not install",
          "[doctor][external]") {
  const TempDir dir;
  const auto prefix = dir.path() / "prefix";
  fs::create_directories(prefix / "lib");
  const auto tree = dir.path() / "cuda";
  project::TreeSearch search;
  search.defaults = {tree};
  search.system_roots = {};
  const std::vector<std::string> expected = {"libcudnn.so"};

  SECTION("the tree holds another cuDNN") {
    dir.write("cuda/include/cudnn_version.h", kCudnnVersionH9);
    dir.write("cuda/lib64/libcudnn.so.9", "ELF");
    const std::vector stacks = {external_cudnn("7.3.0.29", search)};
    const auto found = errors_of(doctor::check_libraries(prefix, {}, expected, stacks));
    REQUIRE(found.size() == 1);
    CHECK_THAT(found[0].message, Catch::Contains("cudnn 7.3.0.29 is external"));
    CHECK_THAT(found[0].message, Catch::Contains((tree / "include" / "cudnn_version.h").string()));
    CHECK_THAT(found[0].message, Catch::Contains("9.19.0"));
    CHECK_THAT(found[0].fix, !Catch::Contains("run `envkit install`"));
    CHECK_THAT(found[0].fix, Catch::Contains("remove `cudnn` from `external:`"));
  }
  SECTION("the tree has cuDNN's headers but not its library") {
    dir.write("cuda/include/cudnn_version.h", kCudnnVersionH9);
    const std::vector stacks = {external_cudnn("9.19.0", search)};
    const auto found = errors_of(doctor::check_libraries(prefix, {}, expected, stacks));
    REQUIRE(found.size() == 1);
    CHECK_THAT(found[0].message, Catch::Contains("no libcudnn.so.*"));
    CHECK_THAT(found[0].message, Catch::Contains(tree.string()));
    CHECK_THAT(found[0].fix, !Catch::Contains("run `envkit install`"));
  }
  SECTION("the machine has no cuDNN at all") {
    const std::vector stacks = {external_cudnn("7.3.0.29", search)};
    const auto found = errors_of(doctor::check_libraries(prefix, {}, expected, stacks));
    REQUIRE(found.size() == 1);
    CHECK_THAT(found[0].message, Catch::Contains("this machine has no cuDNN"));
    CHECK_THAT(found[0].message, Catch::Contains(tree.string() + " (the usual place)"));
  }
  SECTION("the tree holds it: nothing is wrong, though the prefix has no libcudnn") {
    dir.write("cuda/include/cudnn_version.h", kCudnnVersionH9);
    dir.write("cuda/lib64/libcudnn.so.9", "ELF");
    const std::vector stacks = {external_cudnn("9.19.0", search)};
    const auto findings = doctor::check_libraries(prefix, {}, expected, stacks);
    CHECK(errors_of(findings).empty());
  }
  SECTION("without external, a missing libcudnn is the prefix's to repair") {
    const auto found = errors_of(doctor::check_libraries(prefix, {}, expected));
    REQUIRE(found.size() == 1);
    CHECK_THAT(found[0].fix, Catch::Contains("run `envkit install`"));
  }
}

}  // namespace
