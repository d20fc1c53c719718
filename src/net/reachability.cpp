#include "envkit/net/reachability.hpp"

#include <fmt/format.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "curl_common.hpp"
#include "envkit/core/env_vars.hpp"
#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/net/fetch.hpp"
#include "envkit/sys/fs.hpp"
#include "envkit/sys/parallel.hpp"

namespace envkit::net {

namespace fs = std::filesystem;

namespace {

std::int64_t now_seconds() {
  return static_cast<std::int64_t>(std::time(nullptr));
}

// The machine's interface addresses, loopback left out, sorted: a new network
// gives new ones.
std::vector<std::string> interface_addresses() {
  std::vector<std::string> addresses;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return addresses;
  for (const ifaddrs* entry = list; entry; entry = entry->ifa_next) {
    if (!entry->ifa_addr) continue;
    const int family = entry->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    char host[NI_MAXHOST] = {};
    const socklen_t length = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    if (getnameinfo(entry->ifa_addr, length, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0)
      continue;
    const std::string address = host;
    if (address == "127.0.0.1" || address == "::1") continue;
    addresses.push_back(address);
  }
  freeifaddrs(list);
  std::sort(addresses.begin(), addresses.end());
  return addresses;
}

// One kept answer.
struct KeptAnswer {
  bool reachable = false;
  std::string reason;
  std::int64_t checked_at = 0;
};

// The cache file: {"<fingerprint>": {"<host>": {"reachable":..,"reason":..,"checked_at":..}}}.
// A file that does not parse is an empty cache: it only saves seconds.
nlohmann::json read_cache(const fs::path& file) {
  auto text = sys::read_file(file);
  if (!text) return nlohmann::json::object();
  auto json = nlohmann::json::parse(*text, nullptr, false);
  return json.is_object() ? json : nlohmann::json::object();
}

std::optional<KeptAnswer> kept(const nlohmann::json& cache, const std::string& network,
                               const std::string& host) {
  const auto net = cache.find(network);
  if (net == cache.end() || !net->is_object()) return std::nullopt;
  const auto entry = net->find(host);
  if (entry == net->end() || !entry->is_object()) return std::nullopt;
  KeptAnswer answer;
  answer.reachable = entry->value("reachable", false);
  answer.reason = entry->value("reason", "");
  answer.checked_at = entry->value("checked_at", std::int64_t{0});
  return answer;
}

// Keeps `answers` for `network`; other networks' answers stay, expired ones go.
void write_cache(const fs::path& file, const std::string& network,
                 const std::map<std::string, HostReachability>& answers, std::chrono::seconds ttl) {
  auto cache = read_cache(file);
  const auto now = now_seconds();
  for (auto net = cache.begin(); net != cache.end();) {
    if (net->is_object()) {
      for (auto entry = net->begin(); entry != net->end();) {
        const bool old =
            !entry->is_object() || now - entry->value("checked_at", std::int64_t{0}) > ttl.count();
        entry = old ? net->erase(entry) : std::next(entry);
      }
    }
    net = (!net->is_object() || net->empty()) ? cache.erase(net) : std::next(net);
  }
  for (const auto& [host, answer] : answers) {
    if (answer.cached) continue;
    cache[network][host] = {
        {"reachable", answer.reachable}, {"reason", answer.reason}, {"checked_at", now}};
  }
  std::error_code ignored;
  fs::create_directories(file.parent_path(), ignored);
  (void)sys::write_file_atomic(file, cache.dump(1) + "\n");
}

HostReachability ask(const std::string& host, const std::string& url,
                     const ReachabilityOptions& options) {
  FetchOptions fetch_options;
  fetch_options.method = "HEAD";
  fetch_options.attempts = 1;
  fetch_options.connect_timeout = options.timeout;
  fetch_options.timeout = options.timeout;
  fetch_options.ca_file = options.ca_file;
  auto response = fetch(url, fetch_options);
  if (response) return {.host = host, .reachable = true, .reason = "", .cached = false};
  // libcurl's reason ("Could not resolve host: github.com"), not fetch's headline.
  const auto& error = response.error();
  std::string reason = error.causes().empty() ? error.message() : text::join(error.causes(), "; ");
  // A proxy that is down or refuses reads like the host failing: say it was there.
  if (auto proxy = detail::proxy_for(url)) {
    reason +=
        fmt::format("; envkit went through the proxy {} (from ${})", proxy->url, proxy->variable);
  }
  for (const auto& hint : error.hints())
    reason += fmt::format(" ({})", hint);
  return {.host = host, .reachable = false, .reason = reason, .cached = false};
}

// The trust the answers were given under: a TLS failure with one CA bundle is
// no answer for another (`--cacert` after a refusal asks again).
std::string trust_of(const ReachabilityOptions& options) {
  if (options.ca_file) return "ca:" + options.ca_file->string();
  if (auto file = env::get(env::kSslCertFile)) return "SSL_CERT_FILE:" + *file;
  return "";
}

}  // namespace

std::string reachability_host(std::string_view url) {
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return "";
  std::string scheme(url.substr(0, scheme_end));
  std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (scheme != "http" && scheme != "https") return "";
  std::string host(detail::host_of(url));
  std::transform(host.begin(), host.end(), host.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // The port counts: two servers on one loopback address are two hosts.
  const auto authority_start = scheme_end + 3;
  const auto authority_end = url.find_first_of("/?#", authority_start);
  const auto authority = url.substr(authority_start, authority_end == std::string_view::npos
                                                         ? std::string_view::npos
                                                         : authority_end - authority_start);
  const auto at = authority.rfind('@');
  const auto host_port = at == std::string_view::npos ? authority : authority.substr(at + 1);
  const auto colon = host_port.rfind(':');
  const auto bracket = host_port.rfind(']');
  if (colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket))
    host += std::string(host_port.substr(colon));
  return host;
}

std::string network_fingerprint() {
  std::string material;
  if (auto resolv = sys::read_file("/etc/resolv.conf")) material += *resolv;
  for (const char* variable : {"https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY",
                               "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"}) {
    if (const char* value = std::getenv(variable)) material += std::string(variable) + "=" + value;
    material += "\n";
  }
  for (const auto& address : interface_addresses())
    material += address + "\n";
  return core::sha256_hex(material).substr(0, 16);
}

std::map<std::string, HostReachability> check_reachability(const std::vector<std::string>& urls,
                                                           const ReachabilityOptions& options) {
  // One URL per host: the first one given.
  std::map<std::string, std::string> url_of_host;
  for (const auto& url : urls) {
    auto host = reachability_host(url);
    if (!host.empty()) url_of_host.emplace(std::move(host), url);
  }
  std::map<std::string, HostReachability> answers;
  if (url_of_host.empty()) return answers;

  const auto trust = trust_of(options);
  const auto network = trust.empty()
                           ? network_fingerprint()
                           : network_fingerprint() + "-" + core::sha256_hex(trust).substr(0, 8);
  nlohmann::json cache = nlohmann::json::object();
  if (options.cache_file && !options.refresh) cache = read_cache(*options.cache_file);
  std::vector<std::pair<std::string, std::string>> to_ask;
  const auto now = now_seconds();
  for (const auto& [host, url] : url_of_host) {
    const auto answer = kept(cache, network, host);
    if (answer && now - answer->checked_at <= options.ttl.count() && now >= answer->checked_at) {
      answers[host] = {
          .host = host, .reachable = answer->reachable, .reason = answer->reason, .cached = true};
    } else if (options.ask) {
      to_ask.emplace_back(host, url);
    }
  }
  std::mutex mutex;
  sys::for_each_parallel(to_ask.size(), static_cast<int>(std::min<std::size_t>(to_ask.size(), 16)),
                         [&](std::size_t i) {
                           auto answer = ask(to_ask[i].first, to_ask[i].second, options);
                           const std::scoped_lock lock(mutex);
                           answers[to_ask[i].first] = std::move(answer);
                         });
  if (options.cache_file && !to_ask.empty())
    write_cache(*options.cache_file, network, answers, options.ttl);
  return answers;
}

}  // namespace envkit::net
