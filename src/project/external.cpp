#include "envkit/project/external.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <system_error>
#include <variant>
#include <vector>

#include "envkit/core/text.hpp"
#include "envkit/sys/fs.hpp"
#include "envkit/sys/process.hpp"

namespace envkit::project {

namespace fs = std::filesystem;

namespace {

// Outputs are quoted on one line: newlines written as `\n`, long ones cut.
std::string shown(std::string_view output) {
  constexpr std::size_t kLongest = 300;
  output = text::trim(output);
  std::string out;
  for (char c : output.substr(0, kLongest)) {
    if (c == '\n') {
      out += "\\n";
    } else if (c != '\r') {
      out += c;
    }
  }
  if (output.size() > kLongest) out += "...";
  return text::quoted(out);
}

Error& hint_give_version(Error& error, std::string_view package) {
  const std::string_view example = package == "python" ? "3.6.9"
                                   : package == "cuda" ? "12.4.1"
                                                       : "1.2.3";
  return error.hint(
      fmt::format("give the version instead, e.g. `external: {{{}: \"{}\"}}`", package, example));
}

// The tool that detects a package's version, and how its output reads.
struct Detector {
  std::string_view program;  // looked up on PATH for `system`
  Result<specs::Version> (*parse)(std::string_view output);
};

std::optional<Detector> detector_for(std::string_view package) {
  if (package == "python") return Detector{"python3", parse_python_version};
  if (package == "cuda") return Detector{"nvcc", parse_nvcc_version};
  return std::nullopt;
}

// Runs `tool --version` and reads its output (stdout, then stderr: Python 2
// prints its version there).
Result<specs::Version> run_detector(std::string_view package, const Detector& detector,
                                    const fs::path& tool) {
  const std::string command = fmt::format("{} --version", tool.string());
  auto run = sys::run_process({tool.string(), "--version"});
  if (!run) {
    Error error = Error::failed(fmt::format("cannot run {}", text::quoted(command)));
    error.because(run.error().message());
    for (const auto& cause : run.error().causes())
      error.because(cause);
    return hint_give_version(error, package);
  }
  if (run->timed_out) {
    Error error = Error::failed(fmt::format("{} did not finish", text::quoted(command)));
    return hint_give_version(error, package);
  }
  if (run->exit_code != 0) {
    Error error = Error::failed(
        fmt::format("{} failed with exit code {}", text::quoted(command), run->exit_code));
    if (!text::trim(run->err).empty()) error.because(fmt::format("it printed {}", shown(run->err)));
    return hint_give_version(error, package);
  }
  const std::string output = run->out + run->err;
  auto version = detector.parse(output);
  if (!version) {
    Error error = Error::failed(
        fmt::format("envkit does not understand the output of {}", text::quoted(command)));
    error.because(fmt::format("it printed {}", shown(output)));
    return hint_give_version(error, package);
  }
  return version;
}

Error not_detectable(std::string_view package) {
  Error error =
      Error::input(fmt::format("envkit cannot detect the version of {}", text::quoted(package)));
  error.because("envkit detects python (`python3 --version`) and cuda (`nvcc --version`) only");
  hint_give_version(error, package);
  return error;
}

Result<ExternalVersion> detect_on_path(std::string_view package, const Detector& detector) {
  const auto tool = sys::find_on_path(detector.program);
  if (!tool) {
    Error error = Error::failed(fmt::format("{} is not on PATH", text::quoted(detector.program)));
    error.because(fmt::format("`external: {{{}: system}}` reads the version from `{} --version`",
                              package, detector.program));
    return hint_give_version(error, package);
  }
  auto version = run_detector(package, detector, *tool);
  if (!version) return version.error();
  return ExternalVersion{*std::move(version),
                         fmt::format("{} on PATH ({})", detector.program, tool->string())};
}

Error not_found(std::string_view package, const fs::path& path,
                const std::vector<fs::path>& looked_for) {
  std::vector<std::string> names;
  for (const auto& p : looked_for)
    names.push_back(text::quoted(p.string()));
  Error error = Error::failed(fmt::format("no {} at {}", package, text::quoted(path.string())));
  error.because(fmt::format("looked for {}", text::join(names, " and ")));
  return std::move(hint_give_version(error, package));
}

bool is_file(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

Result<ExternalVersion> read_version_json(std::string_view package, const fs::path& path) {
  auto text = sys::read_file(path);
  if (!text) return text.error();
  auto version = parse_cuda_version_json(*text, path.string());
  if (!version) {
    Error error = version.error();
    return hint_give_version(error, package);
  }
  return ExternalVersion{*std::move(version), path.string()};
}

Result<ExternalVersion> detect_at(std::string_view package, const Detector& detector,
                                  const fs::path& written, const fs::path& manifest_dir) {
  const fs::path path =
      (written.is_absolute() ? written : manifest_dir / written).lexically_normal();
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    Error error = Error::failed(fmt::format("{} does not exist", text::quoted(path.string())));
    error.because(fmt::format("`external:` gives it for {}", package));
    return hint_give_version(error, package);
  }
  fs::path tool = path;
  if (!is_file(path)) {
    tool = path / "bin" / std::string(detector.program);
    if (!is_file(tool)) {
      if (package == "cuda") {
        const fs::path version_json = path / "version.json";
        if (is_file(version_json)) return read_version_json(package, version_json);
        return not_found(package, path, {tool, version_json});
      }
      return not_found(package, path, {tool});
    }
  }
  auto version = run_detector(package, detector, tool);
  if (!version) return version.error();
  return ExternalVersion{*std::move(version), tool.string()};
}

}  // namespace

Result<specs::Version> parse_python_version(std::string_view output) {
  static const std::regex kPython(R"((?:^|\n)\s*Python\s+(\S+))");
  const std::string text(output);
  std::smatch match;
  if (std::regex_search(text, match, kPython)) {
    std::string written = match[1].str();
    // A build from a development branch says `3.13.0+`.
    if (written.ends_with('+')) written.pop_back();
    auto version = specs::Version::parse(written);
    if (version) return version;
  }
  return Error::failed(fmt::format("no Python version in {}", shown(output)));
}

Result<specs::Version> parse_nvcc_version(std::string_view output) {
  static const std::regex kRelease(R"(release\s+(\d+(?:\.\d+)*)\s*,\s*V(\d+(?:\.\d+)*))");
  const std::string text(output);
  std::smatch match;
  if (std::regex_search(text, match, kRelease)) {
    auto version = specs::Version::parse(match[2].str());
    if (version) return version;
  }
  return Error::failed(fmt::format("no `release N.N, VN.N.N` line in {}", shown(output)));
}

Result<specs::Version> parse_cuda_version_json(std::string_view text, std::string_view file) {
  const auto json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded()) {
    return Error::failed(fmt::format("{} is not valid JSON", file));
  }
  const auto cuda = json.find("cuda");
  if (json.is_object() && cuda != json.end() && cuda->is_object()) {
    const auto version = cuda->find("version");
    if (version != cuda->end() && version->is_string()) {
      auto parsed = specs::Version::parse(version->get<std::string>());
      if (parsed) return parsed;
      return Error::failed(fmt::format("{}: `cuda` `version` {} is not a version", file,
                                       text::quoted(version->get<std::string>())));
    }
  }
  return Error::failed(fmt::format("{} has no `cuda` `version`", file));
}

Result<ExternalVersion> resolve_external(std::string_view package,
                                         const manifest::ExternalSource& source,
                                         const fs::path& manifest_dir) {
  if (const auto* given = std::get_if<specs::Version>(&source)) {
    return ExternalVersion{*given, "given in envkit.yaml"};
  }
  const auto detector = detector_for(package);
  if (const auto* at = std::get_if<manifest::ExternalPath>(&source)) {
    if (!detector) return not_detectable(package);
    return detect_at(package, *detector, at->path, manifest_dir);
  }
  if (!detector) return not_detectable(package);
  return detect_on_path(package, *detector);
}

}  // namespace envkit::project
