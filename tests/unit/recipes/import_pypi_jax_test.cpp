#include "envkit/recipes/import_pypi_jax.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "recipes_test_support.hpp"
#include "support/python_index.hpp"

using namespace envkit::recipes;
namespace specs = envkit::specs;

namespace {

using envkit::test::build_of;
using envkit::test::fake_index_url;
using envkit::test::FakeIndex;
using envkit::test::versions_of;

constexpr std::string_view kJaxFiles = "https://files.example.test/";

// Excerpts of real METADATA: jax 0.4.26 (its NVIDIA requirements under extra cuda12; its
// CUDA-on-find-links extras), jax 0.4.20 (find-links only), jax 0.7.2 (the plugin's
// with-cuda extra names them), jax-cuda13-plugin 0.7.2.
constexpr std::string_view kJax0426 =
    "Metadata-Version: 2.1\nName: jax\nVersion: 0.4.26\nRequires-Python: >=3.9\n"
    "Requires-Dist: numpy >=1.22\n"
    "Requires-Dist: importlib-metadata >=4.6 ; python_version < \"3.10\"\n"
    "Provides-Extra: cuda12\n"
    "Requires-Dist: jaxlib ==0.4.26 ; extra == 'cuda12'\n"
    "Requires-Dist: jax-cuda12-plugin ==0.4.26 ; extra == 'cuda12'\n"
    "Requires-Dist: nvidia-cuda-runtime-cu12 >=12.1.105 ; extra == 'cuda12'\n"
    "Requires-Dist: nvidia-cudnn-cu12 <9.0,>=8.9.2.26 ; extra == 'cuda12'\n"
    "Provides-Extra: cuda12_pip\n"
    "Requires-Dist: jaxlib ==0.4.26+cuda12.cudnn89 ; extra == 'cuda12_pip'\n"
    "Requires-Dist: nvidia-cudnn-cu12 <9.0,>=8.9.2.26 ; extra == 'cuda12_pip'\n"
    "\nJAX: Autograd and XLA\nRequires-Dist: not-a-header\n";
constexpr std::string_view kJax0420 =
    "Metadata-Version: 2.1\nName: jax\nVersion: 0.4.20\nRequires-Python: >=3.9\n"
    "Provides-Extra: cuda11_pip\n"
    "Requires-Dist: jaxlib ==0.4.20+cuda11.cudnn86 ; extra == 'cuda11_pip'\n"
    "Provides-Extra: cuda12_pip\n"
    "Requires-Dist: jaxlib ==0.4.20+cuda12.cudnn89 ; extra == 'cuda12_pip'\n";
constexpr std::string_view kJax072 =
    "Metadata-Version: 2.1\nName: jax\nVersion: 0.7.2\nRequires-Python: >=3.11\n"
    "Provides-Extra: cuda13\n"
    "Requires-Dist: jaxlib<=0.7.2,>=0.7.2; extra == \"cuda13\"\n"
    "Requires-Dist: jax-cuda13-plugin[with-cuda]<=0.7.2,>=0.7.2; extra == \"cuda13\"\n"
    "Provides-Extra: cuda14\n"
    "Requires-Dist: jaxlib<=0.7.2,>=0.7.2; extra == \"cuda14\"\n"
    "Requires-Dist: jax-cuda14-plugin[with-cuda]<=0.7.2,>=0.7.2; extra == \"cuda14\"\n";
constexpr std::string_view kCuda13Plugin072 =
    "Metadata-Version: 2.1\nName: jax-cuda13-plugin\nVersion: 0.7.2\nRequires-Python: >=3.11\n"
    "Requires-Dist: jax-cuda13-pjrt==0.7.2\nProvides-Extra: with-cuda\n"
    "Requires-Dist: nvidia-cuda-runtime>=13.0.48; sys_platform == \"linux\" and extra == "
    "\"with-cuda\"\n"
    "Requires-Dist: nvidia-cudnn-cu13<10.0,>=9.12.0.46; sys_platform == \"linux\" and extra == "
    "\"with-cuda\"\n";

std::string jax_file_json(const std::string& filename, bool yanked = false) {
  return "{\"filename\": \"" + filename + "\", \"url\": \"" + std::string(kJaxFiles) + filename +
         "\", \"hashes\": {}, \"yanked\": " + (yanked ? "true" : "false") + "}";
}

std::string jax_page_json(const std::vector<std::string>& files) {
  std::string out = "{\"meta\": {\"api-version\": \"1.1\"}, \"files\": [";
  for (std::size_t i = 0; i < files.size(); ++i)
    out += (i == 0 ? "" : ", ") +
           jax_file_json(files[i], files[i].find("0.4.32") != std::string::npos);
  return out + "]}";
}

// The jax page and its plugins' pages. METADATA are served as PEP 658 files, or (`in_wheel`)
// only inside the wheels, as this machine's PyPI does.
FakeIndex jax_index(bool in_wheel) {
  FakeIndex index;
  const std::string json = "application/vnd.pypi.simple.v1+json";
  index.add("jax", json,
            jax_page_json({"jax-0.4.20-py3-none-any.whl", "jax-0.4.20.tar.gz",
                           "jax-0.4.26-py3-none-any.whl", "jax-0.4.26.tar.gz",
                           "jax-0.4.32-py3-none-any.whl", "jax-0.7.2-py3-none-any.whl",
                           "jax-0.7.3rc1-py3-none-any.whl"}));
  index.add("jax-cuda12-plugin", json,
            jax_page_json({"jax_cuda12_plugin-0.4.26-cp39-cp39-manylinux2014_x86_64.whl",
                           "jax_cuda12_plugin-0.4.26-cp312-cp312-manylinux2014_x86_64.whl"}));
  index.add("jax-cuda13-plugin", json,
            jax_page_json({"jax_cuda13_plugin-0.7.2-cp311-cp311-manylinux_2_27_x86_64.whl",
                           "jax_cuda13_plugin-0.7.2-cp314-cp314t-manylinux_2_27_x86_64.whl",
                           "jax_cuda13_plugin-0.7.2-cp314-cp314-manylinux_2_27_aarch64.whl"}));
  const std::vector<std::pair<std::string, std::string_view>> metadata = {
      {"jax-0.4.20-py3-none-any.whl", kJax0420},
      {"jax-0.4.26-py3-none-any.whl", kJax0426},
      {"jax-0.7.2-py3-none-any.whl", kJax072},
      {"jax_cuda13_plugin-0.7.2-cp314-cp314t-manylinux_2_27_x86_64.whl", kCuda13Plugin072}};
  for (const auto& [wheel, text] : metadata) {
    const auto dist_info = wheel.substr(0, wheel.find('-', wheel.find('-') + 1)) + ".dist-info";
    if (in_wheel) {
      index.add_url(std::string(kJaxFiles) + wheel, "application/octet-stream",
                    envkit::test::make_zip({{"pkg/__init__.py", "x = 1\n"},
                                            {dist_info + "/METADATA", std::string(text)},
                                            {dist_info + "/RECORD", "\n"}}));
    } else {
      index.add_url(std::string(kJaxFiles) + wheel + ".metadata", "text/plain", std::string(text));
    }
  }
  return index;
}

PypiJaxImport jax_imported(FakeIndex& index) {
  auto result = import_pypi_jax({.index_url = fake_index_url(), .fetch = index.fetcher()});
  INFO((result ? "" : result.error().to_string()));
  REQUIRE(result);
  return *std::move(result);
}

bool jax_has_source(const Recipe& recipe, std::string_view text) {
  return std::any_of(recipe.sources.begin(), recipe.sources.end(),
                     [&](const std::string& s) { return s.find(text) != std::string::npos; });
}

}  // namespace

TEST_CASE("pypi-jax: each extra cudaNN is a build with the requirements its METADATA states",
          "[pypi][jax]") {
  auto index = jax_index(false);
  const auto result = jax_imported(index);
  const auto& jax = result.jax;
  CHECK(jax.name == "jax");
  // 0.4.20 has CUDA only on Google's find-links page; 0.4.32 is yanked; 0.7.3rc1 is a
  // pre-release.
  CHECK(versions_of(jax) == std::vector<std::string>{"0.4.26", "0.7.2"});
  const auto& cuda12 = build_of(jax, "0.4.26", "cuda12");
  CHECK(cuda12.requires_.at("cuda").to_string() == "<13,>=12.1");
  CHECK(cuda12.requires_.at("cudnn").to_string() == "<9.0,>=8.9.2.26");
  // Requires-Python, below the CPython after the newest the plugin has a wheel for (cp312).
  CHECK(cuda12.requires_.at("python").to_string() == "<3.13,>=3.9");
  CHECK(cuda12.platforms == std::vector{specs::Platform::linux_x86_64});
  CHECK(cuda12.wheel_index == kPypiIndex);
  CHECK(cuda12.tested.empty());  // metadata states ranges, not what was tested
  REQUIRE(jax.find(specs::Version::parse("0.4.26").value())->builds.size() == 1);

  // From 0.4.30 the plugin's extra with-cuda names the NVIDIA wheels; CUDA 13's runtime has no
  // -cu13 suffix.
  const auto& cuda13 = build_of(jax, "0.7.2", "cuda13");
  CHECK(cuda13.requires_.at("cuda").to_string() == "<14,>=13.0");
  CHECK(cuda13.requires_.at("cudnn").to_string() == "<10.0,>=9.12.0.46");
  CHECK(cuda13.requires_.at("python").to_string() == "<3.15,>=3.11");
  CHECK(cuda13.platforms ==
        std::vector{specs::Platform::linux_x86_64, specs::Platform::linux_aarch64});

  // What was left out says why.
  CHECK(jax_has_source(jax,
                       "jax 0.4.20: extras cuda11-pip need jaxlib ==0.4.20+cuda11.cudnn86, a "
                       "wheel the index does not have (Google's find-links page); left out"));
  CHECK(jax_has_source(jax, "jax 0.4.26: extras cuda12-pip need jaxlib ==0.4.26+cuda12.cudnn89"));
  CHECK(jax_has_source(jax,
                       "jax 0.7.2: extra cuda14: the index has no jax-cuda14-plugin "
                       "<=0.7.2,>=0.7.2; left out"));
  CHECK(result.releases.size() == 3);
}

TEST_CASE("pypi-jax: without PEP 658 files, METADATA comes out of the wheel by HTTP ranges",
          "[pypi][jax]") {
  auto index = jax_index(true);
  index.ranges = GENERATE(true, false);
  CAPTURE(index.ranges);
  const auto result = jax_imported(index);
  CHECK(versions_of(result.jax) == std::vector<std::string>{"0.4.26", "0.7.2"});
  CHECK(build_of(result.jax, "0.4.26", "cuda12").requires_.at("cudnn").to_string() ==
        "<9.0,>=8.9.2.26");
  CHECK(build_of(result.jax, "0.7.2", "cuda13").requires_.at("cuda").to_string() == "<14,>=13.0");
  // Every wheel was asked for by range; with a server that ignores ranges, once per wheel.
  std::size_t whole_wheels = 0;
  for (std::size_t i = 0; i < index.asked.size(); ++i) {
    if (!index.asked[i].ends_with(".whl")) continue;
    REQUIRE(index.headers[i].size() == 1);
    CHECK_THAT(index.headers[i][0], Catch::StartsWith("Range: bytes="));
    ++whole_wheels;
  }
  // 4 wheels with METADATA, each read as its tail (which holds these small wheels' whole
  // directory), the member's local header, the member; and jax_cuda12_plugin-0.4.26 (cp312),
  // which the index lacks (404).
  CHECK(whole_wheels == (index.ranges ? 4 * 3 + 1 : 5));
}

TEST_CASE("parse_wheel_metadata reads the headers and the extra each requirement is for",
          "[pypi][jax]") {
  auto metadata = parse_wheel_metadata(kJax0426, "jax-0.4.26-py3-none-any.whl");
  REQUIRE(metadata);
  CHECK(metadata->requires_python == ">=3.9");
  CHECK(metadata->provides_extra == std::vector<std::string>{"cuda12", "cuda12-pip"});
  REQUIRE(metadata->requires_dist.size() == 8);  // the description's line is not a header
  CHECK(metadata->requires_dist[0].extra.empty());
  CHECK(metadata->requires_dist[1].extra.empty());  // a python_version marker, no extra
  CHECK(metadata->requires_dist[3].project == "jax-cuda12-plugin");
  CHECK(metadata->requires_dist[3].extra == "cuda12");
  CHECK(metadata->requires_dist[6].spec == "==0.4.26+cuda12.cudnn89");
  CHECK(metadata->requires_dist[6].extra == "cuda12-pip");

  auto plugin = parse_wheel_metadata(kJax072, "jax.whl");
  REQUIRE(plugin);
  CHECK(plugin->requires_dist[1].extras == std::vector<std::string>{"with-cuda"});

  auto bad = parse_wheel_metadata("Name: jax\nRequires-Dist: [jaxlib]\n", "jax.whl");
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().to_string(), Catch::Contains("jax.whl:2"));
}
