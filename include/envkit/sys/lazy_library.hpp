#pragma once

// A shared library opened the first time envkit calls into it, not by ld.so
// at start. libcurl and libarchive bring ~30 libraries between them (gnutls,
// krb5, ldap, ICU through libxml2, ...) whose loading was most of every
// envkit process's start, though a `lock`, a warm `install`, `doctor` or
// `--version` use neither (docs/dependencies.md, docs/benchmarks.md).
//
// A loader file defines each function envkit calls, with the header's own
// signature, as a forwarder (ENVKIT_LAZY_FORWARD below); the build uses the
// library's headers only.

#include <mutex>
#include <optional>
#include <string>

namespace envkit::sys {

class LazyLibrary {
 public:
  // `soname`, e.g. "libcurl.so.4"; `package` says what to install when it is
  // missing, e.g. "libcurl (Debian, Ubuntu: libcurl4)".
  LazyLibrary(const char* soname, const char* package) : soname_(soname), package_(package) {}
  LazyLibrary(const LazyLibrary&) = delete;
  LazyLibrary& operator=(const LazyLibrary&) = delete;

  // The library's `name`, loading the library first; nullptr when it cannot be loaded.
  [[nodiscard]] void* symbol(const char* name);
  // Why the library cannot be loaded, with what to install; nullopt when it loads.
  [[nodiscard]] std::optional<std::string> load_error();

 private:
  void load();

  const char* soname_;
  const char* package_;
  std::once_flag once_;
  void* handle_ = nullptr;
  std::string error_;  // dlerror's, when it could not be loaded
};

}  // namespace envkit::sys

// `name` with `params`, forwarding `args` to `library`'s own; `failed` when
// the library cannot be loaded.
#define ENVKIT_LAZY_FORWARD(library, result, name, params, args, failed)                    \
  extern "C" result name params {                                                           \
    static const auto real = reinterpret_cast<result(*) params>(                            \
        (library).symbol(#name)); /* NOLINT(cppcoreguidelines-pro-type-reinterpret-cast) */ \
    if (real == nullptr) return failed;                                                     \
    return real args;                                                                       \
  }
#define ENVKIT_LAZY_FORWARD_VOID(library, name, params, args)                           \
  extern "C" void name params {                                                         \
    static const auto real = reinterpret_cast<void(*) params>((library).symbol(#name)); \
    if (real != nullptr) real args;                                                     \
  }
