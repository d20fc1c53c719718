#include "curl_common.hpp"

#include <fmt/format.h>

#include <initializer_list>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string_view>

#include "envkit/core/env_vars.hpp"
#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"

namespace envkit::net::detail {

namespace {

std::optional<std::string> ca_file_for(const CommonOptions& options) {
  if (options.ca_file) return options.ca_file->string();
  return env::get(env::kSslCertFile);
}

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  if (from.empty() || from == to) return;
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

// "user:secret@" of `url`, or empty.
std::string_view userinfo(std::string_view url) {
  const auto begin = url::authority_begin(url);
  if (begin == std::string_view::npos) return {};
  const auto authority = url.substr(begin, url::authority_end(url, begin) - begin);
  const auto at = authority.rfind('@');
  return at == std::string_view::npos ? std::string_view{} : authority.substr(0, at + 1);
}

}  // namespace

void init_curl_once() {
  if (auto missing = libcurl_load_error()) throw std::runtime_error(*missing);
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

namespace {
constexpr long kReceiveBufferBytes = 512L * 1024;
}  // namespace

EasyHandle make_easy() {
  init_curl_once();
  EasyHandle curl(curl_easy_init());
  if (!curl) throw std::bad_alloc();
  return curl;
}

void set_common_options(CURL* curl, const std::string& url, const CommonOptions& options,
                        char* error_buffer) {
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https,file");
  // A redirect may never turn a web request into a local file read, nor an
  // encrypted one into plain http (where anyone on the way reads and alters it).
  curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR,
                   text::starts_with_icase(url, "https://") ? "https" : "http,https");
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
  if (auto ca = ca_file_for(options)) curl_easy_setopt(curl, CURLOPT_CAINFO, ca->c_str());
  if (auto dir = env::get(env::kSslCertDir)) curl_easy_setopt(curl, CURLOPT_CAPATH, dir->c_str());
  curl_easy_setopt(curl, CURLOPT_NETRC, static_cast<long>(CURL_NETRC_OPTIONAL));
  if (options.netrc_file) {
    curl_easy_setopt(curl, CURLOPT_NETRC_FILE, options.netrc_file->string().c_str());
  }
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "envkit/" ENVKIT_NET_VERSION);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options.connect_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM (threads)
  // Large reads: each chunk handed over costs a lock and a wake-up of the
  // reader, and a 16 KB default makes tens of thousands per CUDA wheel.
  curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, kReceiveBufferBytes);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
}

std::optional<std::string> refused_downgrade(CURL* curl, CURLcode code, const std::string& url) {
  if (code != CURLE_UNSUPPORTED_PROTOCOL || !text::starts_with_icase(url, "https://"))
    return std::nullopt;
  // libcurl names the refused target as the effective URL.
  char* target = nullptr;
  curl_easy_getinfo(curl, CURLINFO_EFFECTIVE_URL, &target);
  if (!target || !text::starts_with_icase(target, "http://")) return std::nullopt;
  return fmt::format(
      "refused the redirect from `{}` to plain http `{}`: an https download never goes on "
      "unencrypted",
      url::redacted(url), url::redacted(target));
}

std::string_view host_of(std::string_view url) {
  const auto begin = url::authority_begin(url);
  if (begin == std::string_view::npos) return {};
  auto host = url.substr(begin, url::authority_end(url, begin) - begin);
  if (const auto at = host.rfind('@'); at != std::string_view::npos) host.remove_prefix(at + 1);
  if (host.starts_with('[')) return host.substr(1, host.find(']') - 1);
  return host.substr(0, host.find(':'));
}

bool is_transient(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

bool is_transient_status(long status) {
  return status == 429 || (status >= 500 && status <= 599);
}

bool is_tls_failure(CURLcode code) {
  return code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CACERT_BADFILE ||
         code == CURLE_SSL_CONNECT_ERROR || code == CURLE_SSL_CERTPROBLEM;
}

namespace {

// The first of `variables` set to something: its name and value.
std::optional<std::pair<std::string_view, std::string>> first_set(
    std::initializer_list<env::Variable> variables) {
  for (const auto& variable : variables) {
    if (auto value = env::get(variable); value && !value->empty())
      return std::pair{variable.name, *std::move(value)};
  }
  return std::nullopt;
}

// libcurl's no_proxy rule: `*`, or hosts (and their subdomains) separated by commas.
bool bypasses_proxy(std::string_view host) {
  const auto list = first_set({env::kNoProxy, env::kNoProxyUpper});
  if (!list) return false;
  for (auto entry : text::split(list->second, ',')) {
    entry = text::trim(entry);
    if (entry.starts_with('.')) entry.remove_prefix(1);
    if (entry == "*" || host == entry ||
        (host.size() > entry.size() && host.ends_with(entry) &&
         host[host.size() - entry.size() - 1] == '.'))
      return true;
  }
  return false;
}

}  // namespace

std::optional<ProxyInUse> proxy_for(std::string_view url) {
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return std::nullopt;
  const auto scheme = url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") return std::nullopt;
  if (bypasses_proxy(host_of(url))) return std::nullopt;
  auto proxy = scheme == "https" ? first_set({env::kHttpsProxy, env::kHttpsProxyUpper})
                                 : first_set({env::kHttpProxy});
  if (!proxy) proxy = first_set({env::kAllProxy, env::kAllProxyUpper});
  if (!proxy) return std::nullopt;
  return ProxyInUse{.url = url::redacted(proxy->second), .variable = std::string(proxy->first)};
}

std::string curl_reason(CURLcode code, const char* error_buffer, const std::string& url) {
  std::string reason =
      error_buffer && *error_buffer ? std::string(error_buffer) : curl_easy_strerror(code);
  // libcurl's detail may quote the URL or its user name; never let credentials out.
  replace_all(reason, url, url::redacted(url));
  replace_all(reason, userinfo(url), "***@");
  return reason;
}

}  // namespace envkit::net::detail
