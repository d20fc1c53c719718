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
Error uv_refused(const sys::ProcessOutput& run) {
  Error error =
      Error::failed(std::string(index_unreachable(run.err) ? kIndexUnreachable : kUnresolvable));
  bool quoted_any = false;
  for (auto raw : text::split(run.err, '\n')) {
    const std::string_view line = text::trim(raw);
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

// The interpreter uv builds source distributions with when resolving for `python`: one of
// that minor version where the machine has it (a setup.py may run only there), else the
// default one; nullopt where there is none. Left to itself, uv searches on every run, and
// probing each python3.X on PATH takes half a second behind pyenv's shims; a lock runs uv
// a dozen times. So envkit asks once per minor version and names the one it found.
std::optional<std::string> build_interpreter(const fs::path& program, const specs::Version& python,
                                             const std::optional<fs::path>& cwd) {
  static std::mutex mutex;
  static std::map<std::string, std::optional<std::string>> found;
  const auto minor = python.major_minor().to_string();
  const std::string key = program.string() + "\n" + minor + "\n" + (cwd ? cwd->string() : "");
  const std::scoped_lock lock(mutex);
  if (auto it = found.find(key); it != found.end()) return it->second;
  auto interpreter = find_interpreter(program, minor, cwd);
  if (!interpreter) interpreter = find_interpreter(program, "", cwd);
  found.emplace(key, interpreter);
  return interpreter;
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
  // --no-python-downloads: the target Python is named by version, and uv must not spend
  // seconds fetching an interpreter of it from GitHub (unreachable behind firewalls).
  std::vector<std::string> argv = {program.string(),
                                   "pip",
                                   "compile",
                                   "--quiet",
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
  if (auto interpreter = build_interpreter(program, target.python, request.cwd)) {
    argv.emplace_back("--python");
    argv.push_back(*interpreter);
  }
  add_index_arguments(request, argv);
  if (!request.requirements.empty()) argv.push_back(input.string());
  for (const auto& file : request.requirement_files)
    argv.push_back(file.string());

  sys::ProcessOptions options;
  options.cwd = request.cwd;
  options.timeout = request.timeout;
  auto run = sys::run_process(argv, options);
  if (!run) {
    Error error = Error::failed(fmt::format("cannot run {}", text::quoted(uv.path.string())));
    error.because(run.error().message());
    return error;
  }
  if (run->timed_out) {
    return Error::failed(fmt::format("uv did not resolve {} within {} s for {}",
                                     named_files(request), request.timeout.count(),
                                     target.description()))
        .because(fmt::format("envkit ran {}", detail::redact_urls(detail::quoted_command(argv))))
        .hint(
            "pin the versions uv backtracks over, or split requirement files that belong to "
            "different environments (one backend's requirements each)");
  }
  if (run->exit_code != 0) {
    Error error = uv_refused(*run);
    return error.because(fmt::format("envkit resolved for {}", target.description()));
  }

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
  return closure;
}

}  // namespace envkit::python
