// The Python is chosen with the closure (docs/python.md, "Which Python"), and the index
// options of requirement files this machine does not reach are left out of what uv is given
// ("Indexes in requirement files"): the lock pipeline called directly with a fake resolver
// that answers as uv would for each Python, and a fake answer about hosts.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/locking/lock_pipeline.hpp"
#include "envkit/locking/requirement_files.hpp"
#include "envkit/python/uv.hpp"
#include "envkit/sys/fs.hpp"
#include "support/source_database.hpp"
#include "support/temp_dir.hpp"

namespace envkit::locking::python_choice_test {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

gpu::ProbeSources driver_580() {
  return {.variable = [](const env::Variable& v) -> std::optional<std::string> {
            if (std::string_view(v.name) == "ENVKIT_OVERRIDE_DRIVER") return "580.65.06";
            return std::nullopt;
          },
          .read_file = [](const fs::path&) { return std::optional<std::string>(); },
          .query_nvidia_smi = [] { return std::optional<sys::ProcessOutput>(); },
          .query_libcuda = {}};
}

// torch 2.13.0 allows Python 3.10 to 3.14: the solver's first choice is 3.14.
constexpr std::string_view kManifest =
    "framework: torch ==2.13.0\nindexes: [https://pypi.org/simple]\n"
    "python-requirements: requirements.txt\n";

LockInputs project_inputs(const test::TempDir& project, std::string_view requirements) {
  project.write("requirements.txt", requirements);
  project.write("envkit.yaml", kManifest);
  auto inputs = gather_lock_inputs(project.path(), {}, driver_580());
  if (!inputs) FAIL(inputs.error().to_string());
  return *std::move(inputs);
}

python::ResolvedWheel fake_wheel(std::string name, std::string version, std::string file) {
  return {.name = std::move(name),
          .version = std::move(version),
          .url = "https://files.example/" + file,
          .sha256 = core::sha256_hex(file)};
}

std::string minor(const python::ResolveTarget& target) {
  return fmt::format("{}.{}", target.python.major(), target.python.minor());
}

// uv's refusal, as resolve_with_uv() words it.
Error uv_refusal(std::vector<std::string> uv_lines, const python::ResolveTarget& target) {
  Error error = Error::failed(std::string(python::kUnresolvable));
  error.because("uv: No solution found when resolving dependencies");
  for (auto& line : uv_lines)
    error.because("uv: " + line);
  return error.because("envkit resolved for " + target.description());
}

// Answers as uv would from an index where `refuse(target)` says why the whole closure has no
// solution (empty: it resolves); the framework's pin alone (--no-deps) always resolves.
struct PythonResolver {
  std::function<std::vector<std::string>(const python::ResolveTarget&)> refuse;
  std::vector<std::string> asked;  // "3.14" per full resolution, in order
  std::vector<python::ResolveRequest> requests;

  ResolverFactory factory() {
    return [this]() -> Result<ClosureResolver> {
      return ClosureResolver([this](
                                 const python::ResolveRequest& request,
                                 const python::ResolveTarget& target) -> Result<python::Closure> {
        const auto tag = fmt::format("cp{}{}", target.python.major(), target.python.minor());
        const python::Closure torch_only{.wheels = {fake_wheel("torch", "2.13.0",
                                                               "torch-2.13.0-" + tag + "-" + tag +
                                                                   "-manylinux_2_28_x86_64.whl")},
                                         .resolver = "fake uv"};
        if (request.no_deps) return torch_only;
        asked.push_back(minor(target));
        requests.push_back(request);
        if (auto why = refuse(target); !why.empty()) return uv_refusal(std::move(why), target);
        auto closure = torch_only;
        closure.wheels.push_back(
            fake_wheel("torchdata", "0.9.0",
                       "torchdata-0.9.0-" + tag + "-" + tag + "-manylinux_2_28_x86_64.whl"));
        return closure;
      });
    };
  }
};

// What uv says of torchdata 0.9.0 on CPython 3.13 and newer: its wheels end at cp312.
std::vector<std::string> torchdata_up_to_cp312(const python::ResolveTarget& target) {
  if (target.python.minor() <= 12) return {};
  return {fmt::format(
      "Because torchdata==0.9.0 has no wheels with a matching Python ABI tag (e.g., `cp3{}`) "
      "and you require torchdata==0.9.0, we can conclude that your requirements are "
      "unsatisfiable.",
      target.python.minor())};
}

const solve::Choice& python_choice(const LockAttempt& attempt) {
  REQUIRE(attempt.solved);
  const auto* choice = attempt.solved->solutions.at(specs::Platform::linux_x86_64).find("python");
  REQUIRE(choice != nullptr);
  return *choice;
}

bool has_line(const std::vector<std::string>& lines, const std::string& wanted) {
  return std::find(lines.begin(), lines.end(), wanted) != lines.end();
}

}  // namespace

TEST_CASE("a Python the closure has no wheel for is ruled out, and the lock takes the next",
          "[locking][python-choice]") {
  test::TempDir project;
  const auto inputs = project_inputs(project, "numpy\n# data pipelines\ntorchdata==0.9.0\n");
  PythonResolver resolver{.refuse = torchdata_up_to_cp312};
  auto attempt = solve_lock(test::source_database(), inputs, nullptr, resolver.factory());
  REQUIRE(attempt);
  INFO((attempt->failure ? attempt->failure->second.summary : ""));
  REQUIRE(attempt->lockfile);
  // Newest first, one resolution per Python: 3.14 and 3.13 fail, 3.12 resolves.
  CHECK(resolver.asked == std::vector<std::string>{"3.14", "3.13", "3.12"});
  const auto& locked = attempt->lockfile->platforms.front();
  const auto python = std::find_if(locked.packages.begin(), locked.packages.end(),
                                   [](const auto& p) { return p.name == "python"; });
  REQUIRE(python != locked.packages.end());
  CHECK(python->version.original().starts_with("3.12."));
  REQUIRE(locked.python);
  CHECK(locked.python->python == python->version.original());

  // `envkit why python` says which Pythons were ruled out, and by which line.
  const auto& because = python_choice(*attempt).because;
  INFO(text::join(because, "\n"));
  CHECK(has_line(because,
                 "python 3.14, 3.13 ruled out: requirements.txt:3 `torchdata==0.9.0` has no wheel "
                 "for CPython 3.14 / 3.13"));
  CHECK(has_line(because, "`torchdata==0.9.0` in requirements.txt:3 requires python <3.13"));
  // `envkit lock` says so in a note.
  CHECK(has_line(attempt->notes,
                 fmt::format("python 3.14, 3.13 ruled out on linux-x86_64: requirements.txt:3 "
                             "`torchdata==0.9.0` has no wheel for CPython 3.14 / 3.13; the lock "
                             "takes python {}",
                             python->version.original())));

  // Locking again asks the newer Pythons again, and lends the previous lock's closure for the
  // Python it comes back to: the same bytes, no new resolution of what resolved.
  PythonResolver again{.refuse = torchdata_up_to_cp312};
  auto second = solve_lock(test::source_database(), inputs, &*attempt->lockfile, again.factory());
  REQUIRE(second);
  REQUIRE(second->lockfile);
  CHECK(again.asked == std::vector<std::string>{"3.14", "3.13"});
  CHECK(lock::write(*second->lockfile) == lock::write(*attempt->lockfile));
}

TEST_CASE("a pin conflict that only newer Pythons' markers cause rules those Pythons out",
          "[locking][python-choice]") {
  // jax 0.4.26 requires numpy>=1.26.0 from Python 3.12 on: with numpy==1.24.3 it resolves
  // on 3.11 alone.
  test::TempDir project;
  const auto inputs = project_inputs(project, "jax==0.4.26\nnumpy==1.24.3\n");
  PythonResolver resolver{.refuse = [](const python::ResolveTarget& target) {
    if (target.python.minor() <= 11) return std::vector<std::string>{};
    return std::vector<std::string>{
        "Because jax==0.4.26 depends on numpy>=1.26.0 and you require jax==0.4.26, we can "
        "conclude that you require numpy>=1.26.0. And because you require numpy==1.24.3, we can "
        "conclude that your requirements are unsatisfiable."};
  }};
  auto attempt = solve_lock(test::source_database(), inputs, nullptr, resolver.factory());
  REQUIRE(attempt);
  REQUIRE(attempt->lockfile);
  CHECK(resolver.asked == std::vector<std::string>{"3.14", "3.13", "3.12", "3.11"});
  CHECK(python_choice(*attempt).version.original().starts_with("3.11."));
  const auto& because = python_choice(*attempt).because;
  INFO(text::join(because, "\n"));
  CHECK(std::any_of(because.begin(), because.end(), [](const std::string& line) {
    return line.starts_with(
               "python 3.14, 3.13, 3.12 ruled out: requirements.txt:1 `jax==0.4.26` and "
               "requirements.txt:2 `numpy==1.24.3` do not resolve together for CPython 3.14 / "
               "3.13 / 3.12 (uv: Because jax==0.4.26 depends on numpy>=1.26.0") &&
           line.find("you require numpy==1.24.3") != std::string::npos;
  }));
}

TEST_CASE("when no Python resolves the closure, the error names the requirement and the Pythons",
          "[locking][python-choice]") {
  test::TempDir project;
  project.write("envkit.lock", "previous lock\n");
  const auto inputs = project_inputs(project, "numpy\n\ntorchdata==0.9.0\n");
  PythonResolver resolver{.refuse = [](const python::ResolveTarget& target) {
    return std::vector<std::string>{
        fmt::format("Because torchdata==0.9.0 has no wheels with a matching Python ABI tag "
                    "(e.g., `cp3{}`) and you require torchdata==0.9.0, we can conclude that your "
                    "requirements are unsatisfiable.",
                    target.python.minor())};
  }};
  auto attempt = relock(test::source_database(), inputs, nullptr, resolver.factory(),
                        project.path() / "envkit.lock");
  REQUIRE_FALSE(attempt);
  const auto text = attempt.error().to_string();
  INFO(text);
  // torch 2.13.0 allows 3.10 at the oldest: five Pythons, each asked once.
  CHECK(resolver.asked == std::vector<std::string>{"3.14", "3.13", "3.12", "3.11", "3.10"});
  CHECK_THAT(attempt.error().message(),
             Contains("resolve for none of the Pythons envkit tried on linux-x86_64") &&
                 Contains("CPython 3.14.") && Contains(", 3.10."));
  CHECK_THAT(text, Contains("uv finds no solution for requirements.txt:3 `torchdata==0.9.0`"));
  CHECK_THAT(text, Contains("no Python older than 3.10 is allowed on linux-x86_64"));
  CHECK_THAT(text, Contains("has no wheels with a matching Python ABI tag (e.g., `cp314`)"));
  // A failed lock leaves envkit.lock as it was.
  CHECK(sys::read_file(project.path() / "envkit.lock").value() == "previous lock\n");
}

TEST_CASE("a refusal that holds for every Python is not tried again with older ones",
          "[locking][python-choice]") {
  test::TempDir project;
  const auto inputs = project_inputs(project, "torchdata==0.9.0\nno-such-package\n");
  PythonResolver resolver{.refuse = [](const python::ResolveTarget&) {
    return std::vector<std::string>{
        "Because no-such-package was not found in the package registry and you require "
        "no-such-package, we can conclude that your requirements are unsatisfiable."};
  }};
  auto attempt = solve_lock(test::source_database(), inputs, nullptr, resolver.factory());
  REQUIRE_FALSE(attempt);
  CHECK(resolver.asked == std::vector<std::string>{"3.14"});
  CHECK(attempt.error().message() == python::kUnresolvable);
  CHECK_THAT(attempt.error().to_string(),
             Contains("uv finds no solution for requirements.txt:2 `no-such-package`, whatever "
                      "the Python"));
}

TEST_CASE("index options of requirement files are found with their lines, through -r and -c",
          "[locking][requirement-indexes]") {
  test::TempDir project;
  const auto top = project.write("requirements.txt",
                                 "--find-links https://storage.example/releases.html\n"
                                 "-r sub/more.txt  # the rest\n"
                                 "-c constraints.txt\n"
                                 "jax==0.4.26\n");
  project.write("sub/more.txt",
                "--extra-index-url=https://extra.invalid/simple\n"
                "-f ../wheels\n"
                "-i \\\n  https://mirror.example/simple\n"
                "numpy\n");
  project.write("constraints.txt", "-fhttps://links.example/page.html\nnumpy<2\n");
  const auto lines = index_lines_of_files(project.path(), {top});
  std::vector<std::string> found;
  for (const auto& line : lines)
    found.push_back(fmt::format("{} {} {}", line.location(), line.option, line.url));
  // A local folder (`-f ../wheels`) needs no network and is not one of them.
  CHECK(found == std::vector<std::string>{
                     "requirements.txt:1 --find-links https://storage.example/releases.html",
                     "sub/more.txt:1 --extra-index-url https://extra.invalid/simple",
                     "sub/more.txt:3 --index-url https://mirror.example/simple",
                     "constraints.txt:1 --find-links https://links.example/page.html"});
}

TEST_CASE("a requirements file without an unreachable index keeps every other line and path",
          "[locking][requirement-indexes]") {
  test::TempDir project;
  test::TempDir scratch;
  const auto top = project.write("requirements.txt",
                                 "-r sub/more.txt  # the rest\n"
                                 "-c constraints.txt\n"
                                 "jax==0.4.26\n");
  const auto more = project.write("sub/more.txt",
                                  "--extra-index-url=https://extra.invalid/simple\n"
                                  "-f ../wheels\n"
                                  "numpy \\\n  >=1.24\n"
                                  "--extra-index-url https://kept.example/simple\n");
  const auto untouched = project.write("other.txt", "six\n");
  const auto lines = index_lines_of_files(project.path(), {top, untouched});
  std::vector<IndexLine> dropped;
  std::copy_if(lines.begin(), lines.end(), std::back_inserter(dropped), [](const IndexLine& line) {
    return line.url.find(".invalid") != std::string::npos;
  });
  REQUIRE(dropped.size() == 1);
  auto paths = requirement_files_without({top, untouched}, dropped, scratch.path());
  REQUIRE(paths);
  REQUIRE(paths->size() == 2);
  CHECK((*paths)[1] == untouched);  // nothing of it is left out: uv reads it as it is
  const auto& top_copy = (*paths)[0];
  CHECK(top_copy.parent_path() == scratch.path());
  const auto top_text = sys::read_file(top_copy).value();
  const auto copy_lines = text::split(top_text, '\n');
  REQUIRE(copy_lines.size() == 4);
  // The included file is named by its own copy, absolute; the constraint file by its path.
  const std::string included(text::split(copy_lines[0], ' ')[1]);
  CHECK(fs::path(included).parent_path() == scratch.path());
  CHECK(copy_lines[0].ends_with("# the rest"));
  CHECK(copy_lines[1] == "-c " + (project.path() / "constraints.txt").lexically_normal().string());
  CHECK(copy_lines[2] == "jax==0.4.26");
  // Line numbers stay: the left-out line is blank, the continued requirement is as written.
  CHECK(sys::read_file(included).value() ==
        "\n-f " + (project.path() / "wheels").lexically_normal().string() +
            "\nnumpy \\\n  >=1.24\n--extra-index-url https://kept.example/simple\n");
  // The project's own files are never changed.
  CHECK(sys::read_file(more).value().starts_with("--extra-index-url=https://extra.invalid"));
}

TEST_CASE("an unreachable --find-links is left out with a warning when the closure needs it not",
          "[locking][requirement-indexes]") {
  test::TempDir project;
  auto inputs = project_inputs(
      project, "--find-links https://tpu.invalid/libtpu_releases.html\ntorchdata==0.9.0\n");
  std::vector<std::string> asked_urls;
  inputs.reach = [&asked_urls](const std::vector<std::string>& urls) {
    asked_urls.insert(asked_urls.end(), urls.begin(), urls.end());
    std::map<std::string, net::HostReachability> answers;
    answers["tpu.invalid"] = {.host = "tpu.invalid",
                              .reachable = false,
                              .reason = "Could not resolve host: tpu.invalid",
                              .cached = false};
    return answers;
  };
  PythonResolver resolver{
      .refuse = [](const python::ResolveTarget&) { return std::vector<std::string>{}; }};
  auto attempt = solve_lock(test::source_database(), inputs, nullptr, resolver.factory());
  REQUIRE(attempt);
  REQUIRE(attempt->lockfile);
  // Asked once, for all hosts at once.
  CHECK(asked_urls == std::vector<std::string>{"https://tpu.invalid/libtpu_releases.html"});
  CHECK(has_line(attempt->warnings,
                 "requirements.txt:1 `--find-links https://tpu.invalid/libtpu_releases.html` is "
                 "not reachable from this machine (Could not resolve host: tpu.invalid): left "
                 "out; the Python requirements resolve without it"));
  // uv read a copy without the line, never the project's file.
  REQUIRE_FALSE(resolver.requests.empty());
  const auto& files = resolver.requests.front().requirement_files;
  REQUIRE(files.size() == 1);
  CHECK(files.front() != project.path() / "requirements.txt");
  CHECK(files.front().filename().string().ends_with("requirements.txt"));
  // The closure's inputs are the project's files as written, not this machine's network:
  // the same lock is current wherever the host answers.
  auto reachable = inputs;
  reachable.reach = {};
  auto staleness = lock_staleness(test::source_database(), reachable, *attempt->lockfile);
  REQUIRE(staleness);
  CHECK_FALSE(staleness->stale());
}

TEST_CASE("an unreachable --find-links the closure needs is an error naming it and the requirement",
          "[locking][requirement-indexes]") {
  test::TempDir project;
  auto inputs =
      project_inputs(project, "-f https://tpu.invalid/libtpu_releases.html\njax[tpu]==0.4.26\n");
  inputs.reach = [](const std::vector<std::string>&) {
    std::map<std::string, net::HostReachability> answers;
    answers["tpu.invalid"] = {.host = "tpu.invalid",
                              .reachable = false,
                              .reason = "Could not resolve host: tpu.invalid",
                              .cached = false};
    return answers;
  };
  PythonResolver resolver{.refuse = [](const python::ResolveTarget&) {
    return std::vector<std::string>{
        "Because there is no version of libtpu-nightly==0.1.dev20240403 and jax[tpu]==0.4.26 "
        "depends on libtpu-nightly==0.1.dev20240403, we can conclude that jax[tpu]==0.4.26 "
        "cannot be used. And because you require jax[tpu]==0.4.26, we can conclude that your "
        "requirements are unsatisfiable."};
  }};
  auto attempt = solve_lock(test::source_database(), inputs, nullptr, resolver.factory());
  REQUIRE_FALSE(attempt);
  const auto text = attempt.error().to_string();
  INFO(text);
  CHECK(attempt.error().message() ==
        "the Python requirements do not resolve without "
        "https://tpu.invalid/libtpu_releases.html, which this machine cannot reach");
  CHECK_THAT(text, Contains("requirements.txt:1 `--find-links "
                            "https://tpu.invalid/libtpu_releases.html`: Could not resolve host"));
  CHECK_THAT(text, Contains("without it, uv finds no solution for requirements.txt:2 "
                            "`jax[tpu]==0.4.26`"));
  // Not a Python's fault: no older one is tried.
  CHECK(resolver.asked == std::vector<std::string>{"3.14"});
}

}  // namespace envkit::locking::python_choice_test
