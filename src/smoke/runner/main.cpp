// envkit-smoke: the GPU smoke-training test for prefixes whose NVRTC is 11.2 or newer (wheels
// included), with no compiler and no CUDA headers. envkit runs it in the prefix's environment
// (docs/smoke.md); its output is the same JSON as smoke.cu's, with what it checked added.
//
//   envkit-smoke --prefix DIR --kernels kernels.cuh --nvrtc LIB --cudnn LIB --cublas LIB
//                [--also LIB]... [--arch 8.6]... [--expect-cuda V] [--expect-cudnn V]
//                [--steps N] [--seed S] [--cpu-only] [--json]
//
// In order: open the libraries by path and bind every function; check that their versions agree
// with each other and with the lock; check that every CUDA library the process mapped comes from
// the prefix; compile the kernels with NVRTC for every --arch; then, where there is a GPU, train
// on it and compare with the CPU reference. Without a GPU it exits 77 with all of that checked.
//
// Exit status: 0 pass, 1 fail, 2 usage error, 77 skip (no GPU: everything before the launch ran).
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "gpu_net.hpp"
#include "kernel_compiler.hpp"
#include "libraries.hpp"
#include "setup_error.hpp"
#include "smoke_model.hpp"
#include "stack.hpp"

namespace envkit_smoke {
namespace {

constexpr int kExitPass = 0;
constexpr int kExitFail = 1;
constexpr int kExitUsage = 2;
constexpr int kExitSkip = 77;

using Json = nlohmann::ordered_json;

struct Options {
  std::string prefix, kernels;
  StackPaths libraries;
  std::vector<Arch> archs;
  Expected expected;
  int steps = kDefaultSteps;
  std::uint64_t seed = kDefaultSeed;
  bool cpu_only = false;
  bool json = false;
  std::string no_gpu;  // envkit's host probe found no GPU, and why: skip the GPU stage
};

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void say(const std::string& line) {
  std::fprintf(stderr, "smoke: %s\n", line.c_str());
}

unsigned long long parse_number(const std::string& flag, const char* text, unsigned long long max) {
  char* end = nullptr;
  errno = 0;
  const auto value =
      text != nullptr && *text >= '0' && *text <= '9' ? std::strtoull(text, &end, 10) : 0;
  if (text == nullptr || end == nullptr || *end != '\0' || errno != 0 || value > max ||
      (flag == "--steps" && value == 0)) {
    throw UsageError(flag + " needs a number" + (flag == "--steps" ? " from 1 to 1000000" : "") +
                     ", not " + (text != nullptr ? text : "nothing"));
  }
  return value;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const auto text = [&]() {
      const char* v = value();
      if (v == nullptr) throw UsageError(arg + " needs a value");
      return std::string(v);
    };
    if (arg == "--prefix")
      o.prefix = text();
    else if (arg == "--kernels")
      o.kernels = text();
    else if (arg == "--nvrtc")
      o.libraries.nvrtc = text();
    else if (arg == "--cudnn")
      o.libraries.cudnn = text();
    else if (arg == "--cublas")
      o.libraries.cublas = text();
    else if (arg == "--also")
      o.libraries.also.push_back(text());
    else if (arg == "--arch")
      o.archs.push_back(parse_arch(text()));
    else if (arg == "--expect-cuda")
      o.expected.cuda = text();
    else if (arg == "--expect-cudnn")
      o.expected.cudnn = text();
    else if (arg == "--steps")
      o.steps = static_cast<int>(parse_number(arg, value(), 1000000));
    else if (arg == "--seed")
      o.seed = parse_number(arg, value(), UINT64_MAX);
    else if (arg == "--no-gpu")
      o.no_gpu = text();
    else if (arg == "--cpu-only")
      o.cpu_only = true;
    else if (arg == "--json")
      o.json = true;
    else
      throw UsageError("unknown argument: " + arg);
  }
  if (o.prefix.empty() || o.kernels.empty() || o.libraries.nvrtc.empty() ||
      o.libraries.cudnn.empty() || o.libraries.cublas.empty()) {
    throw UsageError("--prefix, --kernels, --nvrtc, --cudnn and --cublas are required");
  }
  return o;
}

// The report: smoke.cu's fields (share/envkit/smoke/README.md), then what envkit-smoke checked.
struct Report {
  Json out = Json::object();
  std::string reason;
  void fail(const std::string& why) { reason += (reason.empty() ? "" : "; ") + why; }
};

Json field(const std::optional<double>& value) {
  return value && std::isfinite(*value) ? Json(*value) : Json(nullptr);
}

void record_training(Report& report, const TrainResult& result, int steps, const char* where) {
  report.out["loss_first"] = field(result.loss_first);
  report.out["loss_last"] = field(result.loss_last);
  report.out["accuracy"] = field(result.accuracy);
  char line[200];
  std::snprintf(line, sizeof line,
                "trained %d steps on the %s: training-set loss %.4g -> %.4g, accuracy %.1f%%",
                steps, where, result.loss_first, result.loss_last, 100 * result.accuracy);
  say(line);
  if (const auto failed = check_training(result); !failed.empty()) report.fail(failed);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SetupError("cannot read the smoke kernels at " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The libraries the process mapped, in the report; those outside the prefix fail the test.
void check_mapped(Report& report, const std::string& prefix) {
  Json libraries = Json::array();
  for (const auto& library : mapped_cuda_libraries(prefix)) {
    libraries.push_back({{"name", library.name},
                         {"path", library.path},
                         {"in_prefix", library.in_prefix},
                         {"driver", library.driver}});
    if (!library.in_prefix && !library.driver) {
      report.fail(library.name + " was loaded from " + library.path + ", outside the prefix");
    }
    say(std::string(library.in_prefix ? "loaded " : (library.driver ? "driver " : "OUTSIDE ")) +
        library.path);
  }
  report.out["libraries"] = libraries;
}

struct GpuFound {
  abi::Driver driver{};
  Device device;
  std::string name;
  Arch arch = 0;
  std::string driver_version;
  std::string uuid;  // hex; envkit keeps only its hash (verified.json)
};

// Why cuInit found no device, with the code's name: the stub's text is no help.
std::string init_failure(const abi::Driver& d, abi::CUresult result) {
  const char* text = nullptr;
  d.cuGetErrorString(result, &text);
  if (result == abi::CUDA_ERROR_STUB_LIBRARY)
    return "CUDA_ERROR_STUB_LIBRARY: this libcuda.so.1 is the toolkit's link-time stub, not a "
           "driver";
  return "error " + std::to_string(result) + (text != nullptr ? std::string(": ") + text : "");
}

// The driver and GPU 0, or the reason there is none (a skip). A driver too old for the prefix's
// CUDA is a failure: the stack cannot work on this machine, which is what the test is for.
std::optional<GpuFound> find_gpu(Report& report, std::string& skip_reason) {
  std::optional<Library> libcuda;
  try {
    libcuda.emplace("libcuda.so.1");
  } catch (const SetupError& e) {
    skip_reason = std::string("no NVIDIA driver: ") + e.what();
    return std::nullopt;
  }
  GpuFound found;
  auto& d = found.driver;
#define ENVKIT_BIND_DRIVER(function) libcuda->bind(d.function, #function)
  ENVKIT_BIND_DRIVER(cuInit);
  ENVKIT_BIND_DRIVER(cuDriverGetVersion);
  ENVKIT_BIND_DRIVER(cuDeviceGetCount);
  ENVKIT_BIND_DRIVER(cuDeviceGet);
  ENVKIT_BIND_DRIVER(cuDeviceGetName);
  ENVKIT_BIND_DRIVER(cuDeviceGetAttribute);
  ENVKIT_BIND_DRIVER(cuDevicePrimaryCtxRetain);
  ENVKIT_BIND_DRIVER(cuCtxSetCurrent);
  ENVKIT_BIND_DRIVER(cuCtxSynchronize);
  ENVKIT_BIND_DRIVER(cuModuleLoadData);
  ENVKIT_BIND_DRIVER(cuModuleGetFunction);
  ENVKIT_BIND_DRIVER(cuLaunchKernel);
  ENVKIT_BIND_DRIVER(cuMemAlloc_v2);
  ENVKIT_BIND_DRIVER(cuMemFree_v2);
  ENVKIT_BIND_DRIVER(cuMemcpyHtoD_v2);
  ENVKIT_BIND_DRIVER(cuMemcpyDtoH_v2);
  ENVKIT_BIND_DRIVER(cuEventCreate);
  ENVKIT_BIND_DRIVER(cuEventRecord);
  ENVKIT_BIND_DRIVER(cuEventSynchronize);
  ENVKIT_BIND_DRIVER(cuEventElapsedTime);
  ENVKIT_BIND_DRIVER(cuGetErrorName);
  ENVKIT_BIND_DRIVER(cuGetErrorString);
#undef ENVKIT_BIND_DRIVER
  libcuda->bind_optional(d.cuDeviceGetUuid, "cuDeviceGetUuid");
  libcuda->check_bound("CUDA driver");
  found.device.driver = &found.driver;
  int version = 0;
  if (d.cuDriverGetVersion(&version) == abi::CUDA_SUCCESS && version > 0) {
    found.driver_version = cuda_version_text(version);
    report.out["driver"] = found.driver_version;
  }
  const auto init = d.cuInit(0);
  if (init == abi::CUDA_ERROR_NO_DEVICE || init == abi::CUDA_ERROR_STUB_LIBRARY ||
      init == abi::CUDA_ERROR_NOT_INITIALIZED) {
    skip_reason = "no CUDA device: cuInit: " + init_failure(d, init) + " (" + libcuda->path() + ")";
    return std::nullopt;
  }
  found.device.check(init, "cuInit");
  int count = 0;
  found.device.check(d.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count == 0) {
    skip_reason = "no CUDA device: cuDeviceGetCount found 0 devices";
    return std::nullopt;
  }
  found.device.check(d.cuDeviceGet(&found.device.device, 0), "cuDeviceGet");
  char name[256] = {};
  found.device.check(d.cuDeviceGetName(name, sizeof name - 1, found.device.device),
                     "cuDeviceGetName");
  found.name = name;
  unsigned char uuid[16] = {};
  if (d.cuDeviceGetUuid != nullptr &&
      d.cuDeviceGetUuid(uuid, found.device.device) == abi::CUDA_SUCCESS) {
    char hex[33] = {};
    for (int i = 0; i < 16; ++i)
      std::snprintf(hex + 2 * i, 3, "%02x", uuid[i]);
    found.uuid = hex;
  }
  int major = 0, minor = 0;
  found.device.check(
      d.cuDeviceGetAttribute(&major, abi::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                             found.device.device),
      "cuDeviceGetAttribute");
  found.device.check(
      d.cuDeviceGetAttribute(&minor, abi::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                             found.device.device),
      "cuDeviceGetAttribute");
  found.arch = major * 10 + minor;
  abi::CUcontext context = nullptr;
  found.device.check(d.cuDevicePrimaryCtxRetain(&context, found.device.device),
                     "cuDevicePrimaryCtxRetain");
  found.device.check(d.cuCtxSetCurrent(context), "cuCtxSetCurrent");
  say("GPU 0 of " + std::to_string(count) + ": " + found.name + ", compute capability " +
      arch_text(found.arch) + ", driver CUDA " + found.driver_version);
  return found;
}

int train_on_gpu(Report& report, const Options& o, const Stack& stack, const GpuFound& gpu,
                 const CompiledKernels& kernels) {
  report.out["gpu"] = gpu.name;
  if (!gpu.uuid.empty()) report.out["gpu_uuid"] = gpu.uuid;
  report.out["compute_capability"] = arch_text(gpu.arch);
  const Dataset data = make_dataset(o.seed);
  const Params<float> init = init_params(o.seed);
  GpuNet net(gpu.device, stack, kernels.image, data, init);
  say("loaded the kernels' " + kernels.target() + " image on the GPU");

  net.forward_backward(batch_start(0));
  const auto reference = check_first_step(net.batch_loss(), net.gradients(), init, data);
  report.out["max_reference_error"] = field(reference.max_error);
  say("first step vs CPU reference, relative error: " + reference.errors);
  if (!reference.failure.empty()) report.fail(reference.failure);

  TrainResult result;
  result.loss_first = net.evaluate(data).loss;
  const double gpu_seconds = net.train(o.steps);
  const Evaluation last = net.evaluate(data);
  result.loss_last = last.loss;
  result.accuracy = last.accuracy;
  report.out["gpu_seconds"] = gpu_seconds;
  record_training(report, result, o.steps, "GPU");

  double cpu_seconds = 0.0;
  static_cast<void>(train_reference(data, o.seed, o.steps, cpu_seconds));
  report.out["cpu_seconds"] = cpu_seconds;
  char line[160];
  std::snprintf(line, sizeof line, "time for %d steps: GPU %.4f s, CPU reference %.3f s (%.1fx)",
                o.steps, gpu_seconds, cpu_seconds,
                gpu_seconds > 0 ? cpu_seconds / gpu_seconds : 0.0);
  say(line);
  return report.reason.empty() ? kExitPass : kExitFail;
}

int train_on_cpu(Report& report, const Options& o) {
  say("--cpu-only: training with the CPU reference");
  const Dataset data = make_dataset(o.seed);
  double seconds = 0.0;
  const auto result = train_reference(data, o.seed, o.steps, seconds);
  report.out["cpu_seconds"] = seconds;
  record_training(report, result, o.steps, "CPU");
  return report.reason.empty() ? kExitPass : kExitFail;
}

int run(Report& report, const Options& o) {
  const Stack stack = open_stack(o.libraries);
  const auto& v = stack.versions;
  report.out["cuda_runtime"] = v.nvrtc;
  report.out["cudnn"] = v.cudnn;
  report.out["versions"] = {{"nvrtc", v.nvrtc},
                            {"cublas", v.cublas},
                            {"cudnn", v.cudnn},
                            {"cudnn_built_for_cuda", v.cudnn_cuda}};
  say("NVRTC " + v.nvrtc + ", cuBLAS " + v.cublas + ", cuDNN " + v.cudnn + " (built for CUDA " +
      v.cudnn_cuda + ")");
  if (!stack.deferred.empty()) report.out["deferred"] = stack.deferred;
  for (const auto& deferred : stack.deferred)
    say("not loaded: " + deferred);
  for (const auto& problem : version_problems(v, o.expected))
    report.fail(problem);
  if (report.reason.empty()) say("versions agree with each other and with the lock");

  // Compile first, for every architecture asked: no GPU is needed for it.
  const std::string source = read_text(o.kernels);
  std::vector<CompiledKernels> compiled;
  Json kernels = Json::array();
  std::set<Arch> archs(o.archs.begin(), o.archs.end());
  if (archs.empty()) {
    // Where the lock states no GPU: the oldest architecture this NVRTC compiles for.
    if (const auto oldest = oldest_supported_arch(stack.nvrtc)) archs.insert(*oldest);
  }
  for (Arch arch : archs) {
    try {
      compiled.push_back(compile_kernels(stack.nvrtc, source, arch));
      kernels.push_back(
          {{"target", compiled.back().target()}, {"bytes", compiled.back().image.size()}});
      say("compiled the kernels for " + compiled.back().target() + " with NVRTC " + v.nvrtc);
    } catch (const SetupError& e) {  // the other architectures are still worth knowing
      kernels.push_back({{"target", "sm_" + std::to_string(arch)}, {"error", e.what()}});
      report.fail(e.what());
    }
  }
  report.out["kernels"] = kernels;

  if (o.cpu_only) {
    check_mapped(report, o.prefix);
    const int code = train_on_cpu(report, o);
    return report.reason.empty() ? code : kExitFail;
  }
  std::string skip_reason = o.no_gpu;
  const auto gpu = o.no_gpu.empty() ? find_gpu(report, skip_reason) : std::nullopt;
  if (!gpu) {
    check_mapped(report, o.prefix);
    if (!report.reason.empty()) return kExitFail;
    report.reason = skip_reason + "; checked everything up to the kernel launch";
    return kExitSkip;
  }
  // CUDA 11 and later run on any driver of their major (minor version compatibility); an older
  // major cannot run the prefix's cuDNN and cuBLAS at all.
  if (const int driver_major = std::atoi(gpu->driver_version.c_str());
      driver_major > 0 && driver_major < v.nvrtc_major) {
    check_mapped(report, o.prefix);
    report.fail("the NVIDIA driver supports CUDA " + gpu->driver_version +
                ", older than the CUDA " + std::to_string(v.nvrtc_major) +
                " the prefix's libraries need");
    return kExitFail;
  }
  const auto it = std::find_if(compiled.begin(), compiled.end(),
                               [&](const auto& c) { return c.arch == gpu->arch; });
  const CompiledKernels kernels_here =
      it != compiled.end() ? *it : compile_kernels(stack.nvrtc, source, gpu->arch);
  if (it == compiled.end()) {
    report.out["kernels"].push_back(
        {{"target", kernels_here.target()}, {"bytes", kernels_here.image.size()}});
  }
  const int code = train_on_gpu(report, o, stack, *gpu, kernels_here);
  check_mapped(report, o.prefix);  // now with everything cuDNN and cuBLAS opened while training
  return report.reason.empty() ? code : kExitFail;
}

}  // namespace
}  // namespace envkit_smoke

int main(int argc, char** argv) {
  using namespace envkit_smoke;
  Options options;
  try {
    options = parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "envkit-smoke: %s\n", e.what());
    return kExitUsage;
  }
  Report report;
  for (const char* name : {"status", "reason", "gpu", "compute_capability", "driver",
                           "cuda_runtime", "cudnn", "steps", "loss_first", "loss_last", "accuracy",
                           "max_reference_error", "gpu_seconds", "cpu_seconds"}) {
    report.out[name] = nullptr;
  }
  report.out["steps"] = options.steps;
  report.out["compiler"] = "nvrtc";
  int code = kExitFail;
  try {
    code = run(report, options);
  } catch (const std::exception& e) {
    report.fail(e.what());
    code = kExitFail;
  }
  const char* status = code == kExitPass ? "pass" : (code == kExitSkip ? "skip" : "fail");
  report.out["status"] = status;
  report.out["reason"] = report.reason;
  say(code == kExitPass ? std::string("PASS")
                        : (code == kExitSkip ? "SKIP: " : "FAIL: ") + report.reason);
  if (options.json) std::cout << report.out.dump() << '\n';
  return code;
}
