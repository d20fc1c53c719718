// Resolving for other platforms with `uv pip compile --python-platform`, read
// from the PEP 751 lock file it writes.
#include "envkit/python/uv.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "envkit/core/env_vars.hpp"
#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/python/build_env.hpp"
#include "envkit/python/interpreters.hpp"
#include "envkit/python/wheel_filename.hpp"
#include "envkit/specs/package_name.hpp"
#include "envkit/sys/fs.hpp"
#include "envkit/sys/process.hpp"
#include "tool_output.hpp"

namespace envkit::python {

namespace fs = std::filesystem;

namespace {

constexpr const env::Variable& kUvVariable = env::kUv;

Error bad_lock(std::string_view source, std::string what) {
  return Error::input(fmt::format("{}: {}", text::quoted(source), std::move(what)));
}

bool is_sha256(std::string_view hex) {
  return hex.size() == 64 && std::all_of(hex.begin(), hex.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
         });
}

// How well a wheel fits `platform`: a higher manylinux is better, `any` is last;
// nullopt when it does not fit. `linux_<arch>` (indexes such as PyTorch's) fits,
// below every manylinux tag; musllinux does not.
std::optional<int> platform_rank(std::string_view tag, const ResolveTarget& target) {
  if (tag == "any") return 0;
  if (target.platform == UvPlatform::windows_x86_64)
    return tag == "win_amd64" ? std::optional(1) : std::nullopt;
  const std::string arch = target.platform == UvPlatform::linux_x86_64 ? "x86_64" : "aarch64";
  if (tag == "linux_" + arch) return 1;
  const auto minor = manylinux_glibc_minor(tag, arch);
  if (!minor || *minor > target.glibc_minor) return std::nullopt;
  return 10 + static_cast<int>(*minor);
}

// How well one python-abi pair fits CPython `python`: its own ABI (cp312-cp312) 3,
// the stable ABI (cp39-abi3 on 3.12) 2, pure Python (py3-none, cp312-none) 1.
std::optional<int> abi_rank(std::string_view python_tag, std::string_view abi_tag,
                            const specs::Version& python) {
  const std::string major = std::to_string(python.major());
  const std::string own = "cp" + major + std::to_string(python.minor());
  // cpXN / pyXN for N <= minor; `exact` means N == minor.
  auto older_or_same = [&](std::string_view tag, std::string_view prefix) {
    const std::string head = std::string(prefix) + major;
    if (!tag.starts_with(head)) return false;
    const auto rest = tag.substr(head.size());
    if (rest.empty()) return prefix == "py";  // py3
    std::uint64_t minor = 0;
    for (char c : rest) {
      if (c < '0' || c > '9') return false;
      minor = minor * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return minor <= python.minor();
  };
  // CPython before 3.8 built its ABI with pymalloc: `cp36m`.
  const bool own_abi = abi_tag == own || (python.minor() < 8 && abi_tag == own + "m");
  if (own_abi && python_tag == own) return 3;
  if (abi_tag == "abi3" && older_or_same(python_tag, "cp")) return 2;
  if (abi_tag == "none" && (python_tag == own || older_or_same(python_tag, "py"))) return 1;
  return std::nullopt;
}

// How well a wheel fits; its best tag of a compressed set counts. nullopt: it does not.
std::optional<int> wheel_rank(const WheelFilename& wheel, const ResolveTarget& target) {
  const auto& python = target.python;
  std::optional<int> best;
  for (auto py : text::split(wheel.python_tag, '.')) {
    for (auto abi : text::split(wheel.abi_tag, '.')) {
      const auto a = abi_rank(py, abi, python);
      if (!a) continue;
      for (auto plat : text::split(wheel.platform_tag, '.')) {
        const auto p = platform_rank(plat, target);
        if (p && (!best || *a * 1000 + *p > *best)) best = *a * 1000 + *p;
      }
    }
  }
  return best;
}

// The wheel of `wheels` that fits the target best; nullptr when none does.
Result<const toml::table*> best_fit(const toml::array& wheels, const ResolveTarget& target) {
  const toml::table* chosen = nullptr;
  std::optional<int> chosen_rank;
  for (const auto& node : wheels) {
    const auto* wheel = node.as_table();
    if (!wheel) return Error::input("`wheels` holds something other than tables");
    std::string file = (*wheel)["name"].value<std::string>().value_or("");
    if (file.empty())
      file = detail::url_filename((*wheel)["url"].value<std::string>().value_or(""));
    auto parsed = parse_wheel_filename(file);
    if (!parsed) continue;
    const auto rank = wheel_rank(*parsed, target);
    if (rank && (!chosen_rank || *rank > *chosen_rank)) {
      chosen = wheel;
      chosen_rank = rank;
    }
  }
  return chosen;
}

// The wheel to take of a package's `wheels`: the only one (uv 0.13.9 lists only the
// wheel that fits), else the best fit for the target (uv 0.6.15 lists them all).
Result<const toml::table*> pick_wheel(const toml::array& wheels, const ResolveTarget& target) {
  if (wheels.size() == 1) {
    if (const auto* only = wheels.front().as_table()) return only;
    return Error::input("`wheels` holds something other than tables");
  }
  auto chosen = best_fit(wheels, target);
  if (chosen && !*chosen) {
    return Error::input(
        fmt::format("none of its {} wheels is for {}", wheels.size(), target.description()));
  }
  return chosen;
}

// The archive suffix of a source distribution's file name: PEP 625's .tar.gz, or
// the .zip, .tar.bz2, .tgz, .tar.xz and .tar of older releases; "" for another file.
std::string_view sdist_suffix(std::string_view file) {
  for (const std::string_view suffix : {".tar.gz", ".zip", ".tar.bz2", ".tgz", ".tar.xz", ".tar"}) {
    if (file.ends_with(suffix)) return suffix;
  }
  return {};
}

// The version in an sdist's file name, `{name}-{version}.tar.gz`; "" when it has none.
std::string sdist_version(std::string_view file) {
  file.remove_suffix(sdist_suffix(file).size());
  const auto dash = file.rfind('-');
  return dash == std::string_view::npos ? std::string() : std::string(file.substr(dash + 1));
}

// The file a package is installed from: the wheel that fits the target, else its
// sdist. Wheels always win: an sdist is taken only when no wheel fits.
struct ChosenFile {
  const toml::table* table = nullptr;
  Distribution kind = Distribution::wheel;
};

Result<ChosenFile> choose_file(const toml::table& package, const ResolveTarget& target) {
  const auto* wheels = package["wheels"].as_array();
  const auto* sdist = package["sdist"].as_table();
  if (wheels && !wheels->empty()) {
    auto wheel = sdist ? best_fit(*wheels, target) : pick_wheel(*wheels, target);
    if (!wheel) return std::move(wheel).error();
    if (*wheel) return ChosenFile{.table = *wheel, .kind = Distribution::wheel};
  }
  if (sdist) return ChosenFile{.table = sdist, .kind = Distribution::sdist};
  const char* kind = package.contains("vcs")         ? "a VCS checkout"
                     : package.contains("directory") ? "a local folder"
                     : package.contains("archive")   ? "an archive"
                                                     : "nothing";
  return Error::input(fmt::format("no wheel and no source distribution: it comes from {}", kind))
      .hint("envkit installs wheels and source distributions from a package index");
}

Result<ResolvedWheel> read_package(const toml::table& package, std::size_t index,
                                   std::string_view source, const ResolveTarget& target) {
  std::string where = fmt::format("packages[{}]", index);
  auto bad = [&](std::string what) { return bad_lock(source, fmt::format("{}: {}", where, what)); };
  const auto name = package["name"].value<std::string>();
  if (!name || name->empty()) return bad("no `name`");
  const auto version = package["version"].value<std::string>();
  where += fmt::format(" ({}{})", text::quoted(*name), version ? " " + *version : std::string());

  auto chosen = choose_file(package, target);
  if (!chosen) {
    Error error = bad(chosen.error().message());
    for (const auto& hint : chosen.error().hints())
      error.hint(hint);
    return error;
  }
  const toml::table* wheel = chosen->table;
  const bool is_sdist = chosen->kind == Distribution::sdist;
  const auto link = (*wheel)["url"].value<std::string>();
  if (!link || link->empty())
    return bad(is_sdist ? "its sdist has no `url`" : "its wheel has no `url`");
  const std::string shown_url = url::redacted(*link);
  const std::string file = detail::url_filename(*link);
  if (!is_sdist && !file.ends_with(".whl"))
    return bad(fmt::format("{} is not a wheel (.whl)", text::quoted(shown_url)));
  if (is_sdist && sdist_suffix(file).empty()) {
    return bad(
        fmt::format("{} is not a source distribution (.tar.gz, .zip)", text::quoted(shown_url)));
  }
  const auto sha256 = (*wheel)["hashes"]["sha256"].value<std::string>();
  if (!sha256) return bad(fmt::format("{} has no sha256", text::quoted(shown_url)));
  if (!is_sha256(*sha256)) {
    return bad(fmt::format("the sha256 of {} is {}, not 64 hex digits", text::quoted(shown_url),
                           text::quoted(*sha256)));
  }
  ResolvedWheel out;
  out.name = specs::canonical_package_name(*name);
  out.kind = chosen->kind;
  if (version) {
    out.version = *version;
  } else if (auto parsed = parse_wheel_filename(file); parsed && !is_sdist) {
    out.version = parsed->version;
  } else if (is_sdist && !sdist_version(file).empty()) {
    out.version = sdist_version(file);
  } else {
    return bad("no `version`");
  }
  out.url = url::without_credentials(*link);
  out.sha256 = text::to_lower(*sha256);
  if (const auto size = (*wheel)["size"].value<std::int64_t>(); size && *size >= 0)
    out.size = static_cast<std::uint64_t>(*size);
  return out;
}

// The package a requirement line names, normalized; "" for options and comments.
std::string requirement_name(std::string_view line) {
  line = text::trim(line);
  if (line.empty() || line.starts_with('#') || line.starts_with('-')) return {};
  std::size_t end = 0;
  while (end < line.size() && (std::isalnum(static_cast<unsigned char>(line[end])) ||
                               line[end] == '-' || line[end] == '_' || line[end] == '.'))
    ++end;
  return specs::canonical_package_name(line.substr(0, end));
}

// The packages a request names: its requirements and its requirement files' lines.
std::set<std::string> requested_names(const ResolveRequest& request) {
  std::set<std::string> names;
  auto add = [&](std::string_view line) {
    if (auto name = requirement_name(line); !name.empty()) names.insert(std::move(name));
  };
  for (const auto& requirement : request.requirements)
    add(requirement);
  for (const auto& file : request.requirement_files) {
    const fs::path path = file.is_relative() && request.cwd ? *request.cwd / file : file;
    auto text = sys::read_file(path);
    if (!text) continue;  // uv says so
    for (auto line : text::split(*text, '\n'))
      add(line);
  }
  return names;
}

bool has(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// uv could not read an index (DNS, connection, TLS, HTTP errors): it then says
// "Failed to fetch: URL" or "Request failed after N retries", never "No solution".
bool index_unreachable(std::string_view output) {
  return !has(output, "No solution found") &&
         (has(output, "Failed to fetch") || has(output, "Request failed after"));
}

// uv refused: its `error:` and `cause:` lines as causes, its `hint:` lines as hints.
// uv's refusal as logical lines: a reason that goes on over indented lines ("  cause:
// Because jax==0.4.26 depends on numpy>=1.26.0 ...\n         And because you require
// numpy==1.24.3, ...") is one line, so that the requirement it ends with is quoted too.
std::vector<std::string> refusal_lines(std::string_view err) {
  std::vector<std::string> lines;
  bool continues = false;  // the last line was a labelled one (or went on from one)
  for (auto raw : text::split(err, '\n')) {
    const std::string_view line = text::trim(raw);
    const bool labelled = line.starts_with("error:") || line.starts_with("cause:") ||
                          line.starts_with("Caused by:") || line.starts_with("hint:");
    if (continues && !labelled && !line.empty() &&
        (raw.starts_with(' ') || raw.starts_with('\t'))) {
      lines.back() += " ";
      lines.back() += line;
      continue;
    }
    lines.emplace_back(line);
    continues = labelled;
  }
  return lines;
}

Error uv_refused(const sys::ProcessOutput& run) {
  Error error =
      Error::failed(std::string(index_unreachable(run.err) ? kIndexUnreachable : kUnresolvable));
  bool quoted_any = false;
  for (const auto& logical : refusal_lines(run.err)) {
    const std::string_view line = logical;
    for (const std::string_view label : {"error:", "cause:", "Caused by:"}) {
      if (line.starts_with(label)) {
        error.because(
            detail::redact_urls(fmt::format("uv: {}", text::trim(line.substr(label.size())))));
        quoted_any = true;
      }
    }
    if (line.starts_with("hint:"))
      error.hint(detail::redact_urls(fmt::format("uv: {}", text::trim(line.substr(5)))));
  }
  if (!quoted_any) {
    const std::string_view output = text::trim(run.err).empty() ? run.out : run.err;
    error.because(fmt::format("uv exited with code {} and printed {}", run.exit_code,
                              detail::quoted_tail(output, 5)));
  }
  if (index_unreachable(run.err)) {
    error.hint(
        "check that this machine reaches the URL above (a proxy is taken from https_proxy), or "
        "reach the index through a mirror (`mirrors:` in .envkit/config.yaml, docs/config.md)");
  }
  if (has(run.err, "--format") || has(run.err, "pylock")) {
    error.hint(
        "envkit reads uv's pylock.toml output, which needs uv 0.6.15 or newer: "
        "`uv self update` or `pip install -U uv`");
  }
  return error;
}

}  // namespace

std::string ResolveTarget::description() const {
  return fmt::format("CPython {}, {}", python.original(), python_platform(*this));
}

std::string python_platform(const ResolveTarget& target) {
  constexpr unsigned kOldestUvManylinux = 17;
  const unsigned glibc = std::max(target.glibc_minor, kOldestUvManylinux);
  switch (target.platform) {
    case UvPlatform::linux_x86_64:
      return fmt::format("x86_64-manylinux_2_{}", glibc);
    case UvPlatform::linux_aarch64:
      return fmt::format("aarch64-manylinux_2_{}", glibc);
    case UvPlatform::windows_x86_64:
      return "x86_64-pc-windows-msvc";
  }
  return "?";
}

Result<Uv> find_uv() {
  std::optional<fs::path> path;
  if (auto given = env::get(kUvVariable); given && !given->empty()) {
    path = fs::path(*given);
    std::error_code ec;
    if (!fs::exists(*path, ec)) {
      return Error::failed(fmt::format("{} does not exist", text::quoted(path->string())))
          .because(fmt::format("{} names it", kUvVariable.name));
    }
  } else {
    path = sys::find_on_path("uv");
  }
  if (!path) {
    return Error::failed("uv is not installed")
        .because("resolving for another platform runs `uv pip compile --python-platform`")
        .hint(fmt::format("install it (`pip install uv`, https://docs.astral.sh/uv/), or set {} "
                          "to its path",
                          kUvVariable.name));
  }
  const std::string program =
      path->has_parent_path() ? path->string() : (fs::path(".") / *path).string();
  auto run = sys::run_process({program, "--version"});
  if (!run || run->timed_out || run->exit_code != 0) {
    Error error = Error::failed(fmt::format("{} does not run", text::quoted(path->string())));
    if (!run) {
      error.because(run.error().message());
    } else {
      error.because(
          fmt::format("`uv --version` printed {}", detail::quoted_tail(run->err + run->out)));
    }
    return error;
  }
  // "uv 0.13.9 (x86_64-unknown-linux-gnu)" or "uv 0.4.0"
  const auto words = text::split(text::trim(run->out), ' ');
  if (words.size() < 2 || words[0] != "uv") {
    return Error::failed(fmt::format("{} does not look like uv", text::quoted(path->string())))
        .because(fmt::format("`uv --version` printed {}", detail::quoted_tail(run->out)));
  }
  return Uv{.path = *path, .version = std::string(words[1])};
}

Result<Closure> parse_pylock(std::string_view toml_text, std::string_view source,
                             const ResolveTarget& target) {
  toml::table document;
  try {
    document = toml::parse(toml_text, source);
  } catch (const toml::parse_error& e) {
    return bad_lock(source, "not a pylock.toml file (not TOML)")
        .because(fmt::format("line {}: {}", e.source().begin.line, e.description()));
  }
  const auto lock_version = document["lock-version"].value<std::string>();
  if (!lock_version) return bad_lock(source, "not a pylock.toml file (no `lock-version`)");
  if (text::split(*lock_version, '.').front() != "1") {
    return bad_lock(source, fmt::format("a pylock.toml of lock-version {}; envkit reads 1.x",
                                        text::quoted(*lock_version)));
  }
  Closure closure;
  closure.resolver = document["created-by"].value<std::string>().value_or("?");
  if (const auto* packages = document["packages"].as_array()) {
    for (std::size_t i = 0; i < packages->size(); ++i) {
      const auto* package = (*packages)[i].as_table();
      if (!package) return bad_lock(source, fmt::format("packages[{}] is not a table", i));
      auto wheel = read_package(*package, i, source, target);
      if (!wheel) return std::move(wheel).error();
      closure.wheels.push_back(*std::move(wheel));
    }
  }
  std::stable_sort(closure.wheels.begin(), closure.wheels.end(),
                   [](const ResolvedWheel& a, const ResolvedWheel& b) { return a.name < b.name; });
  return closure;
}

namespace {

// Index and find-links arguments: a URL ending in `.html` is a page of links
// (PyTorch's torch_stable.html), the others PEP 503 indexes.
void add_index_arguments(const ResolveRequest& request, std::vector<std::string>& argv) {
  std::size_t indexes = 0;
  for (const auto& url : request.index_urls) {
    if (url.ends_with(".html")) {
      argv.emplace_back("--find-links");
    } else {
      argv.emplace_back(indexes++ == 0 ? "--index-url" : "--extra-index-url");
    }
    argv.push_back(url);
  }
  if (indexes > 1) {
    argv.emplace_back("--index-strategy");
    argv.emplace_back("unsafe-best-match");
  }
}

// The requirement files, for a message about a resolution that took too long.
std::string named_files(const ResolveRequest& request) {
  if (request.requirement_files.empty()) return "the requirements envkit passed";
  std::vector<std::string> names;
  for (const auto& file : request.requirement_files)
    names.push_back(text::quoted(file.filename().string()));
  return text::join(names, ", ");
}

// `uv python find` for `request` ("3.12", or "" for the default interpreter), run in `cwd`.
std::optional<std::string> find_interpreter(const fs::path& program, const std::string& request,
                                            const std::optional<fs::path>& cwd) {
  std::vector<std::string> argv = {program.string(), "python", "find", "--no-python-downloads"};
  if (!request.empty()) argv.push_back(request);
  sys::ProcessOptions options;
  options.cwd = cwd;
  options.timeout = std::chrono::seconds(60);
  auto run = sys::run_process(argv, options);
  if (!run || run->timed_out || run->exit_code != 0) return std::nullopt;
  auto path = std::string(text::trim(run->out));
  if (path.empty()) return std::nullopt;
  return path;
}

// The interpreter uv builds source distributions with when resolving for `python`.
struct BuildInterpreter {
  std::optional<std::string> path;  // nullopt: none at all (uv's refusal says so)
  bool of_minor = false;            // of the lock's own minor version
  std::string source;               // "pyenv", "envkit's cache", "uv python find"
};

// One of the lock's minor where the machine has it (a setup.py may run only there): the
// machine's own (pyenv, uv's, conda bases, PATH, /usr/bin), else envkit's own from its
// cache, else what `uv python find MAJOR.MINOR` finds; only then uv's default one, of
// another minor. Left to itself, uv searches on every run, and probing each python3.X on
// PATH takes half a second behind pyenv's shims (whose `python3.8` may not even run); a
// lock runs uv a dozen times. So envkit asks once per minor version and names the one it
// found.
BuildInterpreter build_interpreter(const fs::path& program, const specs::Version& python,
                                   const std::optional<fs::path>& cwd, const BuildOptions& build) {
  static std::mutex mutex;
  static std::map<std::string, BuildInterpreter> found;
  const auto minor = python.major_minor().to_string();
  const std::string key = program.string() + "\n" + minor + "\n" + (cwd ? cwd->string() : "");
  const std::scoped_lock lock(mutex);
  if (auto it = found.find(key); it != found.end()) return it->second;
  BuildInterpreter chosen;
  if (auto machine = machine_interpreter(python)) {
    chosen = {.path = machine->path.string(), .of_minor = true, .source = machine->source};
  } else if (auto own = build.own_python ? build.own_python(python) : std::nullopt) {
    chosen = {.path = own->string(), .of_minor = true, .source = "envkit's cache"};
  } else if (auto of_minor = find_interpreter(program, minor, cwd)) {
    chosen = {.path = *of_minor, .of_minor = true, .source = "uv python find"};
  } else {
    chosen = {.path = find_interpreter(program, "", cwd), .of_minor = false, .source = "uv"};
  }
  found.insert_or_assign(key, chosen);
  return chosen;
}

// --------------------------------------------------------------- source builds

// What the builds of one resolution get; widened after a build fails.
struct BuildState {
  std::optional<BuildEra> era;              // build tools as of its day
  std::string era_missing;                  // why no era could be applied, when it was wanted
  std::vector<std::string> with_framework;  // packages built with the framework, sorted
};

// The framework's requirement in the request (`torch==2.1.2`); "" when it has none.
std::string framework_requirement(const ResolveRequest& request) {
  if (request.build.framework.empty()) return {};
  const auto framework = specs::canonical_package_name(request.build.framework);
  for (const auto& requirement : request.requirements) {
    if (requirement_name(requirement) == framework) return std::string(text::trim(requirement));
  }
  return {};
}

// The uv lines of a verbose run without its DEBUG log: what uv says to a user.
sys::ProcessOutput without_debug(const sys::ProcessOutput& run) {
  sys::ProcessOutput said = run;
  said.err.clear();
  for (auto line : text::split(run.err, '\n')) {
    if (line.starts_with("DEBUG ") || line.starts_with("TRACE ")) continue;
    said.err += std::string(line) + "\n";
  }
  return said;
}

// The packages whose metadata uv built by running their build backend
// (`Preparing metadata for: albumentations==0.4.3`), in order.
std::vector<std::string> built_for_metadata(std::string_view log) {
  std::vector<std::string> built;
  constexpr std::string_view marker = "Preparing metadata for: ";
  for (auto line : text::split(log, '\n')) {
    const auto at = line.find(marker);
    if (at == std::string_view::npos) continue;
    std::string what(text::trim(line.substr(at + marker.size())));
    if (std::find(built.begin(), built.end(), what) == built.end()) built.push_back(what);
  }
  return built;
}

// `albumentations==0.4.3` as a user reads it: `albumentations 0.4.3`.
std::string spaced(std::string_view pinned) {
  const auto equals = pinned.find("==");
  if (equals == std::string_view::npos) return std::string(pinned);
  return fmt::format("{} {}", pinned.substr(0, equals), pinned.substr(equals + 2));
}

// The last `count` lines of a verbose log, without uv's `DEBUG ` prefixes.
std::string log_tail(std::string_view log, std::size_t count) {
  std::vector<std::string> lines;
  for (auto line : text::split(log, '\n')) {
    if (line.starts_with("DEBUG ")) line.remove_prefix(6);
    if (!text::trim(line).empty()) lines.emplace_back(line);
  }
  if (lines.size() > count) lines.erase(lines.begin(), lines.end() - static_cast<long>(count));
  return detail::redact_urls(text::join(lines, "\n"));
}

// A resolution needed a source build, but the machine has no interpreter of the lock's
// minor: the build would run on another Python and could answer for that one.
Error no_interpreter_of(const ResolveTarget& target, std::string_view package,
                        const BuildInterpreter& interpreter) {
  const auto minor = target.python.major_minor().to_string();
  Error error = Error::failed(
      fmt::format("no CPython {} on this machine to build {} from its source distribution", minor,
                  spaced(package)));
  error.because(fmt::format(
      "a setup.py may run only on the Python it is built for, so envkit builds the lock's "
      "source distributions with an interpreter of its Python {} ({})",
      minor, target.python.original()));
  for (const auto& refused : machine_interpreters().refused) {
    if (refused.find("Python " + minor + " ") != std::string::npos ||
        refused.find("python" + minor) != std::string::npos)
      error.because(refused);
  }
  if (interpreter.path)
    error.because(
        fmt::format("uv's default interpreter, {}, is another version", *interpreter.path));
  return error
      .hint(fmt::format("install CPython {0} (`pyenv install {0}`, or `uv python install {0}` "
                        "where GitHub is reachable), or name the folder of a `python{0}` in "
                        "ENVKIT_PYTHON_SEARCH_PATH; then run `envkit lock` again",
                        minor))
      .hint(
          fmt::format("or `envkit install` once a project whose lock holds Python {}: envkit's own "
                      "interpreter in its cache is then used",
                      minor));
}

// Widens the builds after `failed` failed: the era's build tools (once), and the framework
// for a package whose build imports it. Returns whether anything changed; an era that
// cannot be read is an error (an index page that is not one names its URL).
Result<bool> widen_builds(BuildState& state, const FailedBuild& failed, std::string_view log,
                          const ResolveRequest& request) {
  bool changed = false;
  const auto framework = framework_requirement(request);
  const bool needs_framework = lacks_module(log, framework_module(request.build.framework)) ||
                               std::find(std::begin(kFrameworkBuilds), std::end(kFrameworkBuilds),
                                         failed.name) != std::end(kFrameworkBuilds);
  auto& with = state.with_framework;
  if (!framework.empty() && needs_framework &&
      std::find(with.begin(), with.end(), failed.name) == with.end()) {
    with.push_back(failed.name);
    std::sort(with.begin(), with.end());
    changed = true;
  }
  if (!state.era && state.era_missing.empty() && request.build.era) {
    auto era = request.build.era();
    if (!era) return std::move(era).error();
    if (era->as_of.empty()) {
      state.era_missing = era->because;
    } else {
      state.era = *std::move(era);
      changed = true;
    }
  }
  return changed;
}

// The files and arguments that give uv's builds what `state` says.
Result<void> add_build_arguments(const ResolveRequest& request, const ResolveTarget& target,
                                 const BuildState& state, const fs::path& scratch,
                                 std::vector<std::string>& argv) {
  if (state.era) {
    const auto lines = build_constraints(*state.era, target.python);
    if (!lines.empty()) {
      const fs::path file = scratch / "build-constraints.txt";
      if (auto written = sys::write_file_atomic(file, text::join(lines, "\n") + "\n"); !written)
        return written.error();
      argv.emplace_back("--build-constraints");
      argv.push_back(file.string());
    }
  }
  const auto framework = framework_requirement(request);
  if (!framework.empty() && !state.with_framework.empty()) {
    const fs::path file = scratch / "uv.toml";
    if (auto written =
            sys::write_file_atomic(file, build_config_toml(framework, state.with_framework));
        !written)
      return written.error();
    argv.emplace_back("--config-file");
    argv.push_back(file.string());
  }
  return {};
}

// The message of a resolution stopped after `timeout`: the package being built, when one
// was, and the last lines of its log.
Error stopped_resolution(const ResolveRequest& request, const ResolveTarget& target,
                         const std::vector<std::string>& argv, std::string_view log,
                         std::chrono::seconds timeout) {
  Error error =
      Error::failed(fmt::format("uv did not resolve {} within {} s for {}", named_files(request),
                                timeout.count(), target.description()));
  std::optional<std::string> building;
  for (const auto& package : built_for_metadata(log)) {
    if (log.find("Prepared metadata for: " + package) == std::string_view::npos) building = package;
  }
  if (building) {
    error.because(
        fmt::format("it was building {} from its source distribution, whose last "
                    "lines were:\n{}",
                    spaced(*building), log_tail(log, 10)));
  }
  error.because(fmt::format("envkit ran {}", detail::redact_urls(detail::quoted_command(argv))));
  if (building) {
    return error.hint(fmt::format(
        "a build that hangs waits for something (a compiler, a download, a prompt): pin a "
        "version of {} that has a wheel for {}, or set `only-binary: true` in envkit.yaml",
        spaced(*building).substr(0, building->find("==")), target.description()));
  }
  return error.hint(
      "pin the versions uv backtracks over, or split requirement files that belong to "
      "different environments (one backend's requirements each)");
}

// The time a resolution may take once a build environment gets the framework: its first
// download (torch and its CUDA wheels) takes minutes.
constexpr std::chrono::minutes kFrameworkBuildTime{15};

// `uv pip compile` and the arguments of the target, the indexes and the interpreter; the
// build files and the requirements are added after. `-v`: uv's log says which source
// distributions it built (and, when it is stopped, what a build was doing).
std::vector<std::string> uv_arguments(const fs::path& program, const ResolveRequest& request,
                                      const ResolveTarget& target, const fs::path& lock,
                                      const BuildInterpreter& interpreter) {
  // --no-python-downloads: the target Python is named by version, and uv must not spend
  // seconds fetching an interpreter of it from GitHub (unreachable behind firewalls).
  std::vector<std::string> argv = {program.string(),
                                   "pip",
                                   "compile",
                                   "-v",
                                   "--no-header",
                                   "--no-python-downloads",
                                   "--python-platform",
                                   python_platform(target),
                                   "--python-version",
                                   target.python.original(),
                                   "--format",
                                   "pylock.toml",
                                   "-o",
                                   lock.string()};
  if (request.only_binary) {
    argv.emplace_back("--only-binary");
    argv.emplace_back(":all:");
  }
  if (request.no_deps) argv.emplace_back("--no-deps");
  if (request.refresh) argv.emplace_back("--refresh");
  // Without one, uv finds none either, and its refusal says so.
  if (interpreter.path) {
    argv.emplace_back("--python");
    argv.push_back(*interpreter.path);
  }
  add_index_arguments(request, argv);
  return argv;
}

// What the builds of the resolution that succeeded were given, where it decided something.
void record_builds(Closure& closure, const BuildState& state, bool built_any) {
  const bool has_sdist =
      std::any_of(closure.wheels.begin(), closure.wheels.end(),
                  [](const ResolvedWheel& wheel) { return wheel.kind == Distribution::sdist; });
  if (state.era && (has_sdist || built_any)) closure.build_as_of = state.era->as_of;
  for (const auto& package : state.with_framework) {
    if (std::any_of(closure.wheels.begin(), closure.wheels.end(),
                    [&](const ResolvedWheel& wheel) { return wheel.name == package; }))
      closure.built_with_framework.push_back(package);
  }
}

}  // namespace

Result<Closure> resolve_with_uv(const Uv& uv, const ResolveRequest& request,
                                const ResolveTarget& target) {
  for (const auto& requirement : request.requirements) {
    const auto line = text::trim(requirement);
    if (line.empty() || line.starts_with('-')) {
      return Error::input(fmt::format("{} is not a requirement", text::quoted(requirement)))
          .because("a requirement is one PEP 508 line, such as `numpy>=1.24`");
    }
  }
  const std::string resolver = fmt::format("uv {} (for {})", uv.version, target.description());
  if (request.requirements.empty() && request.requirement_files.empty())
    return Closure{.wheels = {}, .resolver = resolver};

  auto scratch = detail::ScratchDir::make("envkit-uv");
  if (!scratch) return std::move(scratch).error();
  const fs::path input = scratch->path() / "requirements.in";
  const fs::path lock = scratch->path() / "pylock.toml";
  std::string lines;
  for (const auto& requirement : request.requirements)
    lines += std::string(text::trim(requirement)) + "\n";
  if (auto written = sys::write_file_atomic(input, lines); !written) return written.error();

  const fs::path program = uv.path.has_parent_path() ? uv.path : fs::path(".") / uv.path;
  const auto interpreter = build_interpreter(program, target.python, request.cwd, request.build);
  BuildState state{.era = {}, .era_missing = {}, .with_framework = request.build.with_framework};
  if (request.build.as_of_declared && request.build.era) {
    auto era = request.build.era();
    if (!era) return std::move(era).error();
    if (!era->as_of.empty()) state.era = *std::move(era);
  }
  // Each retry adds the era or a package to build with the framework, so a few settle it.
  constexpr int kAttempts = 6;
  for (int attempt = 1;; ++attempt) {
    auto argv = uv_arguments(program, request, target, lock, interpreter);
    if (auto added = add_build_arguments(request, target, state, scratch->path(), argv); !added)
      return added.error();
    if (!request.requirements.empty()) argv.push_back(input.string());
    for (const auto& file : request.requirement_files)
      argv.push_back(file.string());

    sys::ProcessOptions options;
    options.cwd = request.cwd;
    options.timeout = request.timeout;
    // A build environment with the framework downloads it (2 GB for torch) the first time.
    if (!state.with_framework.empty())
      options.timeout = std::max<std::chrono::milliseconds>(options.timeout, kFrameworkBuildTime);
    auto run = sys::run_process(argv, options);
    if (!run) {
      Error error = Error::failed(fmt::format("cannot run {}", text::quoted(uv.path.string())));
      error.because(run.error().message());
      return error;
    }
    if (run->timed_out) {
      return stopped_resolution(request, target, argv, run->err,
                                std::chrono::duration_cast<std::chrono::seconds>(options.timeout));
    }
    const auto built = built_for_metadata(run->err);
    if (run->exit_code != 0) {
      // What uv said, not its log: a candidate it gave up on earlier is no failure.
      const auto failed = failed_build(without_debug(*run).err);
      if (failed && !interpreter.of_minor)
        return no_interpreter_of(target, failed->name + "==" + failed->version, interpreter);
      if (failed && attempt < kAttempts) {
        auto widened = widen_builds(state, *failed, run->err, request);
        if (!widened) {
          return std::move(widened).error().because(
              fmt::format("envkit read them because {} {} failed to build with today's build "
                          "tools",
                          failed->name, failed->version));
        }
        if (*widened) continue;
      }
      Error error = uv_refused(without_debug(*run));
      error.because(fmt::format("envkit resolved for {}", target.description()));
      if (failed) {
        if (state.era) {
          error.because(fmt::format(
              "the build tools were taken as of {} ({}): {}", state.era->as_of, state.era->because,
              text::join(build_constraints(*state.era, target.python), ", ")));
        } else if (!state.era_missing.empty()) {
          error.because(
              fmt::format("the build tools could not be taken as of the project's "
                          "era: {}",
                          state.era_missing));
          error.hint(
              "set the day the project's build tools are taken as of in envkit.yaml: "
              "`resolution: {as-of: 2022-08-01}`");
        }
        if (!state.with_framework.empty()) {
          error.because(fmt::format("{} was built with {} in its build environment",
                                    text::join(state.with_framework, ", "),
                                    framework_requirement(request)));
        }
      }
      return error;
    }
    if (!interpreter.of_minor && !built.empty())
      return no_interpreter_of(target, built.front(), interpreter);

    auto text = sys::read_file(lock);
    if (!text) {
      return Error::failed("uv finished but wrote no pylock.toml")
          .because(text.error().message())
          .hint(fmt::format("envkit ran {}", detail::quoted_command(argv)));
    }
    auto closure = parse_pylock(*text, "uv pip compile -o pylock.toml", target);
    if (!closure) {
      Error error = Error::failed(closure.error().message());
      for (const auto& cause : closure.error().causes())
        error.because(cause);
      for (const auto& hint : closure.error().hints())
        error.hint(hint);
      return error;
    }
    const auto names = requested_names(request);
    for (auto& wheel : closure->wheels)
      wheel.requested = names.contains(wheel.name);
    closure->resolver = resolver;
    record_builds(*closure, state, !built.empty());
    return closure;
  }
}

}  // namespace envkit::python
