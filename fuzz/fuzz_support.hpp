#pragma once

// Shared by the fuzz targets (scripts/fuzz, docs/reliability.md "Fuzzing"): the
// input as text, and what counts as a finding besides a sanitizer's report.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#include "envkit/core/error.hpp"

namespace envkit::fuzz {

inline std::string_view text_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// An invariant the input broke: print it and abort, so that libFuzzer saves the input.
[[noreturn]] inline void finding(std::string_view what, std::string_view detail = {}) {
  std::fprintf(stderr, "fuzz finding: %.*s\n%.*s\n", static_cast<int>(what.size()), what.data(),
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

// A reader may refuse any input, but as an input error (or a failure) it
// explains: an internal error is an exception or a broken assumption that got
// past its checks (`lock` ending with std::bad_alloc, exit 3). The message is
// rendered either way, as the command line would.
inline void check_refusal(const Error& error) {
  const std::string text = error.to_string();
  if (error.code() == ErrorCode::internal) finding("a reader gave an internal error", text);
}

// Where two texts that should be one first differ: "line N: `A` then `B`".
inline std::string first_difference(std::string_view a, std::string_view b) {
  std::size_t line = 1;
  while (true) {
    const auto a_end = a.find('\n'), b_end = b.find('\n');
    const auto a_line = a.substr(0, a_end), b_line = b.substr(0, b_end);
    if (a_line != b_line || a_end == std::string_view::npos || b_end == std::string_view::npos) {
      return "line " + std::to_string(line) + ": `" + std::string(a_line) + "` then `" +
             std::string(b_line) + "`";
    }
    a.remove_prefix(a_end + 1);
    b.remove_prefix(b_end + 1);
    ++line;
  }
}

// The input up to the first NUL, and what follows it (empty when there is
// none): one input for the targets that read two texts.
inline std::pair<std::string_view, std::string_view> split_at_nul(std::string_view input) {
  const auto nul = input.find('\0');
  if (nul == std::string_view::npos) return {input, {}};
  return {input.substr(0, nul), input.substr(nul + 1)};
}

}  // namespace envkit::fuzz
