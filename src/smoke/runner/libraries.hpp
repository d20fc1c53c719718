#pragma once

// Opening the prefix's CUDA libraries by path and binding the functions envkit-smoke calls; then
// asking the process which CUDA libraries it really mapped, and from where.
#include <string>
#include <vector>

namespace envkit_smoke {

// A library opened with dlopen, never closed (the process is short and the libraries keep
// threads of their own).
class Library {
 public:
  // `path_or_name`: a path (the prefix's libraries) or a soname (the driver's libcuda.so.1,
  // found the way the dynamic linker finds it). Throws SetupError with dlerror()'s text.
  explicit Library(const std::string& path_or_name);

  // Binds `slot` to the exported function `name`; a missing one is remembered for check_bound.
  template <class Function>
  void bind(Function& slot, const char* name) {
    slot = reinterpret_cast<Function>(symbol(name));
    if (slot == nullptr) missing_.emplace_back(name);
  }
  // Binds it if the library exports it (functions newer than the oldest supported release).
  template <class Function>
  void bind_optional(Function& slot, const char* name) {
    slot = reinterpret_cast<Function>(symbol(name));
  }
  // Throws SetupError naming every function `bind` did not find: `what` is "cuDNN 8 or 9".
  void check_bound(const std::string& what) const;

  // The file the dynamic linker opened (symbolic links resolved).
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  void* symbol(const char* name) const;
  void* handle_ = nullptr;
  std::string asked_;
  std::string path_;
  std::vector<std::string> missing_;
};

// A CUDA library mapped into this process, read from /proc/self/maps.
struct MappedLibrary {
  std::string name;  // the file name: libcublasLt.so.12
  std::string path;  // symbolic links resolved
  bool in_prefix = false;
  bool driver = false;  // libcuda and the driver's own libnvidia-*: the machine's, by design
};

// Every CUDA library this process has mapped, by its resolved path; `prefix` decides in_prefix.
[[nodiscard]] std::vector<MappedLibrary> mapped_cuda_libraries(const std::string& prefix);

// The same from the text of a maps file (the unit tests' entry point).
[[nodiscard]] std::vector<MappedLibrary> cuda_libraries_in_maps(const std::string& maps,
                                                                const std::string& prefix);

}  // namespace envkit_smoke
