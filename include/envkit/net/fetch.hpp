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
// https/http/file with libcurl, or sending one request with a body (a
// registry's blob upload, streamed from a file). TLS verification is always on; proxies come
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
  // "GET", or "HEAD", "POST", "PUT", "PATCH", "DELETE".
  std::string method = "GET";
  // What POST/PUT/PATCH send: these bytes, else the file's, read as they go
  // out (never whole in memory); nothing when neither is set.
  std::string body;
  std::optional<std::filesystem::path> body_file;
  // Redirects are followed (libcurl keeps custom Authorization headers to the
  // first host). Off for a registry's upload steps, whose Location is an answer.
  bool follow_redirects = true;
};

// What the server answered. Any HTTP status is a response; only failing to
// get one (after the retries) is an error.
struct Response {
  int status = 0;            // HTTP status; 200 for a file:// URL that was read
  std::string content_type;  // as sent, e.g. "application/vnd.pypi.simple.v1+json"
  std::string url;           // after redirects
  std::string body;
  // The final response's headers in order, names as sent.
  std::vector<std::pair<std::string, std::string>> headers;

  // The first header called `name` (any case); nullopt when absent.
  [[nodiscard]] std::optional<std::string> header(std::string_view name) const;
};

// Fetches `url`, following redirects. Errors name the URL (credentials
// redacted) and libcurl's reason.
[[nodiscard]] Result<Response> fetch(const std::string& url, const FetchOptions& options = {});

// The body of a 2xx response; any other status is an error naming the URL and the status.
[[nodiscard]] Result<std::string> fetch_text(const std::string& url,
                                             const FetchOptions& options = {});

}  // namespace envkit::net
