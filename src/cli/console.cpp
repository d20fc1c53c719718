#include "console.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include "envkit/core/env_vars.hpp"

namespace envkit::cli {

namespace {
constexpr std::string_view kRed = "\x1b[1;31m";
constexpr std::string_view kYellow = "\x1b[1;33m";
constexpr std::string_view kCyan = "\x1b[1;36m";
constexpr std::string_view kReset = "\x1b[0m";

std::string paint(bool color, std::string_view code, std::string_view text) {
  return color ? fmt::format("{}{}{}", code, text, kReset) : std::string(text);
}
}  // namespace

Console::Console(ColorMode mode, bool quiet, int verbosity) : quiet_(quiet), verbosity_(verbosity) {
  switch (mode) {
    case ColorMode::always:
      color_ = true;
      break;
    case ColorMode::never:
      color_ = false;
      break;
    case ColorMode::auto_detect:
      color_ = ::isatty(STDERR_FILENO) != 0 && !env::get(env::kNoColor).has_value();
      break;
  }
}

void Console::info(std::string_view text) const {
  if (!quiet_) fmt::print(stderr, "{}\n", text);
}

void Console::detail(std::string_view text) const {
  if (verbosity_ > 0 && !quiet_) fmt::print(stderr, "{}\n", text);
}

void Console::warn(std::string_view text) const {
  fmt::print(stderr, "{} {}\n", paint(color_, kYellow, "warning:"), text);
}

void Console::error(const Error& error) const {
  fmt::print(stderr, "{}", render(error, color_));
}

void Console::explanation(std::string_view headline, const std::vector<std::string>& lines,
                          const std::vector<std::string>& hints) const {
  std::string out = fmt::format("{} {}\n", paint(color_, kRed, "error:"), headline);
  for (const auto& line : lines)
    out += fmt::format("  {}\n", line);
  for (const auto& hint : hints)
    out += fmt::format("{} {}\n", paint(color_, kCyan, "hint:"), hint);
  fmt::print(stderr, "{}", out);
}

std::string Console::render(const Error& error, bool color) {
  std::string out = fmt::format("{} {}\n", paint(color, kRed, "error:"), error.headline());
  for (const auto& cause : error.causes())
    out += fmt::format("  caused by: {}\n", cause);
  for (const auto& hint : error.hints())
    out += fmt::format("{} {}\n", paint(color, kCyan, "hint:"), hint);
  return out;
}

}  // namespace envkit::cli
