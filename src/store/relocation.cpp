#include "envkit/store/relocation.hpp"

namespace envkit::store {

bool names_its_prefix(std::string_view relative) {
  return relative.starts_with("bin/activate") || relative.starts_with("bin/Activate") ||
         relative == "pyvenv.cfg";
}

std::string replace_path(std::string_view content, std::string_view from, std::string_view to) {
  if (from.empty()) return std::string(content);
  std::string out;
  for (std::size_t at = 0;;) {
    const auto next = content.find(from, at);
    out += content.substr(at, next == std::string_view::npos ? next : next - at);
    if (next == std::string_view::npos) break;
    out += to;
    at = next + from.size();
  }
  return out;
}

}  // namespace envkit::store
