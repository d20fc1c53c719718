// envkit::solve::solve() against the source tree's recipe database: the
// choices a user expects, the words of a failure, and hints that hold.
#include "envkit/solve/solve.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "envkit/recipes/recipe_io.hpp"
#include "envkit/sys/fs.hpp"
#include "support/source_database.hpp"
#include "support/temp_dir.hpp"

namespace envkit::solve {
namespace {

using specs::Platform;

const recipes::Database& database() {
  return test::source_database();
}

specs::Version v(std::string_view text) {
  return specs::Version::parse(text).value();
}

// A spec as envkit.yaml spells it (`2.4.*`, `13`, `==1.6.0`).
specs::VersionSpec spec(std::string_view text) {
  return specs::VersionSpec::parse(text, specs::SpecSyntax::envkit).value();
}

Request framework(std::string name, std::string_view version_spec = "") {
  Request request;
  request.requirements.push_back({std::move(name), spec(version_spec), "framework"});
  return request;
}

Request& requires_(Request& request, std::string package, std::string_view version_spec) {
  request.requirements.push_back({std::move(package), spec(version_spec), "requires"});
  return request;
}

Request& driver(Request& request, std::string_view version) {
  request.system.driver = v(version);
  return request;
}

Request& gpu(Request& request, std::string_view capability) {
  request.system.gpus.push_back({specs::ComputeCapability::parse(capability).value(), ""});
  return request;
}

Request& external(Request& request, const std::string& package, std::string_view version) {
  request.external.insert_or_assign(package, External{v(version), "given in envkit.yaml"});
  return request;
}

Outcome solved_outcome(const Request& request) {
  auto outcome = solve(database(), request);
  INFO((outcome ? std::string() : outcome.error().to_string()));
  REQUIRE(outcome.ok());
  return std::move(outcome).value();
}

std::string lines(const std::vector<std::string>& text) {
  std::string out;
  for (const auto& line : text)
    out += line + "\n";
  return out;
}

Solution solution(const Request& request) {
  auto outcome = solved_outcome(request);
  if (const auto* failed = std::get_if<Unsolvable>(&outcome)) {
    FAIL("unsolvable:\n" << lines(failed->explanation) << "hints:\n" << lines(failed->hints));
  }
  return std::get<Solution>(std::move(outcome));
}

Unsolvable failure(const Request& request) {
  auto outcome = solved_outcome(request);
  REQUIRE(std::holds_alternative<Unsolvable>(outcome));
  return std::get<Unsolvable>(std::move(outcome));
}

// "torch 2.4.1 (cu121)", "cuda 12.1.1", "python 3.6.9": what a user reads in a lock.
std::string chosen(const Solution& solution, std::string_view name) {
  const auto* choice = solution.find(name);
  if (choice == nullptr) return "(none)";
  auto text = choice->name + " " + choice->version.original();
  if (!choice->build.empty()) text += " (" + choice->build + ")";
  return text;
}

std::string because(const Solution& solution, std::string_view name) {
  const auto* choice = solution.find(name);
  REQUIRE(choice != nullptr);
  return lines(choice->because);
}

std::vector<std::string> names(const Solution& solution) {
  std::vector<std::string> out;
  for (const auto& choice : solution.packages)
    out.push_back(choice.name);
  return out;
}

}  // namespace

TEST_CASE("solve: torch 2.4.* on a 535 driver gets the cu121 stack it was tested with", "[solve]") {
  auto request = framework("torch", "2.4.*");
  driver(request, "535.104.05");
  const auto s = solution(request);
  CHECK(names(s) == std::vector<std::string>{"cuda", "cudnn", "python", "torch", "zlib"});
  CHECK(chosen(s, "torch") == "torch 2.4.1 (cu121)");
  CHECK(chosen(s, "cuda") == "cuda 12.1.1");
  CHECK(chosen(s, "cudnn") == "cudnn 9.1.0.70 (cuda12)");
  CHECK(s.find("__driver") == nullptr);
  // The chosen build's requirements are reported on the choice.
  const auto* torch = s.find("torch");
  REQUIRE(torch != nullptr);
  CHECK(torch->requires_.at("cuda").to_string() == "<13,>=12.1");
  CHECK_FALSE(torch->external.has_value());
  CHECK(because(s, "cuda") ==
        "torch 2.4.1 (cu121) requires cuda <13,>=12.1\n"
        "this machine's driver is 535.104.05; it runs CUDA 12.1.1 natively\n"
        // PyPI's torch 2.4.1 pins nvidia-cuda-runtime-cu12 12.1.105 (recipes/pypi/torch.yaml).
        "chosen: torch 2.4.1 (cu121) was tested with cuda 12.1.105: the tested version is "
        "preferred\n");
}

TEST_CASE("solve: the newest framework version wins", "[solve]") {
  auto any = framework("torch");
  driver(any, "580.65.06");
  CHECK(solution(any).find("torch")->version.original() == "2.14.1");

  auto old_series = framework("torch", "2.1.*");
  driver(old_series, "535.104.05");
  const auto s = solution(old_series);
  CHECK(s.find("torch")->version.original() == "2.1.2");
  CHECK_THAT(because(s, "torch"), Catch::Contains("envkit.yaml requires torch ==2.1.*") &&
                                      Catch::Contains("chosen: the newest allowed version"));
}

TEST_CASE("solve: an old driver gets the cu118 build and CUDA 11.8", "[solve]") {
  auto request = framework("torch", "2.1.*");
  driver(request, "520.61.05");
  const auto s = solution(request);
  CHECK(chosen(s, "torch") == "torch 2.1.2 (cu118)");
  CHECK(chosen(s, "cuda") == "cuda 11.8.0");
  CHECK_THAT(because(s, "cuda"), Catch::Contains("it runs CUDA 11.8.0 natively"));
}

TEST_CASE("solve: CUDA the driver runs natively beats minor-version compatibility", "[solve]") {
  SECTION("525.60.13 runs CUDA 12 only through compatibility: cu118 with CUDA 11.8, natively") {
    auto request = framework("torch", "2.4.*");
    driver(request, "525.60.13");
    const auto s = solution(request);
    CHECK(chosen(s, "torch") == "torch 2.4.1 (cu118)");
    CHECK(chosen(s, "cuda") == "cuda 11.8.0");
    CHECK_THAT(because(s, "torch"),
               Catch::Contains("build cu118 uses the newest CUDA the driver runs natively"));
    CHECK_THAT(because(s, "cuda"), Catch::Contains("it runs CUDA 11.8.0 natively"));
  }
  SECTION("450.80.02 runs no CUDA of torch 2.4 natively: cu118 through compatibility") {
    auto request = framework("torch", "2.4.*");
    driver(request, "450.80.02");
    const auto s = solution(request);
    CHECK(chosen(s, "torch") == "torch 2.4.1 (cu118)");
    CHECK(chosen(s, "cuda") == "cuda 11.8.0");
    CHECK(because(s, "cuda") ==
          "torch 2.4.1 (cu118) requires cuda <12,>=11.8\n"
          "this machine's driver is 450.80.02; it runs CUDA 11.8.0 only through minor-version "
          "compatibility (no PTX JIT of newer code)\n"
          "chosen: torch 2.4.1 (cu118) was tested with cuda 11.8: the tested version is "
          "preferred\n");
  }
  SECTION("a CUDA requirement alone: the newest CUDA the driver runs natively") {
    Request request;
    requires_(request, "cuda", "12");
    driver(request, "535.104.05");
    const auto s = solution(request);
    CHECK(chosen(s, "cuda") == "cuda 12.2.2");
    CHECK_THAT(because(s, "cuda"),
               Catch::Contains("chosen: the newest allowed CUDA that the driver runs natively"));
  }
}

TEST_CASE("solve: tested versions come before newer ones", "[solve]") {
  // 580 runs every CUDA 12 natively (12.9.1 is allowed), and cudnn <10,>=9.1
  // admits 9.22: the versions torch 2.4.1 was tested with still win.
  auto request = framework("torch", "2.4.*");
  driver(request, "580.65.06");
  const auto s = solution(request);
  const auto* torch = s.find("torch");
  REQUIRE(torch != nullptr);
  CHECK(torch->version.original() == "2.4.1");
  const auto* tested = database().facts("torch").value()->find(torch->version);
  REQUIRE(tested != nullptr);
  const auto build = std::find_if(tested->builds.begin(), tested->builds.end(),
                                  [&](const recipes::Build& b) { return b.id == torch->build; });
  REQUIRE(build != tested->builds.end());
  CHECK(spec(build->tested.at("cuda")).contains(s.find("cuda")->version));
  CHECK(s.find("cuda")->version < v("12.9"));
  CHECK(chosen(s, "cudnn") == "cudnn 9.1.0.70 (cuda12)");
  CHECK_THAT(because(s, "cudnn"),
             Catch::Contains("was tested with cudnn 9.1.0.70: the tested version is preferred"));
  CHECK_THAT(because(s, "cuda"), Catch::Contains("was tested with cuda") &&
                                     Catch::Contains("it runs CUDA") &&
                                     Catch::Contains("natively"));
}

TEST_CASE("solve: GPUs rule out builds without code for them", "[solve]") {
  // Pascal (sm_61): torch's cu128/cu130 builds have no code for it.
  auto request = framework("torch");
  driver(request, "580.65.06");
  gpu(request, "6.1");
  const auto s = solution(request);
  const auto* torch = s.find("torch");
  REQUIRE(torch != nullptr);
  CHECK(torch->build == "cu126");
  CHECK(torch->version.original() == "2.14.1");
  CHECK(chosen(s, "cuda") == "cuda 12.6.3");

  auto cuda13 = framework("torch");
  requires_(cuda13, "cuda", "13");
  gpu(cuda13, "6.1");
  const auto failed = failure(cuda13);
  CHECK(lines(failed.explanation) ==
        "Because cuda ==13.* dropped sm_61 (your GPUs) and envkit.yaml requires cuda ==13.*, no "
        "environment satisfies envkit.yaml on linux-x86_64.\n");
  CHECK(failed.hints == std::vector<std::string>{
                            "without `cuda: \"13\"` under `requires:`, envkit would choose cuda "
                            "12.6.3",
                            "GPUs with compute capability 6.1 are supported up to cuda 12.9.1"});
}

TEST_CASE("solve: tensorflow-gpu 1.6 with the machine's Python 3.6.9", "[solve]") {
  auto request = framework("tensorflow-gpu", "==1.6.0");
  external(request, "python", "3.6.9");
  driver(request, "390.48");
  const auto s = solution(request);
  CHECK(names(s) == std::vector<std::string>{"cuda", "cudnn", "python", "tensorflow-gpu"});
  CHECK(chosen(s, "cuda") == "cuda 9.0.176");
  CHECK(chosen(s, "tensorflow-gpu") == "tensorflow-gpu 1.6.0 (cuda9.0)");
  const auto* python = s.find("python");
  REQUIRE(python != nullptr);
  CHECK(python->version.original() == "3.6.9");
  CHECK(python->external == "given in envkit.yaml");
  CHECK(s.find("cudnn")->version.major() == 7);
}

TEST_CASE("solve: tensorflow-gpu 1.6 on a 375 driver, in words (golden)", "[solve]") {
  // 1.12.3: tensorflow-gpu's last 1.12 release on PyPI (recipes/pypi/tensorflow-gpu.yaml).
  auto request = framework("tensorflow-gpu", "==1.6.0");
  external(request, "python", "3.6.9");
  driver(request, "375.26");
  const auto failed = failure(request);
  CHECK(failed.summary == "no environment satisfies envkit.yaml on linux-x86_64");
  CHECK(lines(failed.explanation) ==
        "Because tensorflow-gpu <=1.12.3 requires cuda ==9.0.* and cuda 9.0.176 requires an "
        "NVIDIA driver >=384.81, but this machine's driver is 375.26, tensorflow-gpu <=1.12.3 "
        "cannot be used.\n"
        "And because envkit.yaml requires tensorflow-gpu ==1.6.0, no environment satisfies "
        "envkit.yaml on linux-x86_64.\n");
  CHECK(failed.hints == std::vector<std::string>{
                            "upgrade the NVIDIA driver to >= 384.81 (what cuda 9.0.176 needs)"});
}

TEST_CASE("solve: tensorflow-gpu 1.6 gets the newest Python 3.6, from source", "[solve]") {
  auto request = framework("tensorflow-gpu", "==1.6.0");
  driver(request, "390.48");
  CHECK(chosen(solution(request), "python") == "python 3.6.15");
}

TEST_CASE("solve: a Python older than the database points at external:", "[solve]") {
  auto request = framework("tensorflow-gpu", "==1.6.0");
  requires_(request, "python", "<3.5");
  driver(request, "390.48");
  const auto failed = failure(request);
  CHECK_THAT(lines(failed.explanation),
             Catch::Contains("the recipe database has no python <3.5 (it has 3.5.0 to 3.14.7)"));
  REQUIRE(failed.hints.size() == 2);
  CHECK_THAT(failed.hints[1], Catch::Contains("`external: {python: system}`"));
}

TEST_CASE("solve: an unknown framework package says so", "[solve]") {
  // Every framework a manifest names has recipes now (jax: recipes/pypi/jax.yaml); the
  // solver still explains a package its database lacks.
  const auto failed = failure(framework("mxnet"));
  REQUIRE(failed.explanation.size() == 2);
  CHECK_THAT(failed.explanation[0],
             Catch::EndsWith("nvkit.yaml requires mxnet, but the recipe database has no package "
                             "`mxnet`."));
  CHECK(failed.explanation[1] == "So no environment satisfies envkit.yaml on linux-x86_64.");
  CHECK(failed.hints.empty());
}

TEST_CASE("solve: a platform without builds is unsolvable on that platform only", "[solve]") {
  auto request = framework("torch", "2.4.*");
  request.platform = Platform::linux_aarch64;
  driver(request, "535.104.05");
  const auto failed = failure(request);
  CHECK(failed.summary == "no environment satisfies envkit.yaml on linux-aarch64");
  CHECK_THAT(lines(failed.explanation),
             Catch::Contains("torch ==2.4.* has no linux-aarch64 build in the recipe database"));
  request.platform = Platform::linux_x86_64;
  CHECK(chosen(solution(request), "torch") == "torch 2.4.1 (cu121)");
}

namespace {

// Applies one hint to `request` the way its words say; returns what the
// re-solved environment must then hold ("" when the hint names nothing).
std::string apply_hint(const std::string& hint, Request& request) {
  std::smatch m;
  if (std::regex_search(hint, m, std::regex(R"re(^upgrade the NVIDIA driver to >= (\S+) )re"))) {
    driver(request, m[1].str());
    return "";
  }
  if (std::regex_search(
          hint, m,
          std::regex(R"re(^use (\S+) (\S+), the (newest|nearest) version that can be)re"))) {
    for (auto& requirement : request.requirements) {
      if (requirement.package == m[1].str()) requirement.spec = spec("==" + m[2].str());
    }
    return m[1].str() + " " + m[2].str();
  }
  if (std::regex_search(
          hint, m,
          std::regex(
              R"re(^without `(\S+): "[^"]*"` under `requires:`, envkit would choose (\S+) (\S+)$)re"))) {
    std::erase_if(request.requirements, [&](const Requirement& requirement) {
      return requirement.origin == "requires" && requirement.package == m[1].str();
    });
    return m[2].str() + " " + m[3].str();
  }
  if (std::regex_search(
          hint, m,
          std::regex(
              R"re(^if the machines have a Python (\S+), declare it in envkit.yaml: `external: \{python: system\}`)re"))) {
    // A machine whose Python is in the range the hint names.
    for (const auto* version : {"3.6.9", "3.4.10"}) {
      if (!spec(m[1].str()).contains(v(version))) continue;
      external(request, "python", version);
      return std::string("python ") + version;
    }
    FAIL("no machine Python in the range of: " << hint);
  }
  if (std::regex_search(
          hint, m,
          std::regex(R"re(^GPUs with compute capability \S+ are supported up to cuda (\S+)$)re"))) {
    std::erase_if(request.requirements,
                  [](const Requirement& requirement) { return requirement.package == "cuda"; });
    requires_(request, "cuda", "==" + m[1].str());
    return "cuda " + m[1].str();
  }
  FAIL("a hint this test does not know how to apply: " << hint);
  return "";
}

void check_every_hint_holds(const Request& request) {
  const auto failed = failure(request);
  REQUIRE_FALSE(failed.hints.empty());
  for (const auto& hint : failed.hints) {
    CAPTURE(hint);
    auto changed = request;
    const auto expected = apply_hint(hint, changed);
    const auto s = solution(changed);
    if (!expected.empty()) {
      const auto space = expected.find(' ');
      const auto* choice = s.find(expected.substr(0, space));
      REQUIRE(choice != nullptr);
      CHECK(choice->version.original() == expected.substr(space + 1));
    }
  }
}

}  // namespace

TEST_CASE("solve: every hint holds when applied", "[solve]") {
  SECTION("tensorflow-gpu 1.6, driver 375.26: the suggested driver solves it") {
    auto request = framework("tensorflow-gpu", "==1.6.0");
    external(request, "python", "3.6.9");
    driver(request, "375.26");
    check_every_hint_holds(request);
  }
  SECTION("torch 2.4, driver 418.39: the suggested driver and torch both solve it") {
    auto request = framework("torch", "2.4.*");
    driver(request, "418.39");
    const auto failed = failure(request);
    CHECK(failed.hints.size() == 2);
    check_every_hint_holds(request);
  }
  SECTION("tensorflow-gpu 1.6 with Python <3.5: the suggested external Python solves it") {
    auto request = framework("tensorflow-gpu", "==1.6.0");
    requires_(request, "python", "<3.5");
    driver(request, "390.48");
    check_every_hint_holds(request);
  }
  SECTION("cuda 13 on Pascal: dropping the requirement, or the newest CUDA for sm_61") {
    auto request = framework("torch");
    requires_(request, "cuda", "13");
    driver(request, "580.65.06");
    gpu(request, "6.1");
    check_every_hint_holds(request);
  }
  SECTION("torch 2.4 with the machine's Python 3.13: the suggested torch solves it") {
    auto request = framework("torch", "2.4.*");
    external(request, "python", "3.13.1");
    driver(request, "550.54.15");
    check_every_hint_holds(request);
  }
}

TEST_CASE("solve: no hint is given where none would help", "[solve]") {
  // The driver is not what fails here: no driver hint, only the torch one.
  auto request = framework("torch", "2.4.*");
  external(request, "python", "3.13.1");
  driver(request, "550.54.15");
  const auto failed = failure(request);
  CHECK(failed.hints == std::vector<std::string>{
                            "use torch 2.14.1, the newest version that can be satisfied here"});
}

TEST_CASE("solve: a pinned release the database lacks gets the nearest one in the hint",
          "[solve]") {
  // torch 2.4.9 does not exist: 2.4.1 is nearer than the newest torch.
  auto request = framework("torch", "==2.4.9");
  driver(request, "550.54.15");
  CHECK(
      failure(request).hints ==
      std::vector<std::string>{"use torch 2.4.1, the nearest version that can be satisfied here"});
  // A major series that is not there at all: the newest release.
  auto later = framework("torch", "==9.0.1");
  driver(later, "550.54.15");
  CHECK(
      failure(later).hints ==
      std::vector<std::string>{"use torch 2.14.1, the newest version that can be satisfied here"});
  SECTION("the hint holds") {
    check_every_hint_holds(request);
  }
}

TEST_CASE("solve: the external-Python hint names the range and no invented version", "[solve]") {
  Request request;
  requires_(request, "python", ">=3.15");
  const auto failed = failure(request);
  CHECK_THAT(lines(failed.hints), Catch::Contains("a Python >=3.15, declare it") &&
                                      Catch::Contains("`external: {python: system}`") &&
                                      !Catch::Contains("3.6.9"));
}

// A sentence that starts with the manifest's name keeps its spelling: the file
// is envkit.yaml, not "Envkit.yaml".
TEST_CASE("solve: explanations never rename envkit.yaml", "[solve]") {
  Request request;
  requires_(request, "python", ">=3.15");
  const auto failed = failure(request);
  for (const auto& line : failed.explanation)
    CHECK_THAT(line, !Catch::StartsWith("Envkit.yaml"));
}

TEST_CASE("solve: explanations spell drivers as NVIDIA does (450.80.02)", "[solve]") {
  auto request = framework("torch", "2.4.*");
  driver(request, "418.39");
  const auto failed = failure(request);
  CHECK_THAT(lines(failed.explanation), !Catch::Contains(">=450.80.2 "));
}

}  // namespace envkit::solve

namespace envkit::solve {

// torch 2.1.2 (cu121) was tested, per its PyPI pins, with CUDA runtime 12.1.105
// (`tested: {cuda: "12.1.105"}`): the cuda_cudart of CUDA 12.1, not a CUDA release.
TEST_CASE("solve: a tested CUDA runtime pin (12.1.105) prefers its CUDA series (12.1.1)",
          "[solve]") {
  auto request = framework("torch", "2.1.*");
  driver(request, "535.104.05");
  const auto s = solution(request);
  CHECK(chosen(s, "torch") == "torch 2.1.2 (cu121)");
  CHECK(chosen(s, "cuda") == "cuda 12.1.1");
  CHECK_THAT(because(s, "cuda"),
             Catch::Contains("chosen: torch 2.1.2 (cu121) was tested with cuda 12.1.105"));
}

TEST_CASE(
    "solve: a framework whose wheels need a newer glibc than the machine's is refused in words",
    "[solve]") {
  // tensorflow 2.12.1's wheels are manylinux2014 (glibc 2.17): they install on an older
  // glibc and fail at import, so the solver refuses them as it refuses a CUDA on an old driver.
  auto request = framework("tensorflow", "==2.12.1");
  driver(request, "535.104.05");
  request.system.glibc = v("2.12");
  request.system.glibc_written = "2.12";
  const auto failed = failure(request);
  const auto text = lines(failed.explanation);
  CHECK_THAT(text, Catch::Contains("glibc >=2.17 (its manylinux wheels)"));
  CHECK_THAT(text, Catch::Contains("this machine's glibc is 2.12"));

  request.system.glibc = v("2.17");
  CHECK(chosen(solution(request), "tensorflow") == "tensorflow 2.12.1 (cuda11.8)");
  // manylinux2010 wheels (tensorflow-gpu 1.15) need only glibc 2.12.
  auto old = framework("tensorflow-gpu", "==1.15.*");
  old.system.glibc = v("2.12");
  old.system.glibc_written = "2.12";
  external(old, "python", "3.7.9");
  CHECK_THAT(chosen(solution(old), "tensorflow-gpu"), Catch::StartsWith("tensorflow-gpu 1.15"));
}

TEST_CASE("solve: a tested CUDA NVIDIA ships only as a runfile is chosen: envkit unpacks it",
          "[solve][runfile]") {
  // tensorflow 2.10 was tested with CUDA 11.2, which NVIDIA ships for Linux only as runfile
  // installers; envkit unpacks them (their recipes give the layout era), so the tested one wins.
  auto request = framework("tensorflow", "==2.10.*");
  driver(request, "470.57.02");
  const auto s = solution(request);
  CHECK(chosen(s, "cuda") == "cuda 11.2.1");
  CHECK_THAT(because(s, "cuda"),
             Catch::Contains("was tested with cuda 11.2") && !Catch::Contains("runfile"));
  auto old = framework("tensorflow-gpu", "==1.15.*");
  external(old, "python", "3.7.9");
  CHECK(chosen(solution(old), "cuda") == "cuda 10.0.130");
}

namespace {

// A copy of the source database in which CUDA `version`'s runfile is one envkit cannot
// unpack (`layout: none`, as a database written before runfile eras has it).
recipes::Database with_opaque_runfile(const test::TempDir& dir, std::string_view version) {
  std::filesystem::copy(database().dir(), dir.path(), std::filesystem::copy_options::recursive);
  auto copy = recipes::Database::open(dir.path());
  REQUIRE(copy);
  auto cuda = copy->load_full("cuda");
  REQUIRE(cuda);
  for (auto& v : cuda->versions) {
    if (v.version.original() != version) continue;
    for (auto& build : v.builds) {
      for (auto& artifact : build.artifacts)
        artifact.layout = recipes::Layout::none;
    }
  }
  REQUIRE(recipes::write_recipe(dir.path(), *cuda, recipes::ArtifactSet::offline));
  auto reopened = recipes::Database::open(dir.path());
  REQUIRE(reopened);
  return std::move(reopened).value();
}

}  // namespace

TEST_CASE("solve: a CUDA envkit can install beats a tested runfile it cannot unpack",
          "[solve][runfile]") {
  test::TempDir dir;
  const auto db = with_opaque_runfile(dir, "11.2.1");
  auto request = framework("tensorflow", "==2.10.*");
  driver(request, "470.57.02");
  auto outcome = solve(db, request);
  REQUIRE(outcome.ok());
  const auto* s = std::get_if<Solution>(&*outcome);
  REQUIRE(s != nullptr);
  CHECK(chosen(*s, "cuda") == "cuda 11.4.2");
  CHECK_THAT(because(*s, "cuda"),
             Catch::Contains("was tested with cuda 11.2, but cuda 11.2.1 has only a runfile "
                             "installer envkit cannot unpack here"));
}

TEST_CASE("solve: when no CUDA the framework allows can be installed, a newer release is named",
          "[solve][runfile]") {
  // tensorflow-gpu 1.15 allows only CUDA 10.0; with 10.0.130's runfile one envkit cannot
  // unpack, the lock still takes it, and the reason names a release that would install,
  // never a CUDA constraint the framework forbids.
  test::TempDir dir;
  const auto db = with_opaque_runfile(dir, "10.0.130");
  auto request = framework("tensorflow-gpu", "==1.15.*");
  external(request, "python", "3.7.9");
  auto outcome = solve(db, request);
  REQUIRE(outcome.ok());
  const auto* s = std::get_if<Solution>(&*outcome);
  REQUIRE(s != nullptr);
  CHECK(chosen(*s, "cuda") == "cuda 10.0.130");
  const auto reason = because(*s, "cuda");
  INFO(reason);
  CHECK_THAT(reason, Catch::Contains("envkit cannot install cuda 10.0.130 on linux-x86_64"));
  CHECK(std::regex_search(
      reason,
      std::regex(R"(: tensorflow-gpu 2\.[0-9.]+ \(cuda10\.[1-9]\) allows cuda 10\.[1-9][0-9.]*, )"
                 R"(which envkit )"
                 R"(can install here)")));
  CHECK_THAT(reason, !Catch::Contains("`cuda:"));
  // With the source database every CUDA it allows installs: nothing to say.
  CHECK_THAT(because(solution(request), "cuda"), !Catch::Contains("cannot install"));
}

TEST_CASE("solve: a platform without the framework's CUDA gets a framework release as hint",
          "[solve][runfile]") {
  // torch 1.8.0 has no linux-aarch64 build (its CUDA 10.2/11.1 exist there not at all).
  auto request = framework("torch", "==1.8.0");
  request.platform = Platform::linux_aarch64;
  driver(request, "550.54.15");
  const auto failed = failure(request);
  const auto hints = lines(failed.hints);
  CHECK_THAT(hints, Catch::Contains("use torch 2.") &&
                        Catch::Contains("the newest version that can be satisfied here"));
  CHECK_THAT(hints, !Catch::Contains("`cuda:"));
}

}  // namespace envkit::solve

namespace envkit::solve {
namespace {

// `text` with the items of its top-level `versions:` list in the opposite order.
std::string versions_reversed(const std::string& text) {
  const auto list = text.find("\nversions:\n") + 11;
  std::vector<std::string> items;
  for (std::size_t at = list; at < text.size();) {
    auto next = text.find("\n  - version:", at);
    next = next == std::string::npos ? text.size() : next + 1;
    items.push_back(text.substr(at, next - at));
    at = next;
  }
  std::string out = text.substr(0, list);
  for (auto it = items.rbegin(); it != items.rend(); ++it)
    out += *it;
  return out;
}

}  // namespace

TEST_CASE("solve: a facts file written newest first locks what the sorted one locks", "[solve]") {
  test::TempDir dir;
  std::filesystem::copy(database().dir(), dir.path(), std::filesystem::copy_options::recursive);
  for (const auto* name : {"cudnn.yaml", "torch.yaml", "cuda.yaml"}) {
    const auto path = dir.path() / name;
    const auto text = sys::read_file(path).value();
    const auto reversed = versions_reversed(text);
    REQUIRE(reversed.size() == text.size());
    REQUIRE(reversed != text);
    REQUIRE(sys::write_file_atomic(path, reversed));
  }
  const auto newest_first = recipes::Database::open(dir.path()).value();
  auto request = framework("torch");
  driver(request, "580.65.06");
  auto outcome = solve(newest_first, request);
  REQUIRE(outcome.ok());
  const auto* s = std::get_if<Solution>(&*outcome);
  REQUIRE(s != nullptr);
  const auto sorted = solution(request);
  for (const auto* package : {"torch", "cuda", "cudnn"})
    CHECK(chosen(*s, package) == chosen(sorted, package));
  CHECK(s->find("torch")->version.original() == "2.14.1");
}

}  // namespace envkit::solve
