#include <catch2/catch.hpp>
#include <string>

#include "envkit/python/pip.hpp"
#include "envkit/sys/fs.hpp"
#include "envkit/sys/process.hpp"
#include "python_test_support.hpp"
#include "support/http_server.hpp"
#include "support/python_index.hpp"

namespace {

namespace fs = std::filesystem;
namespace python = envkit::python;
using envkit::ErrorCode;
using envkit::test::FakeWheel;
using envkit::test::python_fixture;
using envkit::test::PythonIndex;
using envkit::test::ScopedEnv;
using envkit::test::StaticHttpServer;
using envkit::test::TempDir;

std::string all_causes(const envkit::Error& error) {
  std::string out;
  for (const auto& cause : error.causes())
    out += cause + "\n";
  return out;
}

std::string all_hints(const envkit::Error& error) {
  std::string out;
  for (const auto& hint : error.hints())
    out += hint + "\n";
  return out;
}

python::Interpreter fake_interpreter(fs::path path) {
  return python::Interpreter{.path = std::move(path),
                             .version = envkit::specs::Version::parse("3.11.7").value(),
                             .pip = envkit::specs::Version::parse("23.2.1").value(),
                             .implementation = "cpython",
                             .platform_tag = "linux-x86_64"};
}

// A stand-in `python` that records its arguments in `args.txt` beside it, copies
// `report` to where --report points, prints `err` on stderr and exits with `code`.
fs::path write_recording_python(const TempDir& dir, const fs::path& report,
                                std::string_view err = {}, int code = 0) {
  const std::string args = (dir.path() / "args.txt").string();
  std::string script = "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + envkit::test::shell_quoted(args) +
                       "\nwhile [ $# -gt 0 ]; do\n"
                       "  if [ \"$1\" = --report ]; then cp " +
                       envkit::test::shell_quoted(report.string()) + " \"$2\"; fi\n  shift\ndone\n";
  if (!err.empty()) script += "printf '%s\\n' " + envkit::test::shell_quoted(err) + " >&2\n";
  script += "exit " + std::to_string(code) + "\n";
  const auto path = dir.write("bin/python3", script);
  fs::permissions(path, fs::perms::owner_all, fs::perm_options::replace);
  return path;
}

// pip as this machine has it, with nothing from the user's configuration or $HOME.
struct HermeticPip {
  TempDir cache;
  ScopedEnv config{"PIP_CONFIG_FILE", "/dev/null"};
  ScopedEnv cache_dir{"PIP_CACHE_DIR", cache.path().string()};
  ScopedEnv index{"PIP_INDEX_URL", std::nullopt};
  ScopedEnv extra{"PIP_EXTRA_INDEX_URL", std::nullopt};
  ScopedEnv find_links{"PIP_FIND_LINKS", std::nullopt};
  ScopedEnv no_index{"PIP_NO_INDEX", std::nullopt};
  ScopedEnv require_venv{"PIP_REQUIRE_VIRTUALENV", std::nullopt};
};

}  // namespace

TEST_CASE("resolve_with_pip() builds pip's command line", "[python][pip]") {
  TempDir dir;
  const auto report = dir.write("report.json", python_fixture("anyio-4.0.0.pip-26.3.json"));
  const auto python = fake_interpreter(write_recording_python(dir, report));
  dir.write("work/requirements.txt", "anyio\n");
  auto closure = python::resolve_with_pip(
      python, {.requirements = {"anyio==4.0.0", " numpy>=1.24 "},
               .requirement_files = {"requirements.txt"},
               .index_urls = {"https://user:pw@a.test/simple", "https://b.test/simple"},
               .cwd = dir.path() / "work"});
  REQUIRE(closure);
  CHECK(closure->wheels.size() == 3);
  CHECK(closure->resolver == "pip 26.3 (CPython 3.11.7)");

  auto args = envkit::sys::read_file(dir.path() / "args.txt").value();
  // The report path is a fresh temporary file; the rest is fixed.
  const auto report_at = args.find("--report\n");
  REQUIRE(report_at != std::string::npos);
  const auto path_end = args.find('\n', report_at + 9);
  const fs::path report_path = args.substr(report_at + 9, path_end - report_at - 9);
  CHECK(report_path.filename() == "report.json");
  args.erase(report_at + 9, path_end - report_at - 9);
  CHECK(args ==
        "-I\n-m\npip\ninstall\n--dry-run\n--ignore-installed\n--report\n\n"
        "--only-binary=:all:\n--disable-pip-version-check\n--no-input\n--no-color\n"
        "--index-url\nhttps://user:pw@a.test/simple\n"
        "--extra-index-url\nhttps://b.test/simple\n"
        "-r\nrequirements.txt\n"
        "anyio==4.0.0\nnumpy>=1.24\n");
  // The scratch folder is gone.
  CHECK_FALSE(fs::exists(report_path.parent_path()));
}

TEST_CASE("resolve_with_pip() refusals and failures", "[python][pip]") {
  TempDir dir;
  const auto report = dir.write("report.json", python_fixture("anyio-4.0.0.pip-26.3.json"));

  SECTION("an option is not a requirement") {
    const auto python = fake_interpreter(write_recording_python(dir, report));
    auto closure = python::resolve_with_pip(python, {.requirements = {"-e ."}});
    REQUIRE_FALSE(closure);
    CHECK(closure.error().code() == ErrorCode::input);
    CHECK(closure.error().message() == "`-e .` is not a requirement");
    CHECK_FALSE(fs::exists(dir.path() / "args.txt"));  // pip did not run
  }
  SECTION("nothing to resolve runs nothing") {
    const auto python = fake_interpreter(write_recording_python(dir, report));
    auto closure = python::resolve_with_pip(python, {});
    REQUIRE(closure);
    CHECK(closure->wheels.empty());
    CHECK(closure->resolver == "pip 23.2.1 (CPython 3.11.7)");
    CHECK_FALSE(fs::exists(dir.path() / "args.txt"));
  }
  SECTION("no pip module: pip's output is quoted, with a hint") {
    const auto path =
        dir.write("bin/python3", "#!/bin/sh\necho \"$0: No module named pip\" >&2\nexit 1\n");
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::replace);
    auto closure = python::resolve_with_pip(fake_interpreter(path), {.requirements = {"anyio"}});
    REQUIRE_FALSE(closure);
    CHECK(closure.error().code() == ErrorCode::failed);
    CHECK(closure.error().message() == "pip could not resolve the Python requirements");
    CHECK(closure.error().causes() ==
          std::vector<std::string>{"pip exited with code 1 and printed `" + path.string() +
                                   ": No module named pip`"});
    CHECK_THAT(all_hints(closure.error()),
               Catch::Contains("install pip: `" + path.string() + " -m ensurepip --upgrade`"));
  }
  SECTION("pip that does not finish") {
    const auto path = dir.write("bin/python3", "#!/bin/sh\nexec sleep 10\n");
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::replace);
    auto closure = python::resolve_with_pip(fake_interpreter(path),
                                            {.requirements = {"anyio"},
                                             .index_urls = {"https://user:s3cret@a.test/simple"},
                                             .timeout = std::chrono::seconds(1)});
    REQUIRE_FALSE(closure);
    CHECK(closure.error().message() == "pip did not finish resolving within 1 s");
    CHECK_THAT(closure.error().to_string(), !Catch::Contains("s3cret"));
    CHECK_THAT(closure.error().to_string(), Catch::Contains("https://***@a.test/simple"));
  }
  SECTION("a report envkit cannot use is a failure, quoting the item") {
    const auto sdist = dir.write("sdist.json", python_fixture("edited-sdist.json"));
    auto closure = python::resolve_with_pip(fake_interpreter(write_recording_python(dir, sdist)),
                                            {.requirements = {"anyio"}});
    REQUIRE_FALSE(closure);
    CHECK(closure.error().code() == ErrorCode::failed);
    CHECK_THAT(closure.error().message(),
               Catch::StartsWith("`pip install --report`: install[2] (`sniffio` 1.3.1)"));
  }
}

TEST_CASE("resolve_with_pip() with the host's pip against a local index", "[python][pip][index]") {
  if (!StaticHttpServer::available()) {
    WARN("skipped: nginx is not installed (scripts/setup installs it)");
    return;
  }
  auto python = python::find_resolver({});
  if (!python) {
    WARN("skipped: no Python with pip 22.2 or newer here: " << python.error().to_string());
    return;
  }
  HermeticPip hermetic;
  TempDir dir;
  PythonIndex index(dir.path() / "index");
  const auto alpha = index.add({.name = "alpha", .version = "1.0", .requires_dist = {"beta>=2.0"}});
  index.add({.name = "beta", .version = "1.0"});
  const auto beta = index.add(
      {.name = "Beta", .version = "2.0", .requires_dist = {"gamma>=1; os_name == \"nt\""}});
  StaticHttpServer server(index.root());
  const std::string simple = server.url("/simple/");

  SECTION("a requirement and what it pulls in") {
    auto closure =
        python::resolve_with_pip(*python, {.requirements = {"alpha==1.0"}, .index_urls = {simple}});
    REQUIRE(closure);
    CHECK_THAT(closure->resolver, Catch::StartsWith("pip "));
    REQUIRE(closure->wheels.size() == 2);
    const auto& a = closure->wheels[0];
    CHECK(a.name == "alpha");
    CHECK(a.version == "1.0");
    CHECK(a.url == server.url("/files/alpha-1.0-py3-none-any.whl"));
    CHECK(a.sha256 == PythonIndex::sha256_of(alpha));
    CHECK(a.requested);
    CHECK(a.requires_dist == std::vector<std::string>{"beta>=2.0"});
    const auto& b = closure->wheels[1];
    CHECK(b.name == "beta");
    CHECK(b.version == "2.0");
    CHECK(b.url == server.url("/files/beta-2.0-py3-none-any.whl"));
    CHECK(b.sha256 == PythonIndex::sha256_of(beta));
    CHECK_FALSE(b.requested);
    CHECK(b.requires_dist == std::vector<std::string>{"gamma>=1; os_name == \"nt\""});
  }
  SECTION("a requirements file, relative to the request's folder") {
    dir.write("project/requirements.txt", "# pins\nbeta==1.0\n");
    auto closure = python::resolve_with_pip(*python, {.requirement_files = {"requirements.txt"},
                                                      .index_urls = {simple},
                                                      .cwd = dir.path() / "project"});
    REQUIRE(closure);
    REQUIRE(closure->wheels.size() == 1);
    CHECK(closure->wheels[0].name == "beta");
    CHECK(closure->wheels[0].version == "1.0");
    CHECK(closure->wheels[0].requested);
  }
  SECTION("a requirement the index lacks: pip's words, with a hint") {
    auto closure = python::resolve_with_pip(
        *python, {.requirements = {"alpha", "nothere>=1"}, .index_urls = {simple}});
    REQUIRE_FALSE(closure);
    CHECK(closure.error().message() == "pip could not resolve the Python requirements");
    CHECK_THAT(all_causes(closure.error()),
               Catch::Contains("pip: No matching distribution found for nothere>=1"));
    CHECK_THAT(all_hints(closure.error()),
               Catch::Contains("check the requirement's name and version") &&
                   Catch::Contains("to see pip's whole answer, run `"));
  }
  SECTION("conflicting requirements: pip's explanation") {
    auto closure = python::resolve_with_pip(
        *python, {.requirements = {"alpha==1.0", "beta==1.0"}, .index_urls = {simple}});
    REQUIRE_FALSE(closure);
    const std::string causes = all_causes(closure.error());
    CHECK(closure.error().causes().at(0) ==
          "pip: Cannot install alpha==1.0 and beta==1.0 because these package versions have "
          "conflicting dependencies.");
    CHECK(closure.error().causes().at(1) ==
          "pip: the conflict is caused by: The user requested beta==1.0; alpha 1.0 depends on "
          "beta>=2.0");
    CHECK_THAT(causes, Catch::Contains("pip: ResolutionImpossible"));
    CHECK_THAT(all_hints(closure.error()), Catch::Contains("conflicting"));
  }
  SECTION("credentials in the index URL stay out of the closure and the messages") {
    const std::string secret = server.url("/simple/").replace(7, 0, "builder:s3cret@");
    auto closure =
        python::resolve_with_pip(*python, {.requirements = {"alpha==1.0"}, .index_urls = {secret}});
    REQUIRE(closure);
    for (const auto& wheel : closure->wheels) {
      CHECK_THAT(wheel.url, !Catch::Contains("s3cret") && !Catch::Contains("builder"));
    }
    auto missing =
        python::resolve_with_pip(*python, {.requirements = {"nothere"}, .index_urls = {secret}});
    REQUIRE_FALSE(missing);
    CHECK_THAT(missing.error().to_string(), !Catch::Contains("s3cret"));
    CHECK_THAT(all_hints(missing.error()), Catch::Contains("http://***@127.0.0.1:"));
  }
}
