#include "kernel_compiler.hpp"

#include <charconv>
#include <vector>

#include "setup_error.hpp"

namespace envkit_smoke {

namespace {

std::string nvrtc_error(const abi::Nvrtc& nvrtc, abi::nvrtcResult result) {
  const char* text = nvrtc.nvrtcGetErrorString(result);
  return text != nullptr ? text : "NVRTC error " + std::to_string(result);
}

std::string program_log(const abi::Nvrtc& nvrtc, abi::nvrtcProgram program) {
  std::size_t size = 0;
  if (nvrtc.nvrtcGetProgramLogSize(program, &size) != abi::NVRTC_SUCCESS || size <= 1) return "";
  std::string log(size, '\0');
  if (nvrtc.nvrtcGetProgramLog(program, log.data()) != abi::NVRTC_SUCCESS) return "";
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
    log.pop_back();
  return log;
}

// What this NVRTC says it compiles for (11.2 and later), oldest first; empty where it cannot say.
std::vector<int> supported(const abi::Nvrtc& nvrtc) {
  if (nvrtc.nvrtcGetNumSupportedArchs == nullptr || nvrtc.nvrtcGetSupportedArchs == nullptr)
    return {};
  int count = 0;
  if (nvrtc.nvrtcGetNumSupportedArchs(&count) != abi::NVRTC_SUCCESS || count <= 0 || count > 256)
    return {};
  std::vector<int> archs(static_cast<std::size_t>(count));
  if (nvrtc.nvrtcGetSupportedArchs(archs.data()) != abi::NVRTC_SUCCESS) return {};
  return archs;
}

// "sm_75 sm_80 ..." where this NVRTC can say.
std::string supported_archs(const abi::Nvrtc& nvrtc) {
  std::string out;
  for (int arch : supported(nvrtc))
    out += (out.empty() ? "sm_" : " sm_") + std::to_string(arch);
  return out;
}

// The compiled image: CUBIN where NVRTC makes one, else PTX.
std::string image_of(const abi::Nvrtc& nvrtc, abi::nvrtcProgram program, bool sass) {
  std::size_t size = 0;
  std::string image;
  const bool ok = sass ? nvrtc.nvrtcGetCUBINSize(program, &size) == abi::NVRTC_SUCCESS
                       : nvrtc.nvrtcGetPTXSize(program, &size) == abi::NVRTC_SUCCESS;
  if (!ok || size == 0) throw SetupError("NVRTC compiled the kernels but returned no image");
  image.resize(size);
  const bool got = sass ? nvrtc.nvrtcGetCUBIN(program, image.data()) == abi::NVRTC_SUCCESS
                        : nvrtc.nvrtcGetPTX(program, image.data()) == abi::NVRTC_SUCCESS;
  if (!got) throw SetupError("NVRTC compiled the kernels but returned no image");
  return image;
}

}  // namespace

std::optional<Arch> oldest_supported_arch(const abi::Nvrtc& nvrtc) {
  const auto archs = supported(nvrtc);
  if (archs.empty()) return std::nullopt;
  return archs.front();
}

Arch parse_arch(const std::string& text) {
  const auto dot = text.find('.');
  int major = 0, minor = 0;
  const auto parsed = [](std::string_view part, int& value) {
    const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), value);
    return error == std::errc() && end == part.data() + part.size() && !part.empty();
  };
  if (dot == std::string::npos || !parsed(std::string_view(text).substr(0, dot), major) ||
      !parsed(std::string_view(text).substr(dot + 1), minor) || major < 1 || major > 99 ||
      minor < 0 || minor > 9) {
    throw SetupError("not a compute capability: \"" + text + "\" (expected e.g. 8.6)");
  }
  return major * 10 + minor;
}

std::string arch_text(Arch arch) {
  return std::to_string(arch / 10) + "." + std::to_string(arch % 10);
}

CompiledKernels compile_kernels(const abi::Nvrtc& nvrtc, const std::string& source, Arch arch) {
  CompiledKernels out{.arch = arch, .sass = nvrtc.nvrtcGetCUBIN != nullptr, .image = {}};
  abi::nvrtcProgram program = nullptr;
  auto result =
      nvrtc.nvrtcCreateProgram(&program, source.c_str(), "kernels.cuh", 0, nullptr, nullptr);
  if (result != abi::NVRTC_SUCCESS)
    throw SetupError("nvrtcCreateProgram failed: " + nvrtc_error(nvrtc, result));
  const std::string option = "--gpu-architecture=" + out.target();
  const char* options[] = {option.c_str()};
  result = nvrtc.nvrtcCompileProgram(program, 1, options);
  if (result != abi::NVRTC_SUCCESS) {
    std::string why = "NVRTC could not compile the smoke kernels for " + out.target() + " (" +
                      nvrtc_error(nvrtc, result) + ")";
    if (const auto log = program_log(nvrtc, program); !log.empty()) why += ": " + log;
    if (const auto archs = supported_archs(nvrtc); !archs.empty())
      why += "; this NVRTC compiles for " + archs;
    nvrtc.nvrtcDestroyProgram(&program);
    throw SetupError(why);
  }
  try {
    out.image = image_of(nvrtc, program, out.sass);
  } catch (...) {
    nvrtc.nvrtcDestroyProgram(&program);
    throw;
  }
  nvrtc.nvrtcDestroyProgram(&program);
  return out;
}

}  // namespace envkit_smoke
