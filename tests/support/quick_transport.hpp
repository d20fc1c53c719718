#pragma once

#include <chrono>

#include "envkit/net/transport.hpp"

namespace envkit::test {

// Transport options for tests against a server on 127.0.0.1: one attempt and short timeouts,
// so a failure shows in seconds rather than after production's retries.
inline net::TransportOptions quick_transport() {
  return {.jobs = 2,
          .connect_timeout = std::chrono::seconds(2),
          .stall_timeout = std::chrono::seconds(10),
          .attempts = 1,
          .first_retry_delay = std::chrono::milliseconds(1),
          .max_retry_delay = std::chrono::milliseconds(1)};
}

}  // namespace envkit::test
