#include "envkit/smoke/build.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>

#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/smoke/host_compiler.hpp"
#include "envkit/sys/fs.hpp"
#include "envkit/sys/process.hpp"

namespace envkit::smoke {

namespace {

namespace fs = std::filesystem;

// nvcc needs a minute or two for smoke.cu on a small machine; more per GPU architecture.
constexpr auto kCompileTimeout = std::chrono::minutes(20);
constexpr std::size_t kLogTailLines = 20;

// The versioned files of library `name` (`libcudnn.so.9`, `libcudnn.so.9.1.0`).
bool is_versioned(std::string_view file, std::string_view name) {
  const auto stem = fmt::format("lib{}.so.", name);
  return file.starts_with(stem) && file.size() > stem.size();
}

// The number after `.so.`: 9 in libcudnn.so.9.1.0 (0 when it is not a number).
unsigned soname_major(std::string_view file, std::string_view name) {
  const auto digits = file.substr(fmt::format("lib{}.so.", name).size());
  unsigned major = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), major);
  return major;
}

std::vector<std::string> file_names(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool present(const fs::path& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

// A program's output, or the error of a program that would not start.
Result<sys::ProcessOutput> run(const std::vector<std::string>& argv, const BuildRequest& request,
                               std::chrono::milliseconds timeout) {
  return sys::run_process(argv, {.env = request.environment, .timeout = timeout});
}

// The first line of `<compiler> --version` (`gcc (Debian 12.2.0-14) 12.2.0`).
std::string compiler_version(const std::string& compiler, const BuildRequest& request) {
  auto output = run({compiler, "--version"}, request, std::chrono::seconds(30));
  if (!output || output->exit_code != 0) return "";
  return std::string(text::trim(output->out.substr(0, output->out.find('\n'))));
}

// One host compiler nvcc may be given, and where its build lives in the cache.
struct Attempt {
  std::string host_compiler;  // `gcc`, nvcc's default, or a path given with -ccbin
  bool is_default = false;
  fs::path dir;  // <cache>/smoke/<key>
};

// What the compile shares between attempts.
struct Inputs {
  CacheKeyInputs key;
  std::vector<std::string> link_flags;
  fs::path smoke_cu;
};

Attempt attempt_for(std::string host_compiler, bool is_default, Inputs inputs,
                    const BuildRequest& request) {
  // The default compiler is whatever `gcc` on PATH is; its path names it in the key.
  const auto path = is_default ? sys::find_on_path("gcc") : std::optional<fs::path>(host_compiler);
  inputs.key.host_compiler = path ? path->string() : host_compiler;
  inputs.key.host_compiler_version = compiler_version(inputs.key.host_compiler, request);
  const auto key = cache_key(inputs.key);
  return {std::move(host_compiler), is_default, request.cache_dir / "smoke" / key};
}

// The nvcc command line for one attempt.
std::vector<std::string> nvcc_command(const Attempt& attempt, const Inputs& inputs,
                                      const BuildRequest& request, const fs::path& output) {
  const auto& prefix = request.toolchain.prefix;
  std::vector<std::string> argv = {request.toolchain.nvcc.string(), "-std=c++17", "-O2"};
  argv.insert(argv.end(), request.gencode.begin(), request.gencode.end());
  if (!attempt.is_default) {
    argv.push_back("-ccbin");
    argv.push_back(attempt.host_compiler);
  }
  argv.push_back("-I" + (prefix / "include").string());
  argv.push_back(inputs.smoke_cu.string());
  argv.push_back("-o");
  argv.push_back(output.string());
  argv.push_back("-L" + (prefix / "lib").string());
  argv.insert(argv.end(), inputs.link_flags.begin(), inputs.link_flags.end());
  return argv;
}

// The outcome of one compile: the binary, nvcc refusing the host compiler, or an error.
struct Compiled {
  std::optional<Built> built;
  std::optional<int> gcc_limit;  // nvcc refused this host compiler: the newest GCC it takes
};

Result<Compiled> compile(const Attempt& attempt, const Inputs& inputs,
                         const BuildRequest& request) {
  std::error_code ec;
  fs::create_directories(attempt.dir, ec);
  if (ec) {
    return Error::failed(fmt::format("cannot create {}", text::quoted(attempt.dir.string())))
        .because(ec.message())
        .hint("choose another cache folder with --cache-dir DIR or ENVKIT_CACHE_DIR");
  }
  const auto binary = attempt.dir / "smoke";
  const auto temporary = attempt.dir / fmt::format("smoke.tmp-{}", ::getpid());
  const auto log_path = attempt.dir / "nvcc.log";
  const auto argv = nvcc_command(attempt, inputs, request, temporary);
  auto output = run(argv, request, kCompileTimeout);
  if (!output) return std::move(output).error();
  const auto log = fmt::format("$ {}\n{}{}", text::join(argv, " "), output->out, output->err);
  if (auto written = sys::write_file_atomic(log_path, log); !written) return written.error();

  if (output->exit_code == 0 && !output->timed_out) {
    fs::rename(temporary, binary, ec);
    if (ec) {
      return Error::failed(
                 fmt::format("cannot move the smoke binary into {}", text::quoted(binary.string())))
          .because(ec.message());
    }
    return Compiled{.built = Built{.binary = binary,
                                   .reused = false,
                                   .host_compiler = attempt.host_compiler,
                                   .log = log_path},
                    .gcc_limit = std::nullopt};
  }
  fs::remove(temporary, ec);
  if (auto limit = parse_gcc_limit(log); limit && !output->timed_out) {
    // Remembered, so the next run goes straight to the older compiler.
    if (attempt.is_default) (void)sys::write_file_atomic(attempt.dir / "refused.log", log);
    return Compiled{.built = std::nullopt, .gcc_limit = limit};
  }
  auto error = Error::failed(output->timed_out
                                 ? fmt::format("nvcc did not finish compiling the smoke program "
                                               "in {} minutes",
                                               kCompileTimeout.count())
                                 : "nvcc could not compile the smoke program");
  error.because(fmt::format("nvcc's last lines:\n{}", last_lines(log, kLogTailLines)));
  if (log.find("Unsupported gpu architecture") != std::string::npos) {
    error.hint(
        "this CUDA's nvcc cannot build for this machine's GPU: its compute capability is "
        "newer or older than the CUDA release supports; lock a CUDA that supports it");
  }
  return std::move(error.hint(fmt::format("the whole log: {}", log_path.string())));
}

// The newest `g++-N` on PATH that nvcc accepts (N <= limit), as a path.
std::optional<std::string> older_host_compiler(int limit) {
  const auto candidates = host_compiler_candidates(limit);
  std::vector<std::string> available;
  for (const auto& name : candidates) {
    if (sys::find_on_path(name)) available.push_back(name);
  }
  const auto chosen = choose_host_compiler(candidates, available);
  if (!chosen) return std::nullopt;
  return sys::find_on_path(*chosen)->string();
}

// The release line of `nvcc --version` (`Cuda compilation tools, release 13.0, V13.0.88`).
std::string release_line(std::string_view version_output) {
  for (auto line : text::split(version_output, '\n')) {
    if (line.find("release") != std::string_view::npos) return std::string(text::trim(line));
  }
  return std::string(text::trim(version_output));
}

// The cached binary of `attempt`, or the compile that makes it.
Result<Compiled> cached_or_compiled(const Attempt& attempt, const Inputs& inputs,
                                    const BuildRequest& request) {
  if (present(attempt.dir / "smoke")) {
    return Compiled{.built = Built{.binary = attempt.dir / "smoke",
                                   .reused = true,
                                   .host_compiler = attempt.host_compiler,
                                   .log = attempt.dir / "nvcc.log"},
                    .gcc_limit = std::nullopt};
  }
  if (auto refused = sys::read_file(attempt.dir / "refused.log")) {
    if (auto limit = parse_gcc_limit(*refused))
      return Compiled{.built = std::nullopt, .gcc_limit = limit};
  }
  if (request.say) {
    request.say(
        fmt::format("compiling the smoke program with {} ({}){}; this can take a minute or two",
                    request.toolchain.nvcc.string(), release_line(inputs.key.nvcc_version),
                    attempt.is_default ? "" : ", host compiler " + attempt.host_compiler));
  }
  return compile(attempt, inputs, request);
}

}  // namespace

fs::path sources_dir() {
  if (auto installed = sys::installed_data_dir("smoke")) return *installed;
  return fs::path(ENVKIT_SOURCE_SMOKE_DIR);
}

std::optional<std::string> link_flag(std::string_view name,
                                     std::span<const std::string> lib_files) {
  const auto unversioned = fmt::format("lib{}.so", name);
  if (std::find(lib_files.begin(), lib_files.end(), unversioned) != lib_files.end())
    return fmt::format("-l{}", name);
  std::optional<std::string> best;
  for (const auto& file : lib_files) {
    if (!is_versioned(file, name)) continue;
    // The newest major; of one major, the shortest name (the soname itself).
    if (!best || soname_major(file, name) > soname_major(*best, name) ||
        (soname_major(file, name) == soname_major(*best, name) && file.size() < best->size())) {
      best = file;
    }
  }
  if (!best) return std::nullopt;
  return "-l:" + *best;
}

Result<Toolchain> check_prefix(const fs::path& prefix) {
  Toolchain toolchain{.prefix = prefix, .nvcc = prefix / "bin" / "nvcc", .link_flags = {}};
  std::vector<std::string> missing;
  std::vector<std::string> hints;
  if (!present(toolchain.nvcc)) {
    missing.emplace_back("bin/nvcc, CUDA's compiler");
    hints.emplace_back(
        "nvcc comes with CUDA's `cuda_nvcc` component; NVIDIA's CUDA 12 wheels carry no nvcc "
        "binary; NVIDIA's archives do: `envkit install --packaging archive` where they can be "
        "downloaded (developer.download.nvidia.com, or a mirror of it with --mirror)");
  }
  const auto include = prefix / "include";
  const bool cudnn_header = present(include / "cudnn.h") || present(include / "cudnn_version.h");
  const auto lib_files = file_names(prefix / "lib");
  const auto cudnn = link_flag("cudnn", lib_files);
  if (!cudnn_header || !cudnn) {
    missing.emplace_back(cudnn          ? "include/cudnn.h"
                         : cudnn_header ? "lib/libcudnn.so"
                                        : "cuDNN (include/cudnn.h, lib/libcudnn.so)");
    hints.emplace_back(
        "add cuDNN to the project (`requires:` with `cudnn: \"9\"` in envkit.yaml), then run "
        "`envkit install`");
  }
  const auto cublas = link_flag("cublas", lib_files);
  if (!cublas) {
    missing.emplace_back("lib/libcublas.so, cuBLAS");
    hints.emplace_back(
        "cuBLAS is one of CUDA's default components (`libcublas`): `envkit install` puts it in "
        "unless the lock leaves it out");
  }
  if (!missing.empty()) {
    auto error =
        Error::failed(fmt::format("the prefix {} lacks what the smoke test builds with: {}",
                                  text::quoted(prefix.string()), text::join(missing, ", ")));
    for (auto& hint : hints)
      error.hint(std::move(hint));
    return error;
  }
  if (cudnn) toolchain.link_flags.push_back(*cudnn);
  if (cublas) toolchain.link_flags.push_back(*cublas);
  return toolchain;
}

std::string cache_key(const CacheKeyInputs& inputs) {
  core::Sha256 hash;
  const auto add = [&hash](std::string_view part) {
    hash.update(fmt::format("{}:", part.size()));
    hash.update(part);
  };
  add("envkit-smoke-v1");
  add(inputs.smoke_cu);
  add(inputs.smoke_model);
  add(inputs.nvcc_version);
  add(std::to_string(inputs.nvcc_flags.size()));
  for (const auto& flag : inputs.nvcc_flags)
    add(flag);
  add(inputs.host_compiler);
  add(inputs.host_compiler_version);
  add(inputs.prefix_packages);
  return hash.hex_digest();
}

Result<Built> build(const BuildRequest& request) {
  const auto& toolchain = request.toolchain;
  Inputs inputs{
      .key = {}, .link_flags = toolchain.link_flags, .smoke_cu = request.sources / "smoke.cu"};
  auto cu = sys::read_file(inputs.smoke_cu);
  auto kernels = sys::read_file(request.sources / "kernels.cuh");
  auto model = sys::read_file(request.sources / "smoke_model.hpp");
  if (cu && !kernels) cu = std::move(kernels);
  if (!cu || !model) {
    return Error::failed(fmt::format("the smoke program's sources are missing from {}",
                                     text::quoted(request.sources.string())))
        .because((cu ? model : cu).error().headline())
        .hint("reinstall envkit: `cmake --install` puts them in share/envkit/smoke");
  }
  inputs.key.smoke_cu = *std::move(cu) + *kernels;  // smoke.cu includes kernels.cuh
  inputs.key.smoke_model = *std::move(model);
  auto version = run({toolchain.nvcc.string(), "--version"}, request, std::chrono::minutes(1));
  if (!version) return std::move(version).error();
  if (version->exit_code != 0) {
    return Error::failed(fmt::format("{} --version failed (exit {})", toolchain.nvcc.string(),
                                     version->exit_code))
        .because(last_lines(version->out + version->err, kLogTailLines))
        .hint("reinstall the prefix: `envkit install`");
  }
  inputs.key.nvcc_version = version->out;
  inputs.key.nvcc_flags = request.gencode;
  inputs.key.nvcc_flags.insert(inputs.key.nvcc_flags.end(), inputs.link_flags.begin(),
                               inputs.link_flags.end());
  inputs.key.prefix_packages = request.prefix_packages;

  const auto first = attempt_for("gcc", true, inputs, request);
  auto compiled = cached_or_compiled(first, inputs, request);
  if (!compiled) return std::move(compiled).error();
  if (compiled->built) return *std::move(compiled->built);

  const int limit = *compiled->gcc_limit;
  const auto older = older_host_compiler(limit);
  if (!older) {
    auto error = Error::failed(fmt::format("{} accepts GCC {} at most, and no older GCC is on PATH",
                                           release_line(inputs.key.nvcc_version), limit));
    error.because(fmt::format("the default host compiler is {}", compiler_version("gcc", request)));
    for (auto& hint : no_host_compiler_hints(limit))
      error.hint(std::move(hint));
    return error;
  }
  if (request.say) request.say(fmt::format("nvcc accepts GCC {} at most; using {}", limit, *older));
  const auto second = attempt_for(*older, false, inputs, request);
  compiled = cached_or_compiled(second, inputs, request);
  if (!compiled) return std::move(compiled).error();
  if (compiled->built) return *std::move(compiled->built);
  return Error::failed(fmt::format("nvcc refused {} as well (it accepts GCC {} at most)", *older,
                                   *compiled->gcc_limit))
      .hint(fmt::format("the whole log: {}", (second.dir / "nvcc.log").string()));
}

std::string last_lines(std::string_view text, std::size_t count) {
  auto lines = text::split(text, '\n');
  while (!lines.empty() && text::trim(lines.back()).empty())
    lines.pop_back();
  const auto from = lines.size() > count ? lines.size() - count : 0;
  std::string out;
  for (auto i = from; i < lines.size(); ++i)
    out += fmt::format("{}    {}", out.empty() ? "" : "\n", lines[i]);
  return out;
}

}  // namespace envkit::smoke
