#include "tool_output.hpp"

#include <fmt/format.h>
#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"

namespace envkit::python::detail {

namespace fs = std::filesystem;

namespace {

bool ends_url(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '"' || c == '\'' || c == '`' ||
         c == '<' || c == '>' || c == '(' || c == ')';
}

bool is_scheme_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '-' || c == '.';
}

}  // namespace

std::string redact_urls(std::string_view text) {
  std::string out;
  std::size_t done = 0;  // text before this is in `out`
  std::size_t from = 0;
  for (auto sep = text.find("://"); sep != std::string_view::npos; sep = text.find("://", from)) {
    std::size_t begin = sep;
    while (begin > done && is_scheme_char(text[begin - 1]))
      --begin;
    std::size_t end = sep + 3;
    while (end < text.size() && !ends_url(text[end]))
      ++end;
    if (begin < sep) {  // `scheme://...`
      out += text.substr(done, begin - done);
      out += url::redacted(text.substr(begin, end - begin));
      done = end;
    }
    from = end;
  }
  out += text.substr(done);
  return out;
}

std::string quoted_tail(std::string_view output, std::size_t max_lines) {
  constexpr std::size_t kLongest = 400;
  std::vector<std::string> lines;
  for (auto line : text::split(output, '\n')) {
    line = text::trim(line);
    if (!line.empty()) lines.emplace_back(line);
  }
  if (lines.empty()) return "nothing";
  // More than fit: the first line (often what went wrong), then the last ones (where).
  if (lines.size() > max_lines && max_lines >= 2) {
    std::vector<std::string> kept = {lines.front(), "..."};
    kept.insert(kept.end(), lines.end() - static_cast<long>(max_lines - 1), lines.end());
    lines = std::move(kept);
  }
  std::string joined = redact_urls(text::join(lines, " | "));
  if (joined.size() > kLongest) joined = joined.substr(0, kLongest) + "...";
  return text::quoted(joined);
}

std::string quoted_command(const std::vector<std::string>& argv) {
  std::vector<std::string> words;
  for (const auto& arg : argv) {
    const bool plain =
        !arg.empty() && arg.find_first_of(" \t\n'\"$`\\;&|<>*?()[]{}!#~") == std::string::npos;
    std::string word = redact_urls(arg);
    if (!plain) {
      std::string escaped = "'";
      for (char c : word)
        escaped += c == '\'' ? std::string("'\\''") : std::string(1, c);
      word = escaped + "'";
    }
    words.push_back(std::move(word));
  }
  return text::quoted(text::join(words, " "));
}

std::string url_filename(std::string_view link) {
  link = link.substr(0, link.find_first_of("?#"));
  const auto slash = link.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? link : link.substr(slash + 1);
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '%' && i + 2 < name.size() && hex(name[i + 1]) >= 0 && hex(name[i + 2]) >= 0) {
      out += static_cast<char>(hex(name[i + 1]) * 16 + hex(name[i + 2]));
      i += 2;
    } else {
      out += name[i];
    }
  }
  return out;
}

Result<ScratchDir> ScratchDir::make(std::string_view prefix) {
  const char* tmp = std::getenv("TMPDIR");
  const fs::path base = tmp && *tmp ? fs::path(tmp) : fs::path("/tmp");
  std::string pattern = (base / (std::string(prefix) + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    return Error::failed(
               fmt::format("cannot make a temporary folder in {}", text::quoted(base.string())))
        .because(std::strerror(errno));
  }
  return ScratchDir(fs::path(pattern));
}

ScratchDir::~ScratchDir() {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace envkit::python::detail
