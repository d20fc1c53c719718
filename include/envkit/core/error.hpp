#pragma once

#include <optional>
#include <string>
#include <vector>

namespace envkit {

// What kind of failure, which decides the process exit code (CLI.md).
enum class ErrorCode {
  failed = 1,    // the operation failed for a reason the user can act on
  input = 2,     // usage or input error: bad flag, malformed file
  internal = 3,  // a bug in envkit
};

// A place in a file, 1-based. `file` is how the user named it.
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;

  // "file:line:column" (or just "file" when no line is known).
  [[nodiscard]] std::string to_string() const;
};

// An expected failure, as a value: what happened, why, and what to do.
class Error {
 public:
  Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Error input(std::string message) { return {ErrorCode::input, std::move(message)}; }
  static Error failed(std::string message) { return {ErrorCode::failed, std::move(message)}; }
  static Error internal(std::string message) { return {ErrorCode::internal, std::move(message)}; }

  Error& at(SourceLocation where) {
    location_ = std::move(where);
    return *this;
  }
  Error& because(std::string cause) {
    causes_.push_back(std::move(cause));
    return *this;
  }
  Error& hint(std::string text) {
    hints_.push_back(std::move(text));
    return *this;
  }

  [[nodiscard]] ErrorCode code() const { return code_; }
  [[nodiscard]] int exit_code() const { return static_cast<int>(code_); }
  [[nodiscard]] const std::string& message() const { return message_; }
  [[nodiscard]] const std::optional<SourceLocation>& location() const { return location_; }
  [[nodiscard]] const std::vector<std::string>& causes() const { return causes_; }
  [[nodiscard]] const std::vector<std::string>& hints() const { return hints_; }

  // The headline: "file:line:column: message", or just the message.
  [[nodiscard]] std::string headline() const;

  // The full text in envkit's one error style, without colour:
  //   error: <headline>
  //     caused by: <cause>
  //   hint: <hint>
  [[nodiscard]] std::string to_string() const;

 private:
  ErrorCode code_;
  std::string message_;
  std::optional<SourceLocation> location_;
  std::vector<std::string> causes_;
  std::vector<std::string> hints_;
};

}  // namespace envkit
