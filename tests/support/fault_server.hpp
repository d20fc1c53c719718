#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

// A small HTTP/1.1 server on 127.0.0.1 that breaks transfers on purpose, for
// testing what a download does when a server misbehaves. One request per
// connection (Connection: close), a thread per connection.
namespace envkit::test {

// How a path misbehaves. The faults hit the first requests of the path, in
// this order: failures, stalls, cuts, a lying Content-Length; the requests
// after them are answered normally.
struct Behaviour {
  // Honour "Range: bytes=K-" (206 + Content-Range; 416 past the end). False:
  // always 200 and the whole body, as a server without range support does.
  bool ranges = true;
  // Answer `fail_status` (with `retry_after` as Retry-After when not empty).
  int fail_first = 0;
  int fail_status = 500;
  std::string retry_after;
  std::string fail_body = "failed";  // e.g. a registry's {"errors": [...]}
  // Send the headers and half the body, then send nothing more (without
  // closing) until the client gives up.
  int stall_first = 0;
  // Send the headers and half the body, then close the connection.
  int cut_first = 0;
  // The first request after the faults above says a Content-Length this far
  // off the real size (positive: too long; negative: too short), sends the
  // real body and closes.
  long length_lie = 0;
  // Serve the body with its middle byte flipped, every time: the same length,
  // other bytes (what only a sha256 notices).
  bool wrong_bytes = false;
  // The first requests with a Range (this many) get a 206 whose Content-Range
  // is not what was asked: `range_lie` says how.
  int wrong_content_range = 0;
  enum class RangeLie {
    start,  // the whole body from byte 0, labelled "bytes 0-END/SIZE"
    total,  // the bytes asked for, labelled with a total one byte larger
  };
  RangeLie range_lie = RangeLie::start;
  // Answer 206 (the whole body, "bytes 0-END/SIZE") even without a Range.
  bool always_partial = false;
  // The Content-Type of the answer.
  std::string content_type = "application/octet-stream";
  // A pause after each 16 KiB of body, so that transfers last a while.
  std::chrono::milliseconds chunk_delay{0};
  // A request whose Authorization header is not this (when set) is answered
  // 401 with `challenge` as its WWW-Authenticate and `error_body` as its body,
  // before any fault above: a registry, or its token service.
  std::string authorization;
  std::string challenge;
  std::string error_body;
  // Answer 302 to this URL (after the Authorization check): a blob kept on other storage.
  std::string redirect_to;
};

class FaultServer {
 public:
  FaultServer();
  ~FaultServer();
  FaultServer(const FaultServer&) = delete;
  FaultServer& operator=(const FaultServer&) = delete;

  // Serves `body` at `path` (e.g. "/a.tar.xz"); other paths answer 404. A
  // request with a query string is answered by its path's route when it has none of its own.
  void serve(const std::string& path, std::string body, Behaviour behaviour = {});

  [[nodiscard]] int port() const { return port_; }
  // "http://127.0.0.1:PORT" + path.
  [[nodiscard]] std::string url(std::string_view path) const;

  // Requests seen for `path` so far.
  [[nodiscard]] int requests(const std::string& path) const;
  // The Range header of each request for `path`, in order ("" when absent).
  [[nodiscard]] std::vector<std::string> ranges(const std::string& path) const;
  // Every request's head (request line and headers), any path, in order.
  [[nodiscard]] std::vector<std::string> heads() const;
  // The most requests this server was answering at one time.
  [[nodiscard]] int max_concurrent() const { return max_active_; }

 private:
  struct Route {
    std::shared_ptr<const std::string> body;  // as served (wrong_bytes applied); shared, not copied
    Behaviour behaviour;
    int requests = 0;
    int wrong_ranges_sent = 0;
    std::vector<std::string> ranges;
  };
  enum class Fault { none, fail, stall, cut, lie };
  struct Reply;

  void accept_loop();
  void handle(int client);
  Reply reply_for(const std::string& path, const std::string& head);
  void send_reply(int client, const Reply& reply);
  bool send_all(int client, std::string_view bytes, std::chrono::milliseconds chunk_delay);
  void wait_for_close(int client) const;
  void begin_request();
  void end_request();

  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> active_{0}, max_active_{0};
  mutable std::mutex mutex_;  // guards everything below
  std::map<std::string, Route> routes_;
  std::vector<std::string> heads_;
  std::set<int> clients_;  // open connections, shut down by the destructor
  std::vector<std::thread> connections_;
  std::thread acceptor_;  // last: starts once everything above exists
};

}  // namespace envkit::test
