#pragma once

// What fetch() and Transport share about libcurl: handle ownership, the
// options every request gets (protocols, TLS, proxies, netrc, User-Agent),
// which failures are worth another try, and keeping credentials out of
// libcurl's messages. Private to src/net.

#include <curl/curl.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace envkit::net::detail {

struct EasyDeleter {
  void operator()(CURL* handle) const { curl_easy_cleanup(handle); }
};
struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
struct MultiDeleter {
  void operator()(CURLM* handle) const { curl_multi_cleanup(handle); }
};
using EasyHandle = std::unique_ptr<CURL, EasyDeleter>;
using HeaderList = std::unique_ptr<curl_slist, SlistDeleter>;
using MultiHandle = std::unique_ptr<CURLM, MultiDeleter>;

// libcurl's global set-up (curl_global_init), once per process, before the
// first handle. fetch() and Transport::open() check libcurl_load_error()
// first; a caller that did not gets std::runtime_error saying what to install.
void init_curl_once();
// Why libcurl.so.4 could not be loaded, once envkit first needed it.
[[nodiscard]] std::optional<std::string> libcurl_load_error();

// A new easy handle; throws std::bad_alloc when libcurl cannot make one.
[[nodiscard]] EasyHandle make_easy();

struct CommonOptions {
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(15)};
  // nullopt = SSL_CERT_FILE, else libcurl's default.
  std::optional<std::filesystem::path> ca_file;
  // nullopt = libcurl's default (~/.netrc).
  std::optional<std::filesystem::path> netrc_file;
};

// Sets what every envkit request has: the URL, http/https/file only (a
// redirect never turns into a local file read, nor an https request into a
// plain http one), TLS verification, the CA,
// netrc, the User-Agent, no signals, and libcurl's error buffer. `url`,
// `ca` and `netrc` strings are copied by libcurl.
void set_common_options(CURL* curl, const std::string& url, const CommonOptions& options,
                        char* error_buffer);

// The https->http redirect set_common_options made libcurl refuse for `url`, as a
// reason naming both URLs (redacted); nullopt when `code` is about something else.
[[nodiscard]] std::optional<std::string> refused_downgrade(CURL* curl, CURLcode code,
                                                           const std::string& url);

// The host of an http(s) URL: no user info, port or IPv6 brackets.
[[nodiscard]] std::string_view host_of(std::string_view url);

// Connection errors, timeouts and broken transfers: worth another try.
[[nodiscard]] bool is_transient(CURLcode code);
// 429 and the 5xx a busy or restarting server answers.
[[nodiscard]] bool is_transient_status(long status);
[[nodiscard]] bool is_tls_failure(CURLcode code);

// The proxy libcurl sends `url` through, as the environment names it (https_proxy,
// http_proxy, all_proxy, in either case, less no_proxy), redacted; nullopt when none.
struct ProxyInUse {
  std::string url;       // credentials shown as ***@
  std::string variable;  // "https_proxy"
};
[[nodiscard]] std::optional<ProxyInUse> proxy_for(std::string_view url);

// libcurl's reason for `code` (its error buffer when filled), with `url`
// redacted wherever libcurl quoted it.
[[nodiscard]] std::string curl_reason(CURLcode code, const char* error_buffer,
                                      const std::string& url);

// What to tell a user behind a TLS-intercepting proxy.
inline constexpr const char* kTlsHint =
    "behind a TLS-intercepting proxy, point SSL_CERT_FILE at a CA bundle that "
    "includes its certificate";

}  // namespace envkit::net::detail
