#include "envkit/smoke/framework.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <set>

#include "envkit/core/text.hpp"
#include "envkit/smoke/build.hpp"
#include "envkit/specs/platform.hpp"
#include "envkit/sys/process.hpp"

namespace envkit::smoke {

namespace fs = std::filesystem;
using Kind = LibraryProblem::Kind;

namespace {

// The stems (file name before `.so`) of the CUDA stack's libraries, and the driver's.
constexpr std::string_view kCudaStems[] = {
    "libcuda",        "libcudart",        "libcublas",         "libcublasLt",    "libcufft",
    "libcufftw",      "libcurand",        "libcusolver",       "libcusolverMg",  "libcusparse",
    "libcusparseLt",  "libnvrtc",         "libnvrtc-builtins", "libnvJitLink",   "libcupti",
    "libnvToolsExt",  "libnvjpeg",        "libcufile",         "libcufile_rdma", "libnccl",
    "libnvperf_host", "libnvperf_target", "libnvblas"};
// Families whose every member is a library of its own: libcudnn_ops, libnppc, ...
constexpr std::string_view kCudaFamilies[] = {"libcudnn", "libnpp"};
// Libraries whose soname major is the CUDA major (libcufft's, libcusparse's are their own).
constexpr std::string_view kCudaMajorStems[] = {"libcudart", "libcublas",         "libcublasLt",
                                                "libnvrtc",  "libnvrtc-builtins", "libnvJitLink"};

bool is_cuda_stem(std::string_view stem) {
  return std::find(std::begin(kCudaStems), std::end(kCudaStems), stem) != std::end(kCudaStems) ||
         std::any_of(std::begin(kCudaFamilies), std::end(kCudaFamilies),
                     [&](std::string_view family) { return stem.starts_with(family); });
}

bool is_cudnn(std::string_view name) {
  return name.starts_with("libcudnn");
}

// auditwheel's `-<8 hex digits>` after a vendored library's name.
std::string_view without_hash(std::string_view stem) {
  const auto dash = stem.rfind('-');
  if (dash == std::string_view::npos || stem.size() - dash != 9) return stem;
  const auto hash = stem.substr(dash + 1);
  const bool hex = std::all_of(hash.begin(), hash.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
  return hex ? stem.substr(0, dash) : stem;
}

std::optional<std::uint64_t> hex_number(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<std::uint64_t> decimal_number(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// The next whitespace-separated field of `line`, taken off its front.
std::string_view next_field(std::string_view& line) {
  const auto start = line.find_first_not_of(" \t");
  if (start == std::string_view::npos) {
    line = {};
    return {};
  }
  line.remove_prefix(start);
  const auto end = line.find_first_of(" \t");
  const auto field = line.substr(0, end);
  line.remove_prefix(end == std::string_view::npos ? line.size() : end);
  return field;
}

bool under(const fs::path& path, const fs::path& root) {
  const auto relative = path.lexically_relative(root);
  return !relative.empty() && *relative.begin() != "..";
}

// The prefix as the loader saw it (a prefix is a link to its current
// generation), and as named, for paths reported either way.
std::vector<fs::path> prefix_roots(const fs::path& prefix) {
  std::vector<fs::path> roots = {fs::absolute(prefix).lexically_normal()};
  std::error_code ec;
  const auto real = fs::canonical(prefix, ec);
  if (!ec && real != roots.front()) roots.push_back(real);
  return roots;
}

bool in_prefix(const fs::path& path, const std::vector<fs::path>& roots) {
  return std::any_of(roots.begin(), roots.end(),
                     [&](const fs::path& root) { return under(path, root); });
}

std::vector<std::uint64_t> numbers_of(std::string_view version) {
  std::vector<std::uint64_t> numbers;
  for (auto part : text::split(version, '.')) {
    const auto number = decimal_number(part);
    if (!number) break;
    numbers.push_back(*number);
  }
  return numbers;
}

// Every number `version` states agrees with `locked` (`9` and `9.1.0` agree with 9.1.0.70).
bool agrees(std::string_view version, const specs::Version& locked) {
  const auto numbers = numbers_of(version);
  const auto& release = locked.release();
  for (std::size_t i = 0; i < numbers.size() && i < release.size(); ++i) {
    if (numbers[i] != release[i]) return false;
  }
  return true;
}

std::optional<LibraryProblem> version_problem(const LoadedLibrary& library,
                                              const LockedStack& locked) {
  if (library.version.empty()) return std::nullopt;
  if (is_cudnn(library.name) && locked.cudnn && !agrees(library.version, *locked.cudnn)) {
    return LibraryProblem{
        Kind::version,
        fmt::format("{} {} was loaded ({}), but the lock's cuDNN is {}", library.name,
                    library.version, library.path.string(), locked.cudnn->original()),
        library.path};
  }
  const bool cuda_major = std::find(std::begin(kCudaMajorStems), std::end(kCudaMajorStems),
                                    library.name) != std::end(kCudaMajorStems);
  const auto numbers = numbers_of(library.version);
  if (cuda_major && locked.cuda && !numbers.empty() && numbers.front() != locked.cuda->major()) {
    return LibraryProblem{
        Kind::version,
        fmt::format("{} of CUDA {} was loaded ({}), but the lock's CUDA is {}", library.name,
                    numbers.front(), library.path.string(), locked.cuda->original()),
        library.path};
  }
  return std::nullopt;
}

// What the framework says of its CUDA and cuDNN, against the lock.
void check_stated(const FrameworkFacts& framework, const LockedStack& locked,
                  std::vector<LibraryProblem>& problems) {
  if (framework.cuda && locked.cuda) {
    const auto numbers = numbers_of(*framework.cuda);
    if (!numbers.empty() && numbers.front() != locked.cuda->major()) {
      problems.push_back({Kind::version,
                          fmt::format("{} states CUDA {}, but the lock's CUDA is {}",
                                      framework.name, *framework.cuda, locked.cuda->original()),
                          {}});
    }
  }
  if (framework.cudnn && locked.cudnn && !agrees(*framework.cudnn, *locked.cudnn)) {
    problems.push_back({Kind::version,
                        fmt::format("{} states cuDNN {}, but the lock's cuDNN is {}",
                                    framework.name, *framework.cudnn, locked.cudnn->original()),
                        {}});
  }
}

bool expected_outside(const LoadedLibrary& library, const LockedStack& locked) {
  if (library.name == "libcuda") return true;  // the driver's, never the prefix's
  return is_cudnn(library.name) ? locked.cudnn_external : locked.cuda_external;
}

std::optional<specs::Version> version_of(const std::string& text) {
  auto version = specs::Version::parse(text);
  if (!version) return std::nullopt;
  return *std::move(version);
}

// ------------------------------------------------------------ the script

FrameworkResult made_here(std::string status, std::string reason) {
  const nlohmann::json object = {{"status", status}, {"reason", reason}};
  return {std::move(status), std::move(reason), object.dump(), {}, {}};
}

std::optional<std::string> string_field(const nlohmann::json& object, const char* key) {
  const auto found = object.find(key);
  if (found == object.end() || !found->is_string()) return std::nullopt;
  return found->get<std::string>();
}

FrameworkFacts framework_facts(const nlohmann::json& object) {
  FrameworkFacts facts;
  facts.name = string_field(object, "framework").value_or("");
  if (auto module = string_field(object, "framework_path")) facts.module = fs::path(*module);
  facts.cuda = string_field(object, "cuda");
  facts.cudnn = string_field(object, "cudnn");
  return facts;
}

// The maps snapshots' files, each once.
std::vector<MappedFile> mapped_files(const nlohmann::json& object) {
  std::vector<MappedFile> files;
  std::set<std::pair<std::string, std::uint64_t>> seen;  // (device, inode): hard links are one
  const auto maps = object.find("maps");
  if (maps == object.end() || !maps->is_array()) return files;
  for (const auto& snapshot : *maps) {
    if (!snapshot.is_string()) continue;
    for (auto& file : parse_proc_maps(snapshot.get<std::string>())) {
      if (seen.insert({file.device, file.inode}).second) files.push_back(std::move(file));
    }
  }
  return files;
}

nlohmann::json to_json(const LibraryReport& report) {
  auto libraries = nlohmann::json::array();
  for (const auto& library : report.libraries) {
    libraries.push_back({{"name", library.name},
                         {"path", library.path.string()},
                         {"in_prefix", library.in_prefix},
                         {"version", library.version}});
  }
  auto problems = nlohmann::json::array();
  for (const auto& problem : report.problems)
    problems.push_back(problem.message);
  return {{"libraries", libraries}, {"problems", problems}};
}

// The script's report with its libraries checked; a problem fails a run that
// passed or skipped.
FrameworkResult checked(nlohmann::json object, const FrameworkOptions& options) {
  const auto framework = framework_facts(object);
  FrameworkResult result;
  result.framework = framework.name;
  result.libraries =
      check_loaded_libraries(mapped_files(object), options.prefix, options.locked, framework);
  object.erase("maps");
  const auto report = to_json(result.libraries);
  for (const auto& [key, value] : report.items())
    object[key] = value;
  result.status = object.value("status", "");
  result.reason = object.value("reason", "");
  if (options.libraries_only && result.status == "skip" && !framework.name.empty() &&
      !options.skip_reason.empty()) {
    result.reason = options.skip_reason;  // no GPU: why nothing trained
  }
  if (!result.libraries.problems.empty() && result.status != "fail") {
    std::vector<std::string> messages;
    for (const auto& problem : result.libraries.problems)
      messages.push_back(problem.message);
    result.status = "fail";
    result.reason = text::join(messages, "; ");
  }
  object["status"] = result.status;
  object["reason"] = result.reason;
  result.json = object.dump();
  return result;
}

}  // namespace

std::vector<MappedFile> parse_proc_maps(std::string_view maps) {
  std::vector<MappedFile> files;
  std::set<std::pair<std::string, std::uint64_t>> seen;  // (device, inode)
  for (auto line : text::split(maps, '\n')) {
    // address perms offset device inode path
    next_field(line);
    next_field(line);
    next_field(line);
    const auto device = next_field(line);
    const auto inode = decimal_number(next_field(line));
    auto path = text::trim(line);
    if (!inode || *inode == 0 || !path.starts_with('/')) continue;
    constexpr std::string_view kDeleted = " (deleted)";
    if (path.ends_with(kDeleted)) path.remove_suffix(kDeleted.size());
    const auto colon = device.find(':');
    if (colon == std::string_view::npos || !hex_number(device.substr(0, colon)) ||
        !hex_number(device.substr(colon + 1))) {
      continue;
    }
    if (!seen.insert({std::string(device), *inode}).second) continue;
    files.push_back({fs::path(path), std::string(device), *inode});
  }
  return files;
}

std::optional<std::pair<std::string, std::string>> cuda_library_name(std::string_view file_name) {
  const auto so = file_name.find(".so");
  if (so == std::string_view::npos) return std::nullopt;
  const auto rest = file_name.substr(so + 3);
  if (!rest.empty() && rest.front() != '.') return std::nullopt;  // libfoo.sox
  const auto stem = without_hash(file_name.substr(0, so));
  if (!is_cuda_stem(stem)) return std::nullopt;
  return std::pair{std::string(stem), std::string(rest.empty() ? rest : rest.substr(1))};
}

LockedStack locked_stack(const std::optional<store::PrefixState>& state,
                         const std::optional<lock::PlatformLock>& locked) {
  LockedStack stack;
  if (locked) {
    for (const auto& package : locked->packages) {
      if (package.name == "cuda") {
        stack.cuda = package.version;
        stack.cuda_external = package.external.has_value();
      } else if (package.name == "cudnn") {
        stack.cudnn = package.version;
        stack.cudnn_external = package.external.has_value();
      }
    }
  }
  if (state) {  // what is installed is what runs
    for (const auto& package : state->packages) {
      if (package.name == "cuda") {
        if (auto version = version_of(package.version)) stack.cuda = std::move(version);
      } else if (package.name == "cudnn") {
        if (auto version = version_of(package.version)) stack.cudnn = std::move(version);
      }
    }
  }
  return stack;
}

Result<LockedStack> locked_stack_of(const fs::path& prefix, const fs::path& lock_file) {
  auto state = store::read_state(prefix);
  if (!state) return std::move(state).error();
  std::optional<lock::PlatformLock> locked;
  std::error_code ec;
  if (fs::exists(lock_file, ec)) {
    auto lockfile = lock::load(lock_file);
    if (!lockfile) return std::move(lockfile).error();
    for (auto& platform : lockfile->platforms) {
      if (platform.platform == specs::host_platform()) locked = std::move(platform);
    }
  }
  return locked_stack(*state, locked);
}

LibraryReport check_loaded_libraries(std::span<const MappedFile> mapped, const fs::path& prefix,
                                     const LockedStack& locked, const FrameworkFacts& framework) {
  LibraryReport report;
  const auto roots = prefix_roots(prefix);
  std::map<std::string, std::vector<const LoadedLibrary*>> by_name;
  for (const auto& file : mapped) {
    auto name = cuda_library_name(file.path.filename().string());
    if (!name) continue;
    report.libraries.push_back({.name = std::move(name->first),
                                .path = file.path,
                                .in_prefix = in_prefix(file.path, roots),
                                .version = std::move(name->second)});
  }
  for (const auto& library : report.libraries) {
    by_name[library.name].push_back(&library);
    if (library.name == "libcuda" && library.path.parent_path().filename() == "stubs") {
      report.problems.push_back(
          {Kind::driver_stub,
           fmt::format("the CUDA toolkit's stub {} was loaded instead of the driver's: every CUDA "
                       "call fails (CUDA_ERROR_STUB_LIBRARY)",
                       library.path.string()),
           library.path});
    } else if (!library.in_prefix && !expected_outside(library, locked)) {
      report.problems.push_back({Kind::outside_prefix,
                                 fmt::format("{} was loaded from outside the prefix: {}",
                                             library.name, library.path.string()),
                                 library.path});
    }
    if (auto problem = version_problem(library, locked)) report.problems.push_back(*problem);
  }
  for (const auto& [name, copies] : by_name) {
    if (copies.size() < 2) continue;
    std::vector<std::string> paths;
    for (const auto* copy : copies)
      paths.push_back(copy->path.string());
    // The copy to be rid of: one from outside the prefix, else the second.
    const auto outside = std::find_if(copies.begin(), copies.end(),
                                      [](const LoadedLibrary* copy) { return !copy->in_prefix; });
    const auto* odd = outside != copies.end() ? *outside : copies[1];
    report.problems.push_back({Kind::duplicate,
                               fmt::format("{} different {} files were loaded into one process: {}",
                                           copies.size(), name, text::join(paths, ", ")),
                               odd->path});
  }
  if (framework.module && !in_prefix(*framework.module, roots)) {
    report.problems.push_back({Kind::framework_outside,
                               fmt::format("{} was imported from outside the prefix: {}",
                                           framework.name, framework.module->string()),
                               *framework.module});
  }
  check_stated(framework, locked, report.problems);
  return report;
}

FrameworkResult run_framework_smoke(const FrameworkOptions& options) {
  const auto python = options.prefix / "bin" / "python3";
  std::error_code ec;
  if (!std::filesystem::exists(python, ec)) {
    return made_here("skip", fmt::format("the prefix has no Python of its own ({} is absent), so "
                                         "there is no framework to test",
                                         python.string()));
  }
  std::vector<std::string> argv = {python.string(), options.script.string()};
  if (options.libraries_only) {
    argv.emplace_back("--libraries-only");
  } else if (options.cpu_only) {
    argv.emplace_back("--cpu");
  }
  auto output = sys::run_process(argv, {.env = options.environment, .timeout = options.timeout});
  if (!output) return made_here("fail", output.error().headline());
  const auto line = std::string(text::trim(output->out));
  try {
    auto object = nlohmann::json::parse(line);
    const auto status = object.value("status", "");
    if ((status == "pass" || status == "fail" || status == "skip") && !output->timed_out)
      return checked(std::move(object), options);
  } catch (const nlohmann::json::exception&) {
    // Reported below with the script's stderr.
  }
  const auto why = output->timed_out
                       ? fmt::format("did not finish in {} s", options.timeout.count())
                       : fmt::format("exited {} without a result", output->exit_code);
  return made_here("fail",
                   fmt::format("{} {}: {}", python.string(), why, last_lines(output->err, 10)));
}

}  // namespace envkit::smoke
