#include "support/fault_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <stdexcept>

namespace envkit::test {

namespace {

constexpr std::size_t kChunk = 16 * 1024;

// The request head, up to the blank line; false when the client left first.
bool read_head(int client, std::string& head) {
  char buffer[4096];
  while (head.find("\r\n\r\n") == std::string::npos) {
    const auto got = ::recv(client, buffer, sizeof buffer, 0);
    if (got <= 0 || head.size() > 65536) return false;
    head.append(buffer, static_cast<std::size_t>(got));
  }
  return true;
}

// "GET /path HTTP/1.1" -> "/path".
std::string request_path(const std::string& head) {
  const auto begin = head.find(' ') + 1;
  return head.substr(begin, head.find(' ', begin) - begin);
}

// The value of header `name` (lowercase), or "".
std::string header_value(const std::string& head, const std::string& name) {
  std::string lower = head;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const auto at = lower.find("\r\n" + name + ":");
  if (at == std::string::npos) return {};
  auto begin = at + name.size() + 3;
  while (begin < head.size() && head[begin] == ' ')
    ++begin;
  return head.substr(begin, head.find("\r\n", begin) - begin);
}

// K of "bytes=K-"; nullopt without a Range header (other forms are not asked for).
std::optional<std::size_t> range_start(const std::string& range) {
  if (!range.starts_with("bytes=")) return std::nullopt;
  std::size_t start = 0;
  const char* begin = range.data() + 6;
  if (std::from_chars(begin, range.data() + range.size(), start).ec != std::errc{})
    return std::nullopt;
  return start;
}

std::string status_line(int status) {
  return "HTTP/1.1 " + std::to_string(status) + " Fault\r\nConnection: close\r\n";
}

}  // namespace

struct FaultServer::Reply {
  std::string head;                           // status line and headers, up to the blank line
  std::shared_ptr<const std::string> holder;  // keeps `body` alive
  std::string_view body;                      // as much of the body as is sent
  bool hang = false;  // then keep the connection open, silent, until the client leaves
  std::chrono::milliseconds chunk_delay{0};
};

FaultServer::FaultServer() {
  // A proxy from the environment must not stand between the tests and 127.0.0.1.
  ::setenv("no_proxy", "127.0.0.1", 1);
  ::setenv("NO_PROXY", "127.0.0.1", 1);
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;  // any free port
  auto* generic = reinterpret_cast<sockaddr*>(&address);
  socklen_t length = sizeof address;
  if (::bind(listener_, generic, sizeof address) != 0 || ::listen(listener_, 64) != 0 ||
      ::getsockname(listener_, generic, &length) != 0) {
    ::close(listener_);
    throw std::runtime_error("the fault server cannot listen on 127.0.0.1");
  }
  port_ = ntohs(address.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

FaultServer::~FaultServer() {
  stopping_ = true;
  ::shutdown(listener_, SHUT_RDWR);  // wakes accept()
  acceptor_.join();
  ::close(listener_);
  std::vector<std::thread> connections;
  {
    std::lock_guard lock(mutex_);
    for (const int client : clients_)
      ::shutdown(client, SHUT_RDWR);  // wakes recv()
    connections.swap(connections_);
  }
  for (auto& connection : connections)
    connection.join();
}

void FaultServer::serve(const std::string& path, std::string body, Behaviour behaviour) {
  if (behaviour.wrong_bytes && !body.empty()) body[body.size() / 2] ^= 1;
  std::lock_guard lock(mutex_);
  routes_[path] = Route{.body = std::make_shared<const std::string>(std::move(body)),
                        .behaviour = std::move(behaviour)};
}

std::string FaultServer::url(std::string_view path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
}

int FaultServer::requests(const std::string& path) const {
  std::lock_guard lock(mutex_);
  const auto found = routes_.find(path);
  return found == routes_.end() ? 0 : found->second.requests;
}

std::vector<std::string> FaultServer::heads() const {
  std::lock_guard lock(mutex_);
  return heads_;
}

std::vector<std::string> FaultServer::ranges(const std::string& path) const {
  std::lock_guard lock(mutex_);
  const auto found = routes_.find(path);
  return found == routes_.end() ? std::vector<std::string>{} : found->second.ranges;
}

void FaultServer::accept_loop() {
  while (!stopping_) {
    const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) return;
    std::lock_guard lock(mutex_);
    clients_.insert(client);
    connections_.emplace_back([this, client] { handle(client); });
  }
}

void FaultServer::handle(int client) {
  std::string head;
  if (read_head(client, head)) {
    {
      std::lock_guard lock(mutex_);
      heads_.push_back(head);
    }
    begin_request();
    send_reply(client, reply_for(request_path(head), head));
  }
  std::lock_guard lock(mutex_);
  clients_.erase(client);  // before close: the destructor never shuts down a reused number
  ::shutdown(client, SHUT_WR);
  ::close(client);
}

FaultServer::Reply FaultServer::reply_for(const std::string& path, const std::string& request) {
  const auto range = header_value(request, "range");
  std::lock_guard lock(mutex_);
  auto found = routes_.find(path);
  if (found == routes_.end()) found = routes_.find(path.substr(0, path.find('?')));
  if (found == routes_.end()) return {.head = status_line(404) + "Content-Length: 0\r\n\r\n"};
  Route& route = found->second;
  route.ranges.push_back(range);
  const Behaviour& behaviour = route.behaviour;
  if (!behaviour.authorization.empty() &&
      header_value(request, "authorization") != behaviour.authorization) {
    auto body = std::make_shared<const std::string>(behaviour.error_body);
    return {.head = status_line(401) + "WWW-Authenticate: " + behaviour.challenge +
                    "\r\nContent-Type: application/json\r\nContent-Length: " +
                    std::to_string(body->size()) + "\r\n\r\n",
            .holder = body,
            .body = *body};
  }
  if (!behaviour.redirect_to.empty()) {
    return {.head = status_line(302) + "Location: " + behaviour.redirect_to +
                    "\r\nContent-Length: 0\r\n\r\n"};
  }

  // Which fault this request gets: the first ones of each kind, in order.
  int index = route.requests++;
  Fault fault = Fault::none;
  for (const auto& [count, kind] :
       {std::pair{behaviour.fail_first, Fault::fail},
        std::pair{behaviour.stall_first, Fault::stall}, std::pair{behaviour.cut_first, Fault::cut},
        std::pair{behaviour.length_lie != 0 ? 1 : 0, Fault::lie}}) {
    if (index < count) {
      fault = kind;
      break;
    }
    index -= count;
  }
  if (fault == Fault::fail) {
    std::string head = status_line(behaviour.fail_status) +
                       "Content-Length: " + std::to_string(behaviour.fail_body.size()) + "\r\n";
    if (!behaviour.retry_after.empty()) head += "Retry-After: " + behaviour.retry_after + "\r\n";
    return {.head = head + "\r\n", .body = behaviour.fail_body};
  }

  const std::string& body = *route.body;
  const auto asked = behaviour.ranges ? range_start(range) : std::nullopt;
  const bool lie_about_range =
      asked && route.wrong_ranges_sent < behaviour.wrong_content_range && *asked < body.size();
  if (lie_about_range) ++route.wrong_ranges_sent;
  const bool ranged = asked.has_value() || behaviour.always_partial;
  std::size_t from = asked.value_or(0);
  if (lie_about_range && behaviour.range_lie == Behaviour::RangeLie::start) from = 0;
  const std::string size = std::to_string(body.size());
  if (ranged && from >= body.size()) {
    return {.head = status_line(416) + "Content-Range: bytes */" + size +
                    "\r\nContent-Length: 0\r\n\r\n"};
  }
  Reply reply{.holder = route.body,
              .body = std::string_view(body).substr(from),
              .chunk_delay = behaviour.chunk_delay};
  const long length =
      static_cast<long>(reply.body.size()) + (fault == Fault::lie ? behaviour.length_lie : 0);
  reply.head = status_line(ranged ? 206 : 200) + "Content-Type: " + behaviour.content_type +
               "\r\nContent-Length: " + std::to_string(length) + "\r\n";
  if (ranged) {
    const bool wrong_total = lie_about_range && behaviour.range_lie == Behaviour::RangeLie::total;
    reply.head += "Content-Range: bytes " + std::to_string(from) + "-" +
                  std::to_string(body.size() - 1) + "/" +
                  (wrong_total ? std::to_string(body.size() + 1) : size) + "\r\n";
  }
  if (behaviour.ranges) reply.head += "Accept-Ranges: bytes\r\n";
  reply.head += "\r\n";
  if (fault == Fault::stall || fault == Fault::cut)
    reply.body = reply.body.substr(0, reply.body.size() / 2);
  reply.hang = fault == Fault::stall;
  return reply;
}

void FaultServer::send_reply(int client, const Reply& reply) {
  // The request stops counting as active before its last byte leaves: the
  // client cannot finish, and start another request, any earlier.
  std::string_view head = reply.head, body = reply.body;
  std::string_view& ends = body.empty() ? head : body;
  const std::string_view last = ends.substr(ends.size() - 1);
  ends.remove_suffix(1);
  const bool sent =
      send_all(client, head, reply.chunk_delay) && send_all(client, body, reply.chunk_delay);
  end_request();
  if (!sent || !send_all(client, last, {})) return;
  if (reply.hang) wait_for_close(client);
}

bool FaultServer::send_all(int client, std::string_view bytes,
                           std::chrono::milliseconds chunk_delay) {
  while (!bytes.empty() && !stopping_) {
    const auto sent = ::send(client, bytes.data(), std::min(bytes.size(), kChunk), MSG_NOSIGNAL);
    if (sent <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(sent));
    if (chunk_delay.count() > 0) std::this_thread::sleep_for(chunk_delay);
  }
  return bytes.empty();
}

void FaultServer::wait_for_close(int client) const {
  char buffer[256];
  while (!stopping_) {
    pollfd watch{.fd = client, .events = POLLIN, .revents = 0};
    if (::poll(&watch, 1, 20) > 0 && ::recv(client, buffer, sizeof buffer, 0) <= 0) return;
  }
}

void FaultServer::begin_request() {
  const int now = ++active_;
  int seen = max_active_;
  while (now > seen && !max_active_.compare_exchange_weak(seen, now)) {
  }
}

void FaultServer::end_request() {
  --active_;
}

}  // namespace envkit::test
