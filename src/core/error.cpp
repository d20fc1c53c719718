#include "envkit/core/error.hpp"

#include <fmt/format.h>

namespace envkit {

std::string SourceLocation::to_string() const {
  if (line <= 0) return file;
  if (column <= 0) return fmt::format("{}:{}", file, line);
  return fmt::format("{}:{}:{}", file, line, column);
}

std::string Error::headline() const {
  if (!location_) return message_;
  return fmt::format("{}: {}", location_->to_string(), message_);
}

std::string Error::to_string() const {
  std::string out = fmt::format("error: {}\n", headline());
  for (const auto& cause : causes_)
    out += fmt::format("  caused by: {}\n", cause);
  for (const auto& hint : hints_)
    out += fmt::format("hint: {}\n", hint);
  return out;
}

}  // namespace envkit
