#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/error.hpp"

namespace envkit::cli {

enum class ColorMode { auto_detect, always, never };

// Where human text goes (stderr) and how it looks. Machine output (--json)
// goes to stdout and never passes through here.
class Console {
 public:
  Console(ColorMode mode, bool quiet, int verbosity);

  void info(std::string_view text) const;    // suppressed by -q
  void detail(std::string_view text) const;  // only with -v
  void warn(std::string_view text) const;
  void error(const Error& error) const;  // always shown
  // An error that is an answer (an unsatisfiable manifest): `error: headline`,
  // the explanation's sentences indented below it, then `hint:` lines.
  void explanation(std::string_view headline, const std::vector<std::string>& lines,
                   const std::vector<std::string>& hints) const;

  [[nodiscard]] bool color() const { return color_; }

  // Error in envkit's style: `error: ...`, `  caused by: ...`, `hint: ...`.
  [[nodiscard]] static std::string render(const Error& error, bool color);

 private:
  bool color_;
  bool quiet_;
  int verbosity_;
};

}  // namespace envkit::cli
