// libcurl, loaded the first time envkit calls it rather than when envkit
// starts: libcurl brings ~20 libraries (gnutls, krb5, ldap, nghttp2, ...)
// whose loading was 5 ms of every envkit process, `lock`, a warm `install`
// and `--version` included, none of which downloads (docs/benchmarks.md).
// Each function envkit calls is defined here, with curl.h's signature, and
// forwards to libcurl's own (envkit/sys/lazy_library.hpp). Kept out of the unity build:
// the type-checking macros must be off before curl.h is read.
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

#include <cstdarg>
#include <string>

#include "curl_common.hpp"
#include "envkit/sys/lazy_library.hpp"

namespace envkit::net::detail {

namespace {

// The soname of libcurl 7.16 and later, whichever TLS library it was built
// with. A function's static, made at its first use (clang cannot
// constant-initialize libstdc++ 12's std::string).
sys::LazyLibrary& libcurl() {
  static sys::LazyLibrary library{"libcurl.so.4", "libcurl (Debian, Ubuntu: libcurl4)"};
  return library;
}

// The variadic setters take one argument after the option: a long, a
// curl_off_t, a pointer or a function pointer, each passed in one 64-bit
// integer register on the LP64 ABIs envkit builds for, so it is forwarded as
// a pointer-sized word.
static_assert(sizeof(long) == sizeof(void*) && sizeof(curl_off_t) == sizeof(void*),
              "the setopt forwarding assumes an LP64 ABI");

}  // namespace

std::optional<std::string> libcurl_load_error() {
  return libcurl().load_error();
}

}  // namespace envkit::net::detail

#define ENVKIT_CURL_FORWARD(result, name, params, args, failed) \
  ENVKIT_LAZY_FORWARD(envkit::net::detail::libcurl(), result, name, params, args, failed)
#define ENVKIT_CURL_FORWARD_VOID(name, params, args) \
  ENVKIT_LAZY_FORWARD_VOID(envkit::net::detail::libcurl(), name, params, args)
#define ENVKIT_CURL_FORWARD_VARIADIC(result, name, handle_type, option_type, failed)      \
  extern "C" result name(handle_type handle, option_type option, ...) {                   \
    static const auto real = reinterpret_cast<result (*)(handle_type, option_type, ...)>( \
        envkit::net::detail::libcurl().symbol(#name));                                    \
    if (real == nullptr) return failed;                                                   \
    va_list rest;                                                                         \
    va_start(rest, option);                                                               \
    void* value = va_arg(rest, void*);                                                    \
    va_end(rest);                                                                         \
    return real(handle, option, value);                                                   \
  }

ENVKIT_CURL_FORWARD(CURLcode, curl_global_init, (long flags), (flags), CURLE_FAILED_INIT)
ENVKIT_CURL_FORWARD(CURL*, curl_easy_init, (void), (), nullptr)
ENVKIT_CURL_FORWARD_VOID(curl_easy_cleanup, (CURL * curl), (curl))
ENVKIT_CURL_FORWARD(CURLcode, curl_easy_perform, (CURL * curl), (curl), CURLE_FAILED_INIT)
ENVKIT_CURL_FORWARD(CURLcode, curl_easy_pause, (CURL * curl, int bitmask), (curl, bitmask),
                    CURLE_FAILED_INIT)
ENVKIT_CURL_FORWARD(const char*, curl_easy_strerror, (CURLcode code), (code),
                    "libcurl could not be loaded")
ENVKIT_CURL_FORWARD_VARIADIC(CURLcode, curl_easy_setopt, CURL*, CURLoption, CURLE_FAILED_INIT)
ENVKIT_CURL_FORWARD_VARIADIC(CURLcode, curl_easy_getinfo, CURL*, CURLINFO, CURLE_FAILED_INIT)
ENVKIT_CURL_FORWARD(CURLM*, curl_multi_init, (void), (), nullptr)
ENVKIT_CURL_FORWARD(CURLMcode, curl_multi_cleanup, (CURLM * multi), (multi), CURLM_INTERNAL_ERROR)
ENVKIT_CURL_FORWARD(CURLMcode, curl_multi_add_handle, (CURLM * multi, CURL* curl), (multi, curl),
                    CURLM_INTERNAL_ERROR)
ENVKIT_CURL_FORWARD(CURLMcode, curl_multi_remove_handle, (CURLM * multi, CURL* curl), (multi, curl),
                    CURLM_INTERNAL_ERROR)
ENVKIT_CURL_FORWARD(CURLMcode, curl_multi_perform, (CURLM * multi, int* running), (multi, running),
                    CURLM_INTERNAL_ERROR)
ENVKIT_CURL_FORWARD(CURLMcode, curl_multi_poll,
                    (CURLM * multi, struct curl_waitfd extra[], unsigned int count, int timeout_ms,
                     int* ready),
                    (multi, extra, count, timeout_ms, ready), CURLM_INTERNAL_ERROR)
ENVKIT_CURL_FORWARD(CURLMcode, curl_multi_wakeup, (CURLM * multi), (multi), CURLM_INTERNAL_ERROR)
ENVKIT_CURL_FORWARD(CURLMsg*, curl_multi_info_read, (CURLM * multi, int* left), (multi, left),
                    nullptr)
ENVKIT_CURL_FORWARD_VARIADIC(CURLMcode, curl_multi_setopt, CURLM*, CURLMoption,
                             CURLM_INTERNAL_ERROR)
ENVKIT_CURL_FORWARD(struct curl_slist*, curl_slist_append,
                    (struct curl_slist * list, const char* text), (list, text), nullptr)
ENVKIT_CURL_FORWARD_VOID(curl_slist_free_all, (struct curl_slist * list), (list))
