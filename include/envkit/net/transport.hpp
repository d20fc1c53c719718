#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"

// Downloads of artifacts: many at once over one libcurl multi handle, each
// read in order as a byte stream by whoever unpacks it. A stream survives
// broken transfers: it resumes with a Range request (or skips what it already
// delivered when the server ignores Range) and moves on to the next URL when
// one gives up, so the reader sees one continuous body. Whether those bytes
// are the right ones is the reader's sha256 to decide.
namespace envkit::net {

// What a transport asks about requests that need credentials of their own
// (an OCI registry's token flow, oci::RegistryAuth). Called on the transport's
// thread (and by whoever else shares the object: implementations lock).
// Header values never reach a log or an error.
class RequestAuthorizer {
 public:
  virtual ~RequestAuthorizer() = default;
  // Headers for the next attempt at `url` ("Authorization: Bearer ..."); none
  // for URLs it does not know. libcurl sends them to `url`'s host only, never
  // to another host a redirect leads to.
  [[nodiscard]] virtual std::vector<std::string> headers_for(const std::string& url) = 0;
  // `url` answered 401 with this WWW-Authenticate (may be empty), after
  // `sent` (what headers_for gave that attempt). True when another attempt
  // is worth it: new credentials were got (a token, Basic ones).
  [[nodiscard]] virtual bool challenged(const std::string& url, const std::string& www_authenticate,
                                        const std::vector<std::string>& sent) = 0;
  // More words for an error status of `url` (the registry's error JSON in
  // `body`, a hint for a 401), appended to "the server answered HTTP N"; may be empty.
  [[nodiscard]] virtual std::string explain(const std::string& url, long status,
                                            std::string_view body) = 0;
};

struct TransportOptions {
  // Transfers running at once; more streams wait their turn.
  int jobs = 8;
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(15)};
  // A transfer that receives nothing for this long (while the reader keeps
  // up) is broken and tried again.
  std::chrono::milliseconds stall_timeout{std::chrono::seconds(30)};
  // Tries per URL; connection errors, timeouts, stalls, 429 and 5xx are tried again.
  int attempts = 5;
  // The wait before the second try, doubled after each further failure up to
  // max_retry_delay, with jitter; a server's Retry-After is honoured within the cap.
  std::chrono::milliseconds first_retry_delay{500};
  std::chrono::milliseconds max_retry_delay{std::chrono::seconds(30)};
  // CA bundle; nullopt = SSL_CERT_FILE, else libcurl's default. TLS verification is always on.
  std::optional<std::filesystem::path> ca_file;
  // Credentials for mirrors and indexes; nullopt = libcurl's default (~/.netrc).
  std::optional<std::filesystem::path> netrc_file;
  // Bytes buffered per stream before its transfer pauses for the reader.
  std::size_t buffer_bytes = std::size_t{4} << 20;
  // Told (on the transport's thread) what a user should know that does not
  // stop a download: a "warning: ..." line once per host reached over plain
  // http (is_plain_http_remote). Empty: nothing is said.
  std::function<void(const std::string& line)> on_warning;
  // Credentials for URLs that need more than netrc (registries); null: none.
  std::shared_ptr<RequestAuthorizer> authorizer;
};

struct DownloadRequest {
  // Tried in order (mirrors first, then the original); a later URL continues
  // where the previous one stopped.
  std::vector<std::string> urls;
  // When known: a body that ends short of it is resumed, one that runs past it is an error.
  std::optional<std::uint64_t> expected_size;
  // Shown in progress, e.g. "cuda_cudart 12.4.127".
  std::string label;
  // Bytes of the body the reader already has: the first request asks for
  // the rest (Range), and reading yields only the rest.
  std::uint64_t start_at = 0;
  // Called (on the transport's thread; for file:// URLs, the reader's) when a URL failed and
  // the next one is tried:
  // the URL, credentials redacted, and why. A mirror that is down should not go unnoticed.
  std::function<void(const std::string& url, const std::string& reason)> on_url_failed;
};

// One download, read in order. read() blocks until bytes arrive. One thread
// reads a stream at a time; streams may be read and dropped on any thread,
// and may outlive their Transport (reading one then gives an error).
class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Up to buffer.size() bytes; 0 at the end of the body. An error when every
  // URL has failed: it names each URL (credentials redacted) and why.
  [[nodiscard]] virtual Result<std::size_t> read(std::span<std::byte> buffer) = 0;
  // The URL the bytes came from last (credentials redacted), for messages.
  [[nodiscard]] virtual std::string url() const = 0;
};

// A snapshot of one transfer, for progress displays.
struct TransferProgress {
  std::string label;
  std::uint64_t received = 0;          // bytes delivered so far (all tries)
  std::optional<std::uint64_t> total;  // expected size, else Content-Length, when known
  bool started = false;                // false while waiting for a free slot
};

// open() and progress() may be called from any thread. One background
// thread moves the bytes of every stream. libcurl, that thread and its
// connections start at the first download from the web: an install that
// finds everything in its cache never loads libcurl (a few ms of every start).
class Transport {
 public:
  explicit Transport(TransportOptions options = {});
  ~Transport();  // cancels whatever is still running
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // Starts (or queues) the download. Dropping the stream cancels it.
  [[nodiscard]] std::unique_ptr<ByteStream> open(DownloadRequest request);

  // Every stream not yet finished or dropped, in the order they were opened.
  [[nodiscard]] std::vector<TransferProgress> progress() const;

 private:
  struct Impl;
  Impl& started();
  [[nodiscard]] Impl* started_or_null() const;

  TransportOptions options_;
  mutable std::mutex start_mutex_;
  std::unique_ptr<Impl> impl_;  // guarded by start_mutex_; set once, at the first download
};

// Whether `url` is plain http to another machine, where anyone on the way can
// read and alter the bytes (the lock's sha256 is what catches it). Loopback
// (localhost, 127.0.0.0/8, ::1) is this machine: not.
[[nodiscard]] bool is_plain_http_remote(std::string_view url);

// Where a mirror keeps `url`, relative to the mirror's root: https://HOST/PATH -> HOST/PATH.
// The original's credentials are not carried over. HOST keeps its port; PATH
// keeps its percent escapes; the query and fragment are dropped.
[[nodiscard]] std::string mirror_path(std::string_view url);

// Where mirror `mirror` keeps `url`: MIRROR/ + mirror_path(url) (CLI.md).
// The mirror may end with '/' or not.
[[nodiscard]] std::string mirror_url(std::string_view mirror, std::string_view url);

// The origin of a URL inside mirror `mirror` (MIRROR/HOST/PATH -> https://HOST/PATH): what
// a page read through a mirror links to, named as a lock names it. Another URL is returned
// as it is.
[[nodiscard]] std::string origin_url(std::string_view mirror, std::string_view url);

// Where mirror `mirror` keeps the artifact at `url` whose sha256 is `sha256`:
// a registry (oci://HOST/REPO, registry_url.hpp) as the blob of that digest,
// any other mirror as mirror_url(mirror, url).
[[nodiscard]] std::string artifact_mirror_url(std::string_view mirror, std::string_view url,
                                              std::string_view sha256);

// The same place as a file in a mirror folder (`envkit mirror --out DIR`
// writes DIR/mirror_file(url)): mirror_path() with its percent escapes decoded,
// as a static server decodes a request before it looks on disk. Fails for a URL
// that names no file, or whose path would leave the folder (`..`, an escaped `/`).
[[nodiscard]] Result<std::filesystem::path> mirror_file(std::string_view url);

}  // namespace envkit::net
