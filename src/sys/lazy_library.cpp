#include "envkit/sys/lazy_library.hpp"

#include <dlfcn.h>

namespace envkit::sys {

void LazyLibrary::load() {
  std::call_once(once_, [this] {
    // RTLD_LOCAL: the library's symbols serve the forwarders only, and its own
    // calls between its functions stay inside it.
    handle_ = ::dlopen(soname_, RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      const char* why = ::dlerror();
      error_ = why != nullptr ? why : "unknown error";
    }
  });
}

void* LazyLibrary::symbol(const char* name) {
  load();
  return handle_ == nullptr ? nullptr : ::dlsym(handle_, name);
}

std::optional<std::string> LazyLibrary::load_error() {
  load();
  if (handle_ != nullptr) return std::nullopt;
  return "envkit cannot load " + std::string(soname_) + " (" + error_ + "): install " + package_;
}

}  // namespace envkit::sys
