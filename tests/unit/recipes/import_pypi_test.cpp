#include "envkit/recipes/import_pypi.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "envkit/sys/fs.hpp"
#include "envkit/sys/process.hpp"
#include "recipes_test_support.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

using namespace envkit::recipes;
using envkit::Result;
using envkit::specs::Platform;
using envkit::specs::Version;

namespace {

using envkit::test::fake_index_url;
using envkit::test::FakeIndex;

std::string pypi_fixture(std::string_view name) {
  return envkit::test::recipes_fixture("pypi", name);
}

constexpr std::string_view kJsonType = "application/vnd.pypi.simple.v1+json";

FakeIndex fixture_index() {
  FakeIndex index;
  index.add("nvidia-cuda-runtime-cu12", std::string(kJsonType),
            pypi_fixture("nvidia-cuda-runtime-cu12.json"));
  index.add("nvidia-cudnn-cu12", "text/html; charset=utf-8",
            pypi_fixture("nvidia-cudnn-cu12.html"));
  index.add("nvidia-cuda-runtime", std::string(kJsonType),
            pypi_fixture("nvidia-cuda-runtime.json"));
  return index;
}

Recipe cuda_recipe() {
  Recipe cuda{.name = "cuda"};
  cuda.versions.push_back(RecipeVersion{
      .version = Version::parse("12.4.1").value(),
      .components = {{"cuda_cudart", "12.4.127"},
                     {"cuda_nvcc", "12.4.131"},
                     {"nsight_compute", "2024.1.1.4"}},
      .builds = {Build{.id = ""}},
  });
  cuda.versions.push_back(RecipeVersion{
      .version = Version::parse("12.3.2").value(),
      .components = {{"cuda_cudart", "12.3.101"}},
      .builds = {Build{.id = ""}},
  });
  cuda.versions.push_back(RecipeVersion{
      .version = Version::parse("13.0.2").value(),
      .components = {{"cuda_cudart", "13.0.96"}},
      .builds = {Build{.id = ""}},
  });
  return cuda;
}

Recipe cudnn_recipe() {
  Recipe cudnn{.name = "cudnn"};
  cudnn.versions.push_back(RecipeVersion{
      .version = Version::parse("9.1.0.70").value(),
      .builds = {Build{.id = "cuda11"}, Build{.id = "cuda12"}},
  });
  cudnn.versions.push_back(RecipeVersion{
      .version = Version::parse("8.9.7.29").value(),
      .builds = {Build{.id = "cuda12"}},
  });
  return cudnn;
}

const Artifact* find_artifact(const Recipe& recipe, std::string_view version,
                              std::string_view build, std::string_view component,
                              Platform platform) {
  for (const auto& v : recipe.versions) {
    if (v.version.original() != version) continue;
    for (const auto& b : v.builds) {
      if (b.id != build) continue;
      for (const auto& a : b.artifacts) {
        if (a.component == component && a.platform == platform) return &a;
      }
    }
  }
  return nullptr;
}

Result<std::vector<IndexFile>> parse_fixture(const std::string& name, std::string content_type) {
  const auto url = fake_index_url("project/");
  return parse_index_page(
      IndexResponse{
          .status = 200, .content_type = std::move(content_type), .body = pypi_fixture(name)},
      url);
}

}  // namespace

TEST_CASE("CUDA components map to NVIDIA's wheel projects", "[pypi]") {
  CHECK(cuda_component_wheel("cuda_cudart", 12)->project == "nvidia-cuda-runtime-cu12");
  CHECK(cuda_component_wheel("cuda_cudart", 12)->wheel_root == "nvidia/cuda_runtime");
  CHECK(cuda_component_wheel("cuda_nvcc", 11)->project == "nvidia-cuda-nvcc-cu11");
  CHECK(cuda_component_wheel("libcublas", 12)->project == "nvidia-cublas-cu12");
  CHECK(cuda_component_wheel("libcublas", 12)->wheel_root == "nvidia/cublas");
  CHECK(cuda_component_wheel("cuda_cupti", 12)->wheel_root == "nvidia/cuda_cupti");
  CHECK(cuda_component_wheel("libnvjitlink", 12)->project == "nvidia-nvjitlink-cu12");
  CHECK(cuda_component_wheel("cuda_nvtx", 11)->project == "nvidia-nvtx-cu11");
  // CUDA 13: no suffix, one shared folder.
  CHECK(cuda_component_wheel("cuda_cudart", 13)->project == "nvidia-cuda-runtime");
  CHECK(cuda_component_wheel("libcusparse", 13)->project == "nvidia-cusparse");
  CHECK(cuda_component_wheel("libcusparse", 13)->wheel_root == "nvidia/cu13");
  // Not published: nvjitlink before 12, nvdisasm before 13, tools never, CUDA 10.
  CHECK_FALSE(cuda_component_wheel("libnvjitlink", 11));
  CHECK_FALSE(cuda_component_wheel("cuda_nvdisasm", 12));
  CHECK(cuda_component_wheel("cuda_nvdisasm", 13)->project == "nvidia-cuda-nvdisasm");
  CHECK_FALSE(cuda_component_wheel("nsight_compute", 12));
  CHECK_FALSE(cuda_component_wheel("cuda_cudart", 10));

  CHECK(cudnn_build_wheel("cuda12")->project == "nvidia-cudnn-cu12");
  CHECK(cudnn_build_wheel("cuda13")->project == "nvidia-cudnn-cu13");
  CHECK(cudnn_build_wheel("cuda13")->wheel_root == "nvidia/cudnn");
  CHECK_FALSE(cudnn_build_wheel(""));
  CHECK_FALSE(cudnn_build_wheel("cuda10"));
}

TEST_CASE("wheel filenames: tags, build numbers and platforms", "[pypi]") {
  auto wheel = parse_wheel_filename(
      "nvidia_cuda_runtime-13.0.96-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl");
  REQUIRE(wheel);
  CHECK(wheel->distribution == "nvidia_cuda_runtime");
  CHECK(wheel->version == "13.0.96");
  CHECK_FALSE(wheel->build);
  CHECK(wheel->platform_tags ==
        std::vector<std::string>{"manylinux2014_x86_64", "manylinux_2_17_x86_64"});
  CHECK(wheel_platform(*wheel) == Platform::linux_x86_64);
  CHECK(manylinux_glibc(*wheel) == std::pair{2U, 17U});

  auto with_build = parse_wheel_filename(
      "nvidia_cuda_sanitizer_api_cu11-11.7.91-2-py3-none-manylinux1_x86_64.whl");
  REQUIRE(with_build);
  CHECK(with_build->build == 2U);
  CHECK(manylinux_glibc(*with_build) == std::pair{2U, 5U});

  auto platform_of = [](std::string_view name) {
    return wheel_platform(*parse_wheel_filename(name));
  };
  CHECK(platform_of("a-1-py3-none-manylinux_2_27_aarch64.whl") == Platform::linux_aarch64);
  CHECK(platform_of("a-1-py3-none-win_amd64.whl") == Platform::windows_x86_64);
  CHECK_FALSE(platform_of("a-1-py3-none-win_arm64.whl"));
  CHECK_FALSE(platform_of("a-1-py3-none-musllinux_1_2_x86_64.whl"));
  CHECK_FALSE(platform_of("a-1-py3-none-linux_x86_64.whl"));  // not installable from an index
  CHECK_FALSE(platform_of("a-1-cp311-cp311-manylinux2014_x86_64.whl"));
  CHECK(platform_of("a-1-py2.py3-none-manylinux1_x86_64.whl") == Platform::linux_x86_64);

  CHECK_FALSE(parse_wheel_filename("a-1.tar.gz"));
  CHECK_FALSE(parse_wheel_filename("a-1-py3-none.whl"));
  CHECK_FALSE(parse_wheel_filename("a-1-x-py3-none-any.whl"));  // a build tag starts with a digit
}

TEST_CASE("a PEP 691 JSON page: hashes, sizes, yanked files, relative URLs", "[pypi]") {
  auto files = parse_fixture("nvidia-cuda-runtime-cu12.json", std::string(kJsonType));
  REQUIRE(files.ok());
  REQUIRE(files->size() == 9);
  const auto& first = (*files)[0];
  CHECK(first.filename == "nvidia_cuda_runtime_cu12-12.1.105-py3-none-manylinux1_x86_64.whl");
  CHECK(first.hashes.at("sha256") ==
        "1111111111111111111111111111111111111111111111111111111111111111");
  CHECK(first.size == 823596U);
  CHECK_FALSE(first.yanked);
  CHECK((*files)[1].yanked);  // a reason string means yanked
  CHECK((*files)[3].url ==
        "https://index.example.test/packages/12/"
        "nvidia_cuda_runtime_cu12-12.4.127-py3-none-manylinux2014_x86_64.whl");
  CHECK((*files)[3].has_metadata);
  CHECK((*files)[4].hashes.at("sha256") ==
        "abcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcd");
}

TEST_CASE("a PEP 503 HTML page: fragments, entities, upper-case tags, yanked", "[pypi]") {
  auto files = parse_fixture("nvidia-cudnn-cu12.html", "text/html");
  REQUIRE(files.ok());
  REQUIRE(files->size() == 5);
  const auto& first = (*files)[0];
  CHECK(first.filename == "nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl");
  CHECK(first.url ==
        "https://files.example.test/aa/"
        "nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl");
  CHECK(first.hashes.at("sha256") ==
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
  CHECK_FALSE(first.size);
  CHECK(first.has_metadata);
  CHECK((*files)[1].url ==
        "https://index.example.test/packages/bb/nvidia_cudnn_cu12-9.1.0.70-py3-none-win_amd64.whl");
  CHECK((*files)[2].yanked);
  CHECK((*files)[3].hashes.empty());
  CHECK((*files)[4].yanked);
}

TEST_CASE("the page type comes from the content type, else from the body", "[pypi]") {
  // An index that ignores Accept and sends HTML is read as HTML.
  auto html = parse_fixture("nvidia-cudnn-cu12.html", "");
  REQUIRE(html.ok());
  CHECK(html->size() == 5);
  auto from_json = parse_fixture("nvidia-cuda-runtime.json", "");
  REQUIRE(from_json.ok());
  CHECK(from_json->size() == 2);
}

TEST_CASE("malformed JSON is an error naming the page URL", "[pypi]") {
  auto files = parse_fixture("malformed.json", std::string(kJsonType));
  REQUIRE_FALSE(files.ok());
  CHECK(files.error().message() ==
        "cannot read the index page `https://index.example.test/simple/project/`");
  REQUIRE_FALSE(files.error().causes().empty());
  CHECK_THAT(files.error().causes()[0], Catch::StartsWith("malformed JSON: "));

  auto future =
      parse_index_page(IndexResponse{.status = 200,
                                     .content_type = std::string(kJsonType),
                                     .body = R"({"meta": {"api-version": "2.0"}, "files": []})"},
                       "https://user:secret@index.example.test/simple/x/");
  REQUIRE_FALSE(future.ok());
  CHECK(future.error().message() ==
        "cannot read the index page `https://***@index.example.test/simple/x/`");
  CHECK(future.error().causes().at(0) == "unsupported simple API version 2.0");
}

TEST_CASE("import: wheels land on the matching component versions and cuDNN builds", "[pypi]") {
  auto index = fixture_index();
  auto imported = import_pypi_nvidia(cuda_recipe(), cudnn_recipe(),
                                     {.index_url = fake_index_url(), .fetch = index.fetcher()});
  REQUIRE(imported.ok());

  // One request per project, with pip's Accept header.
  std::vector<std::string> asked = index.asked;
  std::sort(asked.begin(), asked.end());
  CHECK(asked == std::vector<std::string>{
                     "https://index.example.test/simple/nvidia-cuda-nvcc-cu12/",
                     "https://index.example.test/simple/nvidia-cuda-runtime-cu12/",
                     "https://index.example.test/simple/nvidia-cuda-runtime/",
                     "https://index.example.test/simple/nvidia-cudnn-cu11/",
                     "https://index.example.test/simple/nvidia-cudnn-cu12/",
                 });
  CHECK_THAT(index.headers.at(0).at(0),
             Catch::StartsWith("Accept: application/vnd.pypi.simple.v1+json"));

  const auto& cuda = imported->cuda;
  const auto* x86 = find_artifact(cuda, "12.4.1", "", "cuda_cudart", Platform::linux_x86_64);
  REQUIRE(x86);
  CHECK(x86->kind == ArtifactKind::wheel);
  CHECK(x86->layout == Layout::nvidia_wheel);
  CHECK(x86->format == "whl");
  CHECK(x86->wheel_root == "nvidia/cuda_runtime");
  // manylinux2014 (glibc 2.17) is wider than manylinux_2_28; the relative URL is resolved.
  CHECK(x86->url ==
        "https://index.example.test/packages/12/"
        "nvidia_cuda_runtime_cu12-12.4.127-py3-none-manylinux2014_x86_64.whl");
  CHECK(x86->sha256 == "4444444444444444444444444444444444444444444444444444444444444444");
  CHECK(x86->size == 883737U);
  CHECK(find_artifact(cuda, "12.4.1", "", "cuda_cudart", Platform::linux_aarch64));
  CHECK(find_artifact(cuda, "12.4.1", "", "cuda_cudart", Platform::windows_x86_64));
  // No wheel of 12.3.101 on the page, no nvcc project: nothing, and no error.
  CHECK_FALSE(cuda.find(Version::parse("12.3.2").value()));
  CHECK_FALSE(find_artifact(cuda, "12.4.1", "", "cuda_nvcc", Platform::linux_x86_64));

  const auto* cu13 = find_artifact(cuda, "13.0.2", "", "cuda_cudart", Platform::linux_x86_64);
  REQUIRE(cu13);
  CHECK(cu13->wheel_root == "nvidia/cu13");
  CHECK_FALSE(cu13->size);

  const auto& cudnn = imported->cudnn;
  const auto* cudnn_x86 =
      find_artifact(cudnn, "9.1.0.70", "cuda12", "cudnn", Platform::linux_x86_64);
  REQUIRE(cudnn_x86);
  CHECK(cudnn_x86->wheel_root == "nvidia/cudnn");
  CHECK(cudnn_x86->sha256 == "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
  CHECK(find_artifact(cudnn, "9.1.0.70", "cuda12", "cudnn", Platform::windows_x86_64)->sha256 ==
        "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
  // Yanked wheels are left out (aarch64 of 9.1.0.70, all of 8.9.7.29).
  CHECK_FALSE(find_artifact(cudnn, "9.1.0.70", "cuda12", "cudnn", Platform::linux_aarch64));
  CHECK_FALSE(cudnn.find(Version::parse("8.9.7.29").value()));

  CHECK(imported->projects_fetched == 5);
  CHECK(imported->projects_missing == 2);
  CHECK(imported->matched == 3);    // cudart 12.4.127, cudart 13.0.96, cudnn 9.1.0.70 cuda12
  CHECK(imported->unmatched == 4);  // nvcc, cudart 12.3.101, cudnn cuda11, cudnn 8.9.7.29
  CHECK(imported->artifacts == 3 + 2 + 2);
  CHECK(cuda.sources.size() == 1);
}

TEST_CASE("import: a post-release wheel serves its component's version", "[pypi]") {
  // PyPI has nvidia-cuda-cccl-cu12 12.4.127.post1 and no 12.4.127: NVIDIA re-uploaded it.
  FakeIndex index;
  const auto wheel = [](std::string version, char hash) {
    const auto name = "nvidia_cuda_cccl_cu12-" + version + "-py3-none-manylinux2014_x86_64.whl";
    return R"({"filename": ")" + name + R"(", "url": "https://files.example.test/)" + name +
           R"(", "hashes": {"sha256": ")" + std::string(64, hash) + R"("}})";
  };
  index.add("nvidia-cuda-cccl-cu12", std::string(kJsonType),
            R"({"meta": {"api-version": "1.1"}, "name": "nvidia-cuda-cccl-cu12", "files": [)" +
                wheel("12.4.127.post1", '1') + ", " + wheel("12.4.127.post2", '2') + ", " +
                wheel("12.4.128", '3') + ", " + wheel("12.3.101.post1", '4') + "]}");
  Recipe cuda{.name = "cuda"};
  cuda.versions.push_back(RecipeVersion{.version = Version::parse("12.4.1").value(),
                                        .components = {{"cuda_cccl", "12.4.127"}},
                                        .builds = {Build{.id = ""}}});
  cuda.versions.push_back(RecipeVersion{.version = Version::parse("12.3.2").value(),
                                        .components = {{"cuda_cccl", "12.3.101"}},
                                        .builds = {Build{.id = ""}}});
  auto imported = import_pypi_nvidia(cuda, Recipe{.name = "cudnn"},
                                     {.index_url = fake_index_url(), .fetch = index.fetcher()});
  REQUIRE(imported.ok());
  const auto* cccl =
      find_artifact(imported->cuda, "12.4.1", "", "cuda_cccl", Platform::linux_x86_64);
  REQUIRE(cccl);
  // The newest re-upload of exactly 12.4.127, never 12.4.128.
  CHECK_THAT(cccl->url, Catch::EndsWith("nvidia_cuda_cccl_cu12-12.4.127.post2-py3-none-"
                                        "manylinux2014_x86_64.whl"));
  CHECK(cccl->wheel_root == "nvidia/cuda_cccl");
  CHECK(find_artifact(imported->cuda, "12.3.2", "", "cuda_cccl", Platform::linux_x86_64));
}

TEST_CASE("import: the result merges as a second artifact beside the archive", "[pypi]") {
  auto base = cuda_recipe();
  base.versions[0].builds[0].artifacts.push_back(Artifact{
      .platform = Platform::linux_x86_64,
      .component = "cuda_cudart",
      .url = "https://archive.example.test/cuda_cudart.tar.xz",
      .sha256 = std::string(64, '0'),
      .format = "tar.xz",
  });
  auto index = fixture_index();
  auto imported = import_pypi_nvidia(base, cudnn_recipe(),
                                     {.index_url = fake_index_url(), .fetch = index.fetcher()});
  REQUIRE(imported.ok());
  merge_into(base, imported->cuda);
  const auto* version = base.find(Version::parse("12.4.1").value());
  REQUIRE(version);
  const auto& artifacts = version->builds.at(0).artifacts;
  CHECK(std::count_if(artifacts.begin(), artifacts.end(), [](const Artifact& a) {
          return a.component == "cuda_cudart" && a.platform == Platform::linux_x86_64;
        }) == 2);
  CHECK(version->components.size() == 3);  // untouched
}

TEST_CASE("import: an index error other than 404 stops the import", "[pypi]") {
  FakeIndex index;
  index.pages[fake_index_url("nvidia-cuda-runtime-cu12/")] =
      IndexResponse{.status = 503, .body = "busy"};
  index.add("nvidia-cudnn-cu12", std::string(kJsonType), pypi_fixture("malformed.json"));
  Recipe cuda{.name = "cuda"};
  cuda.versions.push_back(RecipeVersion{.version = Version::parse("12.4.1").value(),
                                        .components = {{"cuda_cudart", "12.4.127"}},
                                        .builds = {Build{}}});
  auto failed = import_pypi_nvidia(cuda, Recipe{.name = "cudnn"},
                                   {.index_url = fake_index_url(), .fetch = index.fetcher()});
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().message() ==
        "cannot read the index page "
        "`https://index.example.test/simple/nvidia-cuda-runtime-cu12/`");
  CHECK(failed.error().causes().at(0) == "the server answered HTTP 503");

  auto malformed = import_pypi_nvidia(
      Recipe{.name = "cuda"}, cudnn_recipe(),
      {.index_url = "https://index.example.test/simple", .fetch = index.fetcher()});
  REQUIRE_FALSE(malformed.ok());
  CHECK_THAT(malformed.error().message(), Catch::Contains("/simple/nvidia-cudnn-cu1"));
}

TEST_CASE("pip's index: PIP_INDEX_URL, then [install], then [global], then PyPI", "[pypi]") {
  envkit::test::TempDir dir;
  const auto system = dir.write("etc/pip.conf",
                                "[global]\n"
                                "cert = /etc/ssl/certs/ca-certificates.crt\n"
                                "index-url = https://system.example.test/simple\n");
  const auto user = dir.write("home/.config/pip/pip.conf",
                              "# mirror\n"
                              "[global]\n"
                              "index_url: https://user.example.test/simple\n"
                              "extra-index-url =\n"
                              "    https://extra.example.test/simple\n");
  const auto install = dir.write("home/.pip/pip.conf",
                                 "[install]\nindex-url = https://install.example.test/simple\n");
  const auto missing = dir.path() / "nowhere" / "pip.conf";

  CHECK(pip_index_url({}) == kPypiSimpleUrl);
  CHECK(pip_index_url({.config_files = {missing}}) == kPypiSimpleUrl);
  CHECK(pip_index_url({.config_files = {system}}) == "https://system.example.test/simple");
  CHECK(pip_index_url({.config_files = {system, user}}) == "https://user.example.test/simple");
  CHECK(pip_index_url({.config_files = {user, system}}) == "https://system.example.test/simple");
  // [install] wins over [global] from any file, as in pip.
  CHECK(pip_index_url({.config_files = {install, user}}) == "https://install.example.test/simple");
  CHECK(pip_index_url({.index_url_variable = "https://env.example.test/simple",
                       .config_files = {install}}) == "https://env.example.test/simple");
  CHECK(pip_index_url({.index_url_variable = "", .config_files = {system}}) ==
        "https://system.example.test/simple");
}

TEST_CASE("pip's config files come from HOME, XDG_CONFIG_HOME and PIP_CONFIG_FILE", "[pypi]") {
  const auto settings = PipIndexSettings::from_environment();
  REQUIRE(settings.config_files.size() >= 2);
  CHECK(settings.config_files[0] == "/etc/xdg/pip/pip.conf");
  CHECK(settings.config_files[1] == "/etc/pip.conf");
}

TEST_CASE("live: PyPI has nvidia-cuda-runtime-cu12 12.4.127 for manylinux x86_64", "[pypi][live]") {
  if (envkit::test::live_tests_off("reach PyPI")) return;
  // The recipes module does not link the network module; curl stands in for it here.
  if (envkit::test::program_missing("curl")) return;
  FetchIndexPage fetch = [](const std::string& url,
                            const std::vector<std::string>& headers) -> Result<IndexResponse> {
    std::vector<std::string> argv = {"curl", "-sSL", "--fail",           "-o",
                                     "-",    "-w",   "\n%{content_type}"};
    for (const auto& header : headers)
      argv.insert(argv.end(), {"-H", header});
    argv.push_back(url);
    auto ran = envkit::sys::run_process(argv, {.timeout = std::chrono::seconds(60)});
    if (!ran) return std::move(ran).error();
    if (ran->exit_code != 0) return envkit::Error::failed("curl failed: " + ran->err);
    const auto last_line = ran->out.rfind('\n');
    return IndexResponse{.status = 200,
                         .content_type = ran->out.substr(last_line + 1),
                         .url = url,
                         .body = ran->out.substr(0, last_line)};
  };
  auto response = fetch(std::string(kPypiSimpleUrl) + "nvidia-cuda-runtime-cu12/",
                        {"Accept: application/vnd.pypi.simple.v1+json"});
  REQUIRE(response.ok());
  auto files = parse_index_page(*response, response->url);
  REQUIRE(files.ok());
  bool found = false;
  for (const auto& file : *files) {
    auto wheel = parse_wheel_filename(file.filename);
    if (!wheel || wheel->version != "12.4.127" || wheel_platform(*wheel) != Platform::linux_x86_64)
      continue;
    const auto& sha = file.hashes.at("sha256");
    CHECK(sha.size() == 64);
    CHECK(std::all_of(sha.begin(), sha.end(),
                      [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }));
    found = true;
  }
  CHECK(found);
}
