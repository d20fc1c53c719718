#include "envkit/python/interpreter.hpp"

#include <fmt/format.h>

#include <array>
#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>

#include "envkit/core/text.hpp"
#include "envkit/sys/process.hpp"
#include "tool_output.hpp"

namespace envkit::python {

namespace fs = std::filesystem;

namespace {

constexpr std::chrono::seconds kProbeTimeout{30};

// Prints what inspect() reads, on one line. Kept to what Python 3.3+ has; `import pip`
// only loads pip/__init__.py.
constexpr std::string_view kProbe = R"py(import json, sys, sysconfig
v = sys.version_info
level = {"alpha": "a", "beta": "b", "candidate": "rc"}.get(v.releaselevel, "")
version = "%d.%d.%d" % (v.major, v.minor, v.micro) + (level + str(v.serial) if level else "")
try:
    import pip
    pip_version = pip.__version__
except Exception:
    pip_version = None
print(json.dumps({"version": version, "implementation": sys.implementation.name,
                  "platform": sysconfig.get_platform(), "pip": pip_version}))
)py";

// Names looked up on PATH after the preferred interpreters, in order.
constexpr std::array<std::string_view, 9> kPathNames = {"python3",    "python",     "python3.14",
                                                        "python3.13", "python3.12", "python3.11",
                                                        "python3.10", "python3.9",  "python3.8"};

std::string quoted_path(const fs::path& path) {
  return text::quoted(path.string());
}

// A spec as the user wrote it, in backticks.
std::string quoted_spec(const specs::VersionSpec& spec) {
  return text::quoted(spec.original().empty() ? spec.to_string() : spec.original());
}

// The last line of `out` that starts with `{`: the probe's answer, after anything a
// site hook may have printed first.
std::string_view answer_line(std::string_view out) {
  std::string_view found;
  for (auto line : text::split(out, '\n')) {
    line = text::trim(line);
    if (line.starts_with('{')) found = line;
  }
  return found;
}

Result<Interpreter> read_answer(const fs::path& path, std::string_view out) {
  auto unreadable = [&](std::string why) {
    return Error::failed(fmt::format("{} is not a Python envkit can use", quoted_path(path)))
        .because(std::move(why));
  };
  const std::string_view line = answer_line(out);
  if (line.empty()) {
    return unreadable(
        fmt::format("it printed {} instead of the probe's JSON answer", detail::quoted_tail(out)));
  }
  const auto json = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || !json.contains("version") || !json["version"].is_string()) {
    return unreadable(
        fmt::format("it printed {} instead of the probe's JSON answer", detail::quoted_tail(line)));
  }
  auto string_field = [&](const char* key) {
    const auto it = json.find(key);
    return it != json.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto version = specs::Version::parse(json["version"].get<std::string>());
  if (!version) {
    return unreadable(fmt::format("its version {} is not a PEP 440 version",
                                  text::quoted(json["version"].get<std::string>())));
  }
  std::optional<specs::Version> pip;
  if (const auto it = json.find("pip"); it != json.end() && it->is_string()) {
    auto parsed = specs::Version::parse(it->get<std::string>());
    if (!parsed) {
      return unreadable(fmt::format("its pip version {} is not a PEP 440 version",
                                    text::quoted(it->get<std::string>())));
    }
    pip = *std::move(parsed);
  }
  return Interpreter{.path = path,
                     .version = *std::move(version),
                     .pip = std::move(pip),
                     .implementation = string_field("implementation"),
                     .platform_tag = string_field("platform")};
}

// One line of the refusal list: "`/x/python3` did not start: it exited with code 1 ...".
std::string refusal_line(const Error& error) {
  std::string line = error.message();
  for (const auto& cause : error.causes())
    line += ": " + cause;
  return line;
}

// Why `python` cannot resolve, or nullopt when it can.
std::optional<std::string> refusal(const Interpreter& python,
                                   const std::optional<specs::VersionSpec>& python_spec) {
  const std::string who =
      fmt::format("{}: Python {}", quoted_path(python.path), python.version.original());
  if (python.version < minimum_python())
    return fmt::format("{} is older than {}", who, minimum_python().original());
  if (python_spec && !python_spec->contains(python.version)) {
    return fmt::format("{} is not in {} (the Python the environment asks for)", who,
                       quoted_spec(*python_spec));
  }
  if (!python.pip) return fmt::format("{} has no pip", who);
  if (*python.pip < minimum_pip()) {
    return fmt::format("{} has pip {}, older than {} (pip writes `--report` since {})", who,
                       python.pip->original(), minimum_pip().original(), minimum_pip().original());
  }
  return std::nullopt;
}

// The file behind `path`, so one interpreter reached by two names is tried once.
fs::path identity(const fs::path& path) {
  std::error_code ec;
  auto canonical = fs::canonical(path, ec);
  return ec ? path.lexically_normal() : canonical;
}

}  // namespace

std::string Interpreter::description() const {
  std::string name = implementation;
  if (implementation == "cpython") {
    name = "CPython";
  } else if (implementation == "pypy") {
    name = "PyPy";
  } else if (implementation == "graalpy") {
    name = "GraalPy";
  } else if (implementation.empty()) {
    name = "Python";
  }
  return fmt::format("{} {}", name, version.original());
}

specs::Version minimum_python() {
  return specs::Version::from_release({3, 8});
}

specs::Version minimum_pip() {
  return specs::Version::from_release({22, 2});
}

Result<Interpreter> inspect(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    return Error::failed(fmt::format("{} does not exist", quoted_path(path)));
  sys::ProcessOptions options;
  options.timeout = kProbeTimeout;
  // run_process looks a bare name (`python3`) up on PATH: this is a file, name it as one.
  const std::string program =
      path.has_parent_path() ? path.string() : (fs::path(".") / path).string();
  auto run = sys::run_process({program, "-I", "-c", std::string(kProbe)}, options);
  if (!run) {
    Error error = Error::failed(fmt::format("{} did not start", quoted_path(path)));
    std::string why = run.error().message();
    for (const auto& cause : run.error().causes())
      why += ": " + cause;
    return std::move(error.because(why));
  }
  if (run->timed_out) {
    return Error::failed(
        fmt::format("{} did not answer within {} s", quoted_path(path), kProbeTimeout.count()));
  }
  if (run->exit_code != 0) {
    const std::string_view output = text::trim(run->err).empty() ? run->out : run->err;
    return Error::failed(fmt::format("{} did not start", quoted_path(path)))
        .because(fmt::format("it exited with code {} and printed {}", run->exit_code,
                             detail::quoted_tail(output)));
  }
  return read_answer(path, run->out);
}

Result<Interpreter> find_resolver(const std::vector<fs::path>& preferred,
                                  const std::optional<specs::VersionSpec>& python_spec) {
  std::vector<fs::path> candidates = preferred;
  std::vector<std::string> not_on_path;
  for (const auto name : kPathNames) {
    if (auto found = sys::find_on_path(name)) {
      candidates.push_back(*std::move(found));
    } else {
      not_on_path.push_back(text::quoted(name));
    }
  }

  std::vector<std::string> refusals;
  std::set<fs::path> tried;
  std::optional<fs::path> without_pip, old_pip;
  bool outside_spec = false;
  for (const auto& path : candidates) {
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      refusals.push_back(fmt::format("{} does not exist", quoted_path(path)));
      continue;
    }
    if (!tried.insert(identity(path)).second) continue;
    auto python = inspect(path);
    if (!python) {
      refusals.push_back(refusal_line(python.error()));
      continue;
    }
    auto why = refusal(*python, python_spec);
    if (!why) return python;
    refusals.push_back(*std::move(why));
    if (python->version < minimum_python()) continue;
    if (python_spec && !python_spec->contains(python->version)) {
      outside_spec = true;
    } else if (!python->pip) {
      if (!without_pip) without_pip = path;
    } else if (!old_pip) {
      old_pip = path;
    }
  }

  Error error = Error::failed("no Python here can resolve the Python requirements");
  error.because(
      fmt::format("envkit resolves with pip: it needs Python {} or newer with pip {} or "
                  "newer{}",
                  minimum_python().original(), minimum_pip().original(),
                  python_spec ? fmt::format(", in {}", quoted_spec(*python_spec)) : std::string()));
  for (auto& line : refusals)
    error.because(std::move(line));
  if (!not_on_path.empty())
    error.because(fmt::format("not on PATH: {}", text::join(not_on_path, ", ")));
  if (old_pip) {
    error.hint(fmt::format("upgrade pip: `{} -m pip install -U pip`", old_pip->string()));
  }
  if (without_pip) {
    error.hint(
        fmt::format("install pip: `{0} -m ensurepip --upgrade` (or the system's package, e.g. "
                    "`apt install python3-pip`), then `{0} -m pip install -U pip`",
                    without_pip->string()));
  }
  if (outside_spec || (!old_pip && !without_pip)) {
    error.hint(
        fmt::format("install Python {}{} with pip, or name one in envkit.yaml: "
                    "`external: {{python: /path/to/python3}}`",
                    python_spec ? quoted_spec(*python_spec) : minimum_python().original(),
                    python_spec ? "" : " or newer"));
  }
  return error;
}

}  // namespace envkit::python
