#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "envkit/net/transport.hpp"

namespace envkit::cli {

// Download progress on stderr while a Transport works: on a terminal a bar
// per active transfer plus a total line, redrawn in place; elsewhere (CI
// logs) one summary line every few seconds; with -q or --json nothing.
class ProgressDisplay {
 public:
  enum class Mode { bars, lines, off };
  // bars on a terminal, lines elsewhere, off when quiet.
  [[nodiscard]] static Mode mode_for(bool quiet);

  ProgressDisplay(const net::Transport& transport, Mode mode);
  ~ProgressDisplay();  // stops and clears the bars
  ProgressDisplay(const ProgressDisplay&) = delete;
  ProgressDisplay& operator=(const ProgressDisplay&) = delete;

  // Prints a line above the bars (thread-safe).
  void note(const std::string& line);

 private:
  void run();
  void draw_bars(const std::vector<net::TransferProgress>& transfers);
  void draw_line(const std::vector<net::TransferProgress>& transfers);
  void clear_bars();
  [[nodiscard]] std::uint64_t total_received(const std::vector<net::TransferProgress>& transfers);

  const net::Transport& transport_;
  Mode mode_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  int drawn_lines_ = 0;
  // Bytes of transfers that have finished (they leave progress()).
  std::map<std::string, std::uint64_t> last_seen_;
  std::uint64_t finished_bytes_ = 0;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_line_ = started_;
  std::thread thread_;
};

// "1.5 GiB", "320.0 MiB", "12 B".
[[nodiscard]] std::string human_bytes(std::uint64_t bytes);

}  // namespace envkit::cli
