#include "libraries.hpp"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>

#include "setup_error.hpp"

namespace envkit_smoke {

namespace {

namespace fs = std::filesystem;

std::string resolved(const std::string& path) {
  std::error_code ec;
  auto canonical = fs::canonical(path, ec);
  return ec ? path : canonical.string();
}

// The CUDA libraries whose origin matters: the toolkit's, cuDNN's, NCCL's, and the driver's.
bool is_cuda_library(std::string_view name) {
  static constexpr std::array<std::string_view, 18> kStems = {
      "libcuda.so",   "libcudart.so", "libcudnn",        "libcublas", "libcublasLt.so",
      "libnvrtc",     "libnvJitLink", "libcufft",        "libcurand", "libcusolver",
      "libcusparse",  "libnccl",      "libnvidia-",      "libcupti",  "libnvToolsExt",
      "libcudadevrt", "libnvvm",      "libnvptxcompiler"};
  return std::any_of(kStems.begin(), kStems.end(),
                     [&](std::string_view stem) { return name.starts_with(stem); });
}

bool is_driver_library(std::string_view name) {
  return name.starts_with("libcuda.so") || name.starts_with("libnvidia-");
}

}  // namespace

Library::Library(const std::string& path_or_name) : asked_(path_or_name) {
  handle_ = dlopen(path_or_name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* why = dlerror();
    throw SetupError("cannot load " + path_or_name + ": " +
                     (why != nullptr ? why : "dlopen failed"));
  }
  link_map* map = nullptr;
  if (dlinfo(handle_, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      *map->l_name != '\0') {
    path_ = resolved(map->l_name);
  } else {
    path_ = resolved(path_or_name);
  }
}

void* Library::symbol(const char* name) const {
  return dlsym(handle_, name);
}

void Library::check_bound(const std::string& what) const {
  if (missing_.empty()) return;
  std::string names;
  for (const auto& name : missing_)
    names += (names.empty() ? "" : ", ") + name;
  throw SetupError(path_ + " does not export " + names + ": not a " + what + " library");
}

std::vector<MappedLibrary> cuda_libraries_in_maps(const std::string& maps,
                                                  const std::string& prefix) {
  const std::string root = resolved(prefix) + "/";
  std::set<std::string> seen;
  std::vector<MappedLibrary> out;
  std::istringstream lines(maps);
  std::string line;
  while (std::getline(lines, line)) {
    // address perms offset dev inode path: the path is the sixth field, and may hold spaces.
    std::istringstream fields(line);
    std::string skip;
    for (int i = 0; i < 5 && fields >> skip; ++i) {
    }
    std::string path;
    std::getline(fields >> std::ws, path);
    if (path.empty() || path.front() != '/') continue;
    const auto name = fs::path(path).filename().string();
    if (!is_cuda_library(name) || !seen.insert(path).second) continue;
    out.push_back({.name = name,
                   .path = path,
                   .in_prefix = path.starts_with(root),
                   .driver = is_driver_library(name)});
  }
  return out;
}

std::vector<MappedLibrary> mapped_cuda_libraries(const std::string& prefix) {
  std::ifstream in("/proc/self/maps");
  std::stringstream text;
  text << in.rdbuf();
  return cuda_libraries_in_maps(text.str(), prefix);
}

}  // namespace envkit_smoke
