// The project's era for source builds: its `==` pins, their upload days read from
// PEP 691 pages (PEP 700 `upload-time`), the newest of them as the horizon, and the
// build tools' releases; what an index that gives no dates, or answers garbage, does.
// The index is a fake in memory.
#include "envkit/locking/era.hpp"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <map>
#include <mutex>

#include "envkit/python/build_env.hpp"
#include "support/temp_dir.hpp"

namespace envkit::locking {
namespace {

using Strings = std::vector<std::string>;

constexpr std::string_view kEraIndex = "https://pypi.test/simple";

// One file of a PEP 691 page: `name-version.tar.gz` uploaded at `time`.
std::string era_file(std::string_view name, std::string_view version, std::string_view time,
                     std::string_view suffix = ".tar.gz") {
  return fmt::format(
      R"({{"filename": "{0}-{1}{3}", "url": "../../files/{0}-{1}{3}", "hashes": {{"sha256": "{4}"}},)"
      R"( "upload-time": "{2}"}})",
      name, version, time, suffix, std::string(64, 'a'));
}

std::string era_page(const std::vector<std::string>& files) {
  std::string joined;
  for (const auto& file : files)
    joined += (joined.empty() ? "" : ", ") + file;
  return R"({"meta": {"api-version": "1.1"}, "files": [)" + joined + "]}";
}

// An index in memory: page URL -> answer; anything else is a 404.
struct DatedIndex {
  std::map<std::string, recipes::IndexResponse> pages;
  std::vector<std::string> asked;
  std::mutex mutex;

  void add(std::string_view project, std::string content_type, std::string body,
           std::string_view index = kEraIndex) {
    pages[fmt::format("{}/{}/", index, project)] = {
        .status = 200, .content_type = std::move(content_type), .url = {}, .body = std::move(body)};
  }
  EraSource source(Strings indexes = {std::string(kEraIndex)}) {
    return {
        .indexes = std::move(indexes),
        .fetch = [this](const std::string& url, const Strings&) -> Result<recipes::IndexResponse> {
          const std::scoped_lock lock(mutex);
          asked.push_back(url);
          const auto it = pages.find(url);
          if (it == pages.end()) return recipes::IndexResponse{.status = 404};
          return it->second;
        }};
  }
};

constexpr std::string_view kEraJson = "application/vnd.pypi.simple.v1+json";

// setuptools and wheel as PyPI dates them; no Cython on this index.
void add_era_tools(DatedIndex& index) {
  index.add("setuptools", std::string(kEraJson),
            era_page({era_file("setuptools", "41.6.0", "2019-10-21T12:00:00.000000Z"),
                      era_file("setuptools", "42.0.2", "2019-12-03T08:00:00Z"),
                      era_file("setuptools", "42.0.2", "2019-12-02T23:59:59Z", "-py3.whl"),
                      era_file("setuptools", "80.9.0", "2025-05-27T00:00:00Z")}));
  index.add("wheel", std::string(kEraJson),
            era_page({era_file("wheel", "0.33.6", "2019-08-18T00:00:00Z"),
                      era_file("wheel", "0.45.1", "2024-11-23T00:00:00Z")}));
}

TEST_CASE("the project's == pins: requirement lines, files and their includes", "[locking][era]") {
  test::TempDir dir;
  dir.write("p/requirements.txt",
            "# the project\nalbumentations==0.4.3\nnumpy>=1.19\n-r more.txt\n"
            "torch==1.11.*\nopencv-python === 4.1.2.30\n");
  dir.write("p/more.txt", "Pudb==2019.2 ; python_version < '3.9'\nalbumentations==0.5\n");
  python::ResolveRequest request;
  request.requirements = {"imageio==2.9.0", "kornia>=0.6", "einops[torch]==0.3.0"};
  request.requirement_files = {"requirements.txt"};
  request.cwd = dir.path() / "p";
  const auto pins = exact_pins(request);
  REQUIRE(pins.size() == 4);
  CHECK(pins[0] == Pin{.name = "imageio", .version = "2.9.0"});
  CHECK(pins[1] == Pin{.name = "einops", .version = "0.3.0"});
  CHECK(pins[2] == Pin{.name = "albumentations", .version = "0.4.3"});  // the first pin wins
  CHECK(pins[3] == Pin{.name = "pudb", .version = "2019.2"});
}

TEST_CASE("the date horizon is the upload day of the newest release the project pins",
          "[locking][era]") {
  DatedIndex index;
  add_era_tools(index);
  index.add("albumentations", std::string(kEraJson),
            era_page({era_file("albumentations", "0.4.3", "2019-11-15T10:17:53Z"),
                      era_file("albumentations", "1.4.0", "2024-02-01T00:00:00Z")}));
  index.add("imageio", std::string(kEraJson),
            era_page({era_file("imageio", "2.9.0", "2020-07-08T00:00:00Z", "-py3-none-any.whl"),
                      era_file("imageio", "2.9.0", "2020-07-07T21:00:00Z")}));
  const auto era = project_era(
      {{.name = "albumentations", .version = "0.4.3"}, {.name = "imageio", .version = "2.9.0"}},
      std::nullopt, index.source());
  REQUIRE(era);
  CHECK(era->as_of == "2020-07-07");  // imageio 2.9.0's first file
  CHECK(era->because == "imageio 2.9.0, the newest release the project pins, was uploaded then");
  REQUIRE(era->tools.size() == 2);  // no Cython on this index
  CHECK(era->tools.at("setuptools").size() == 3);
  // The constraint file of that era, for the lock's Python 3.8: setuptools 42.0.2's
  // first file is of 2019-12-02.
  CHECK(python::build_constraints(*era, specs::Version::parse("3.8.5").value()) ==
        Strings{"setuptools<=42.0.2", "wheel<=0.33.6"});
}

TEST_CASE("envkit.yaml's as-of is the horizon without dating the pins", "[locking][era]") {
  DatedIndex index;
  add_era_tools(index);
  const auto era = project_era({{.name = "albumentations", .version = "0.4.3"}},
                               std::string("2019-11-01"), index.source());
  REQUIRE(era);
  CHECK(era->as_of == "2019-11-01");
  CHECK(era->because == "envkit.yaml's `resolution.as-of`");
  CHECK(std::none_of(index.asked.begin(), index.asked.end(), [](const std::string& url) {
    return url.find("albumentations") != std::string::npos;
  }));
  CHECK(python::build_constraints(*era, specs::Version::parse("3.6.9").value()) ==
        Strings{"setuptools<=41.6.0", "wheel<=0.33.6"});
}

TEST_CASE("pins are dated from the first index whose page gives upload times", "[locking][era]") {
  DatedIndex index;
  add_era_tools(index);
  constexpr std::string_view kTorchIndex = "https://download.pytorch.test/whl/cu113";
  // PyTorch's index is HTML only: no dates there, so PyPI's are read.
  index.add("torch", "text/html",
            "<html><body><a href=\"torch-1.11.0%2Bcu113-cp38-cp38-linux_x86_64.whl\">"
            "torch-1.11.0+cu113-cp38-cp38-linux_x86_64.whl</a></body></html>",
            kTorchIndex);
  index.add("torch", std::string(kEraJson),
            era_page({era_file("torch", "1.11.0", "2022-03-10T16:00:00Z",
                               "-cp38-cp38-manylinux1_x86_64.whl")}));
  const auto era = project_era({{.name = "torch", .version = "1.11.0"}}, std::nullopt,
                               index.source({std::string(kTorchIndex), std::string(kEraIndex)}));
  REQUIRE(era);
  CHECK(era->as_of == "2022-03-10");
}

TEST_CASE("an index that dates nothing leaves the era unknown, saying why", "[locking][era]") {
  DatedIndex index;
  index.add("albumentations", "text/html",
            "<a href=\"../../files/albumentations-0.4.3.tar.gz#sha256=00\">"
            "albumentations-0.4.3.tar.gz</a>");
  const auto era =
      project_era({{.name = "albumentations", .version = "0.4.3"}}, std::nullopt, index.source());
  REQUIRE(era);
  CHECK(era->as_of.empty());
  CHECK_THAT(era->because,
             Catch::Contains("https://pypi.test/simple/albumentations/ gives no upload times"));

  SECTION("as a project that pins nothing has no era") {
    const auto none = project_era({}, std::nullopt, index.source());
    REQUIRE(none);
    CHECK(none->as_of.empty());
    CHECK_THAT(none->because, Catch::Contains("pins no release"));
  }
  SECTION("and build tools without dates leave it unknown too") {
    const auto dated = project_era({}, std::string("2020-01-01"), index.source());
    REQUIRE(dated);
    CHECK(dated->as_of.empty());
    CHECK_THAT(dated->because, Catch::Contains("no index dates the releases of the build tools"));
  }
}

TEST_CASE("an index page that answers garbage is an error naming its URL and the package",
          "[locking][era]") {
  DatedIndex index;
  add_era_tools(index);
  SECTION("an HTML login page") {
    index.add("albumentations", "text/html",
              "<html><body>Please <a href=\"/login\">log in</a> to continue</body></html>");
  }
  SECTION("a page that says JSON and is not") {
    index.add("albumentations", std::string(kEraJson), "<html>not json</html>");
  }
  SECTION("an empty page") {
    index.add("albumentations", "text/html", "<html><body>maintenance</body></html>");
  }
  const auto era =
      project_era({{.name = "albumentations", .version = "0.4.3"}}, std::nullopt, index.source());
  REQUIRE_FALSE(era);
  CHECK(era.error().message() ==
        "cannot read the upload dates of `albumentations` from "
        "`https://pypi.test/simple/albumentations/`");
  REQUIRE_FALSE(era.error().causes().empty());
  REQUIRE(era.error().hints().size() == 1);
  CHECK_THAT(era.error().hints()[0], Catch::Contains("`resolution: {as-of: 2022-08-01}`"));
}

TEST_CASE("envkit's own Python is found in its cache by the version it answers", "[locking][era]") {
  test::TempDir dir;
  CHECK_FALSE(cached_python(dir.path(), specs::Version::parse("3.8").value()));
  CHECK_FALSE(cached_python({}, specs::Version::parse("3.8").value()));
  // An entry whose python3.8 is a script that claims 3.8 but answers 3.9 is refused.
  const auto liar =
      dir.write("store/v1/entries/abc-python/bin/python3.8", "#!/bin/sh\necho 3.9.18\n");
  std::filesystem::permissions(liar, std::filesystem::perms::owner_all);
  CHECK_FALSE(cached_python(dir.path(), specs::Version::parse("3.8.5").value()));
  const auto honest =
      dir.write("store/v1/entries/def-python/bin/python3.8", "#!/bin/sh\necho 3.8.18\n");
  std::filesystem::permissions(honest, std::filesystem::perms::owner_all);
  CHECK(cached_python(dir.path(), specs::Version::parse("3.8.5").value()) == honest);
}

}  // namespace
}  // namespace envkit::locking
