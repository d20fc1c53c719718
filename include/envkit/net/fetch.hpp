#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"

// Fetching one small document (an index page, a metadata file) over
// https/http/file with libcurl. TLS verification is always on; proxies come
// from the usual variables (http_proxy, https_proxy, no_proxy), which libcurl
// reads itself.
namespace envkit::net {

struct FetchOptions {
  // Extra request headers, "Name: value" (e.g. "Accept: application/json").
  std::vector<std::string> headers;
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(15)};
  // The whole transfer, redirects included.
  std::chrono::milliseconds timeout{std::chrono::seconds(120)};
  // Tries in all; connection errors, 429 and 5xx are tried again.
  int attempts = 4;
  // The wait before the second try, doubled after each further failure up to
  // max_retry_delay (a server's Retry-After is honoured within that cap).
  std::chrono::milliseconds first_retry_delay{500};
  std::chrono::milliseconds max_retry_delay{std::chrono::seconds(8)};
  // CA bundle to verify servers with; nullopt = SSL_CERT_FILE, else libcurl's default.
  std::optional<std::filesystem::path> ca_file;
  // A body larger than this is refused (these are documents, not downloads).
  std::uint64_t max_bytes = std::uint64_t{256} << 20;
};

// What the server answered. Any HTTP status is a response; only failing to
// get one (after the retries) is an error.
struct Response {
  int status = 0;            // HTTP status; 200 for a file:// URL that was read
  std::string content_type;  // as sent, e.g. "application/vnd.pypi.simple.v1+json"
  std::string url;           // after redirects
  std::string body;
};

// Fetches `url`, following redirects. Errors name the URL (credentials
// redacted) and libcurl's reason.
[[nodiscard]] Result<Response> fetch(const std::string& url, const FetchOptions& options = {});

// The body of a 2xx response; any other status is an error naming the URL and the status.
[[nodiscard]] Result<std::string> fetch_text(const std::string& url,
                                             const FetchOptions& options = {});

}  // namespace envkit::net
