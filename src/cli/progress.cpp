#include "progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace envkit::cli {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kRedraw = std::chrono::milliseconds(100);
constexpr auto kLineEvery = std::chrono::seconds(5);
constexpr std::size_t kBarWidth = 24;
constexpr std::size_t kLabelWidth = 40;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string bar(std::uint64_t done, std::uint64_t total) {
  const auto filled = total == 0 ? 0 : static_cast<std::size_t>(done * kBarWidth / total);
  return "[" + std::string(std::min(filled, kBarWidth), '#') +
         std::string(kBarWidth - std::min(filled, kBarWidth), ' ') + "]";
}

std::string fit(const std::string& label) {
  if (label.size() <= kLabelWidth) return fmt::format("{:<{}}", label, kLabelWidth);
  return label.substr(0, kLabelWidth - 1) + "~";
}

}  // namespace

std::string human_bytes(std::uint64_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  auto value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", value, kUnits[unit]);
}

ProgressDisplay::Mode ProgressDisplay::mode_for(bool quiet) {
  if (quiet) return Mode::off;
  return ::isatty(STDERR_FILENO) != 0 ? Mode::bars : Mode::lines;
}

ProgressDisplay::ProgressDisplay(const net::Transport& transport, Mode mode)
    : transport_(transport), mode_(mode) {
  if (mode_ != Mode::off) thread_ = std::thread([this] { run(); });
}

ProgressDisplay::~ProgressDisplay() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  const std::lock_guard lock(mutex_);
  clear_bars();
}

void ProgressDisplay::note(const std::string& line) {
  if (mode_ == Mode::off) return;
  const std::lock_guard lock(mutex_);
  clear_bars();
  fmt::print(stderr, "{}\n", line);
}

std::uint64_t ProgressDisplay::total_received(const std::vector<net::TransferProgress>& transfers) {
  std::map<std::string, std::uint64_t> seen;
  std::uint64_t active = 0;
  for (const auto& transfer : transfers) {
    seen[transfer.label] = transfer.received;
    active += transfer.received;
  }
  for (const auto& [label, bytes] : last_seen_) {
    if (!seen.contains(label)) finished_bytes_ += bytes;
  }
  last_seen_ = std::move(seen);
  return finished_bytes_ + active;
}

void ProgressDisplay::clear_bars() {
  for (; drawn_lines_ > 0; --drawn_lines_)
    fmt::print(stderr, "\x1b[1A\x1b[2K");
  std::fflush(stderr);
}

void ProgressDisplay::draw_bars(const std::vector<net::TransferProgress>& transfers) {
  clear_bars();
  if (transfers.empty()) {
    static_cast<void>(total_received(transfers));
    return;
  }
  const double elapsed = std::max(seconds_since(started_), 0.001);
  std::size_t waiting = 0;
  for (const auto& transfer : transfers) {
    if (!transfer.started) {
      ++waiting;
      continue;
    }
    const auto total = transfer.total.value_or(0);
    fmt::print(stderr, "  {} {} {:>10} / {:>10}\n", fit(transfer.label),
               bar(transfer.received, total), human_bytes(transfer.received),
               total ? human_bytes(total) : "?");
    ++drawn_lines_;
  }
  const auto received = total_received(transfers);
  const double rate = static_cast<double>(received) / elapsed;
  std::uint64_t remaining = 0;
  bool all_known = true;
  for (const auto& transfer : transfers) {
    // A retried transfer counts its bytes again: what is left is not known then.
    if (!transfer.total || transfer.received > *transfer.total)
      all_known = false;
    else
      remaining += *transfer.total - transfer.received;
  }
  // No "ETA 0s" while the last bytes are retried or waited for.
  const auto eta = all_known && remaining > 0 && rate > 0
                       ? fmt::format("  ETA {:.0f}s", static_cast<double>(remaining) / rate)
                       : std::string();
  fmt::print(stderr, "  total {}  {}/s{}{}\n", human_bytes(received),
             human_bytes(static_cast<std::uint64_t>(rate)), eta,
             waiting ? fmt::format("  ({} waiting)", waiting) : std::string());
  ++drawn_lines_;
  std::fflush(stderr);
}

void ProgressDisplay::draw_line(const std::vector<net::TransferProgress>& transfers) {
  const auto received = total_received(transfers);
  if (Clock::now() - last_line_ < kLineEvery || transfers.empty()) return;
  last_line_ = Clock::now();
  const double rate = static_cast<double>(received) / std::max(seconds_since(started_), 0.001);
  fmt::print(stderr, "downloading: {} so far, {}/s, {} transfer(s) open\n", human_bytes(received),
             human_bytes(static_cast<std::uint64_t>(rate)), transfers.size());
}

void ProgressDisplay::run() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, kRedraw, [this] { return stop_; });
    if (stop_) break;
    const auto transfers = transport_.progress();
    if (mode_ == Mode::bars) {
      draw_bars(transfers);
    } else {
      draw_line(transfers);
    }
  }
}

}  // namespace envkit::cli
