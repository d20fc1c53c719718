// Resolving with pip: `pip install --dry-run --report`.
#include "envkit/python/pip.hpp"

#include <fmt/format.h>

#include "envkit/core/text.hpp"
#include "envkit/sys/fs.hpp"
#include "envkit/sys/process.hpp"
#include "tool_output.hpp"

namespace envkit::python {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kReportSource = "pip install --report";

std::string program_of(const fs::path& path) {
  // A bare name would be looked up on PATH by run_process; the interpreter is a file.
  return path.has_parent_path() ? path.string() : (fs::path(".") / path).string();
}

std::string pip_description(const Interpreter& python) {
  return fmt::format("pip {} ({})", python.pip ? python.pip->original() : std::string("?"),
                     python.description());
}

std::string duration(std::chrono::seconds timeout) {
  const auto seconds = timeout.count();
  if (seconds % 60 == 0) return fmt::format("{} min", seconds / 60);
  return fmt::format("{} s", seconds);
}

// argv as a user could run it to see pip's whole answer: the report to /dev/null.
std::string command_to_rerun(std::vector<std::string> argv, const fs::path& report) {
  std::vector<std::string> shown;
  for (auto& arg : argv) {
    shown.push_back(arg == report.string() ? std::string("/dev/null") : std::move(arg));
  }
  return detail::quoted_command(shown);
}

bool has(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// The lines pip indents under "The conflict is caused by:" (it prints them on stdout,
// as information), joined; "" when there are none.
std::string conflict_explanation(std::string_view output) {
  std::vector<std::string> lines;
  bool in_conflict = false;
  for (auto raw : text::split(output, '\n')) {
    const std::string_view line = text::trim(raw);
    if (line == "The conflict is caused by:") {
      in_conflict = true;
      lines.clear();
    } else if (in_conflict) {
      if (line.empty() || !(raw.starts_with(' ') || raw.starts_with('\t'))) break;
      lines.emplace_back(line);
    }
  }
  return text::join(lines, "; ");
}

// pip refused: its `ERROR:` lines and its explanation of a conflict, as causes.
Error pip_refused(const Interpreter& python, const sys::ProcessOutput& run,
                  const std::string& rerun) {
  Error error = Error::failed("pip could not resolve the Python requirements");
  std::vector<std::string> errors;
  for (auto raw : text::split(run.err, '\n')) {
    const std::string_view line = text::trim(raw);
    if (line.starts_with("ERROR:")) errors.emplace_back(text::trim(line.substr(6)));
  }
  const std::string conflict = conflict_explanation(run.out + "\n" + run.err);
  for (std::size_t i = 0; i < errors.size(); ++i) {
    error.because(detail::redact_urls(fmt::format("pip: {}", errors[i])));
    // After "Cannot install a and b because ... conflicting dependencies.": why.
    if (i == 0 && !conflict.empty()) {
      error.because(
          detail::redact_urls(fmt::format("pip: the conflict is caused by: {}", conflict)));
    }
  }
  if (errors.empty()) {
    const std::string_view output = text::trim(run.err).empty() ? run.out : run.err;
    error.because(fmt::format("pip exited with code {} and printed {}", run.exit_code,
                              detail::quoted_tail(output, 5)));
  }

  if (has(run.err, "No matching distribution found") ||
      has(run.err, "Could not find a version that satisfies")) {
    error.hint(fmt::format(
        "check the requirement's name and version, and that the index has a wheel of it for "
        "{} on {}: envkit takes wheels only (--only-binary=:all:)",
        python.description(), python.platform_tag.empty() ? "this platform" : python.platform_tag));
  }
  if (has(run.err, "ResolutionImpossible") || has(run.err, "conflicting dependencies")) {
    error.hint("loosen or change the requirements pip names as conflicting");
  }
  if (has(run.err, "No module named pip")) {
    error.hint(fmt::format("install pip: `{} -m ensurepip --upgrade`", python.path.string()));
  }
  error.hint(fmt::format("to see pip's whole answer, run {}", rerun));
  return error;
}

// A parse error of pip's own report: the same text, as a failure rather than an input error.
Error report_unreadable(const Error& parsed) {
  Error error = Error::failed(parsed.message());
  for (const auto& cause : parsed.causes())
    error.because(cause);
  for (const auto& hint : parsed.hints())
    error.hint(hint);
  return error;
}

}  // namespace

Result<Closure> resolve_with_pip(const Interpreter& python, const ResolveRequest& request) {
  for (const auto& requirement : request.requirements) {
    const auto line = text::trim(requirement);
    if (line.empty() || line.starts_with('-')) {
      return Error::input(fmt::format("{} is not a requirement", text::quoted(requirement)))
          .because(
              "a requirement is one PEP 508 line, such as `numpy>=1.24`; pip options are "
              "not taken here");
    }
  }
  if (request.requirements.empty() && request.requirement_files.empty())
    return Closure{.wheels = {}, .resolver = pip_description(python)};

  auto scratch = detail::ScratchDir::make("envkit-pip");
  if (!scratch) return std::move(scratch).error();
  const fs::path report = scratch->path() / "report.json";
  std::vector<std::string> argv = {program_of(python.path),
                                   "-I",
                                   "-m",
                                   "pip",
                                   "install",
                                   "--dry-run",
                                   "--ignore-installed",
                                   "--report",
                                   report.string(),
                                   "--only-binary=:all:",
                                   "--disable-pip-version-check",
                                   "--no-input",
                                   "--no-color"};
  for (std::size_t i = 0; i < request.index_urls.size(); ++i) {
    argv.emplace_back(i == 0 ? "--index-url" : "--extra-index-url");
    argv.push_back(request.index_urls[i]);
  }
  for (const auto& file : request.requirement_files) {
    argv.emplace_back("-r");
    argv.push_back(file.string());
  }
  for (const auto& requirement : request.requirements)
    argv.emplace_back(text::trim(requirement));

  sys::ProcessOptions options;
  options.cwd = request.cwd;
  options.timeout = request.timeout;
  auto run = sys::run_process(argv, options);
  const std::string rerun = command_to_rerun(argv, report);
  if (!run) {
    Error error =
        Error::failed(fmt::format("cannot run pip of {}", text::quoted(python.path.string())));
    error.because(run.error().message());
    for (const auto& cause : run.error().causes())
      error.because(cause);
    return error;
  }
  if (run->timed_out) {
    return Error::failed(
               fmt::format("pip did not finish resolving within {}", duration(request.timeout)))
        .because(fmt::format("envkit ran {}", rerun))
        .hint(
            "a slow or unreachable index, or a long backtracking search: pin more versions, or "
            "check the index with the command above");
  }
  if (run->exit_code != 0) return pip_refused(python, *run, rerun);

  auto text = sys::read_file(report);
  if (!text) {
    return Error::failed("pip finished but wrote no installation report")
        .because(text.error().message())
        .hint(fmt::format("envkit ran {}", rerun));
  }
  auto closure = parse_pip_report(*text, kReportSource);
  if (!closure) return report_unreadable(closure.error());
  if (closure->resolver.find('(') == std::string::npos) {
    closure->resolver += fmt::format(" ({})", python.description());
  }
  return closure;
}

}  // namespace envkit::python
