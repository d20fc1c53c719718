#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// Which hosts this machine reaches, asked before anything is downloaded
// (docs/install.md#sources-and-reachability): a firewall that lets only PyPI
// through should stop an install before its first gigabyte, not after it.
// One HEAD request per host, all at once, a few seconds each; the answers are
// kept per network (a laptop moving from the office to home asks again).
namespace envkit::net {

// What one host answered.
struct HostReachability {
  std::string host;  // "developer.download.nvidia.com"
  bool reachable = false;
  // Why not, as libcurl said it ("Could not resolve host: github.com"); empty when reachable.
  std::string reason;
  // Answered from the per-network cache rather than asked now.
  bool cached = false;
};

struct ReachabilityOptions {
  // Where answers are kept (a JSON file); nullopt: nowhere, always ask.
  std::optional<std::filesystem::path> cache_file;
  // How long a kept answer holds on the same network.
  std::chrono::seconds ttl{600};
  // Ask again whatever is kept (`--refresh`).
  bool refresh = false;
  // false: ask nothing, answer only what is kept (`--offline`); other hosts are left out.
  bool ask = true;
  // Each host's question, connection and answer included.
  std::chrono::milliseconds timeout{std::chrono::seconds(5)};
  // CA bundle; nullopt = SSL_CERT_FILE, else libcurl's default.
  std::optional<std::filesystem::path> ca_file;
};

// The host of an http(s) URL, lower case ("files.pythonhosted.org"); for any
// other scheme (file://) or an unparsable URL, empty: such a URL needs no network.
[[nodiscard]] std::string reachability_host(std::string_view url);

// Asks every host of `urls` at once (one URL per host: the first given, so
// that a redirect to another host, github.com's release files, is followed and
// counted) and answers per host. Any HTTP answer, 404 included, is reachable;
// no answer (DNS, refused, TLS, timeout, a proxy refusing the tunnel) is not.
// URLs without a network host (file://) are left out.
[[nodiscard]] std::map<std::string, HostReachability> check_reachability(
    const std::vector<std::string>& urls, const ReachabilityOptions& options);

// A fingerprint of the network this machine is on: its resolver configuration,
// its proxy variables and its interfaces' addresses. Kept answers are valid on
// the network that gave them.
[[nodiscard]] std::string network_fingerprint();

}  // namespace envkit::net
