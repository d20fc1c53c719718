#include "envkit/smoke/runtime_stack.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "envkit/core/text.hpp"

namespace envkit::smoke {

namespace {

namespace fs = std::filesystem;

// The first version after `lib<name>.so.`: {12} for libnvrtc.so.12, {11, 2} for
// libnvrtc.so.11.2; empty when the name is not a versioned file of `name`.
std::vector<unsigned> soname_version(std::string_view file, std::string_view name) {
  const auto stem = fmt::format("lib{}.so.", name);
  if (!file.starts_with(stem)) return {};
  std::vector<unsigned> parts;
  auto rest = file.substr(stem.size());
  while (!rest.empty()) {
    unsigned value = 0;
    const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
    if (error != std::errc()) return {};
    parts.push_back(value);
    rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
    if (!rest.empty() && rest.front() != '.') return {};
    if (!rest.empty()) rest.remove_prefix(1);
  }
  return parts;
}

// The soname-like file of `name` with the newest version: the shortest name of the newest
// major (libcudnn.so.9 over libcudnn.so.9.1.0).
std::optional<std::string> newest(const std::vector<std::string>& files, std::string_view name) {
  std::optional<std::string> best;
  std::vector<unsigned> best_version;
  for (const auto& file : files) {
    const auto version = soname_version(file, name);
    if (version.empty()) continue;
    if (!best || version.front() > best_version.front() ||
        (version.front() == best_version.front() && file.size() < best->size())) {
      best = file;
      best_version = version;
    }
  }
  return best;
}

// NVRTC 11.2 is the first with nvrtcGetCUBIN and nvrtcGetSupportedArchs both, and the first
// whose soname stays libnvrtc.so.11.2 for the rest of CUDA 11 (so the file name tells).
bool new_enough(const std::vector<unsigned>& nvrtc) {
  return nvrtc.front() > 11 || (nvrtc.front() == 11 && nvrtc.size() > 1 && nvrtc[1] >= 2);
}

}  // namespace

Result<std::optional<RuntimeStack>> find_runtime_stack(const fs::path& prefix) {
  const auto lib = prefix / "lib";
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(lib, ec))
    files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  const auto nvrtc = newest(files, "nvrtc");
  if (!nvrtc || !new_enough(soname_version(*nvrtc, "nvrtc"))) return std::optional<RuntimeStack>{};
  const auto cudnn = newest(files, "cudnn");
  const auto cublas = newest(files, "cublas");
  if (!cudnn || !cublas) {
    std::vector<std::string> missing;
    if (!cudnn) missing.emplace_back("lib/libcudnn.so.* (add `cudnn` to `requires:`)");
    if (!cublas) missing.emplace_back("lib/libcublas.so.* (CUDA's cuBLAS)");
    return Error::failed(fmt::format("the prefix {} lacks what the smoke program needs",
                                     text::quoted(prefix.string())))
        .because(fmt::format("missing: {}", fmt::join(missing, ", ")))
        .hint("run `envkit install` after adding it to envkit.yaml");
  }
  RuntimeStack stack{.nvrtc = lib / *nvrtc, .cudnn = lib / *cudnn, .cublas = lib / *cublas};
  const auto cudnn_major = soname_version(*cudnn, "cudnn").front();
  for (const auto& file : files) {
    // libcudnn_cnn.so.9, libcudnn_ops_infer.so.8, ...: of the same major only.
    const auto dot = file.find(".so.");
    if (file.starts_with("libcudnn_") && dot != std::string::npos &&
        file.substr(dot + 4) == std::to_string(cudnn_major)) {
      stack.also.push_back(lib / file);
    }
  }
  if (const auto lt = newest(files, "cublasLt")) stack.also.push_back(lib / *lt);
  return std::optional<RuntimeStack>{std::move(stack)};
}

Result<fs::path> runner_path() {
  std::error_code ec;
  const auto exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return Error::failed("cannot find envkit's own binary (/proc/self/exe)");
  for (const auto& candidate :
       {exe.parent_path() / "envkit-smoke",
        exe.parent_path().parent_path() / "libexec" / "envkit" / "envkit-smoke"}) {
    if (fs::exists(candidate, ec)) return candidate;
  }
  return Error::failed("envkit-smoke is missing beside " + exe.string() + " and in " +
                       (exe.parent_path().parent_path() / "libexec" / "envkit").string())
      .hint("reinstall envkit: `cmake --install` puts envkit-smoke in libexec/envkit/");
}

std::vector<std::string> runner_arguments(const RunnerRequest& request) {
  std::vector<std::string> args = {
      "--prefix", request.prefix.string(),      "--kernels", request.kernels.string(),
      "--nvrtc",  request.stack.nvrtc.string(), "--cudnn",   request.stack.cudnn.string(),
      "--cublas", request.stack.cublas.string()};
  for (const auto& also : request.stack.also) {
    args.emplace_back("--also");
    args.push_back(also.string());
  }
  for (const auto& capability : request.capabilities) {
    args.emplace_back("--arch");
    args.push_back(capability.to_string());
  }
  if (!request.expect_cuda.empty()) args.insert(args.end(), {"--expect-cuda", request.expect_cuda});
  if (!request.expect_cudnn.empty())
    args.insert(args.end(), {"--expect-cudnn", request.expect_cudnn});
  if (request.no_gpu) args.insert(args.end(), {"--no-gpu", *request.no_gpu});
  return args;
}

}  // namespace envkit::smoke
