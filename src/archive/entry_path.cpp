#include "entry_path.hpp"

#include <fmt/format.h>

namespace envkit::archive::detail {

namespace {

// The '/'-separated parts of `text`, empty ones and `.` dropped.
Components significant_parts(std::string_view text) {
  Components parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto end = std::min(text.find('/', start), text.size());
    const auto part = text.substr(start, end - start);
    if (!part.empty() && part != ".") parts.emplace_back(part);
    start = end + 1;
  }
  return parts;
}

}  // namespace

Result<Components> split_entry_path(std::string_view name) {
  if (name.starts_with('/')) return Error::failed("absolute paths are not allowed");
  // The writer walks folder by folder, so the kernel's limit would not stop a
  // deeper path; nothing could use it afterwards anyway.
  if (name.size() >= kMaxPath) {
    return Error::failed(fmt::format("paths of {} bytes or more are not allowed", kMaxPath));
  }
  auto parts = significant_parts(name);
  for (const auto& part : parts) {
    if (part == "..") return Error::failed("`..` in a path is not allowed");
  }
  return parts;
}

std::string join_path(std::span<const std::string> parts) {
  std::string joined;
  for (const auto& part : parts) {
    if (!joined.empty()) joined += '/';
    joined += part;
  }
  return joined;
}

Result<void> check_link_target(std::span<const std::string> link_dir, std::string_view target) {
  if (target.empty()) return Error::failed("the symlink has an empty target");
  if (target.starts_with('/')) {
    return Error::failed(fmt::format("the symlink points to the absolute path `{}`", target));
  }
  std::size_t climbs = 0;
  bool named = false;
  for (const auto& part : significant_parts(target)) {
    if (part != "..") {
      named = true;
    } else if (named) {
      return Error::failed(
          fmt::format("the symlink target `{}` has `..` after a name, which could climb out "
                      "through another link",
                      target));
    } else {
      ++climbs;
    }
  }
  if (climbs > link_dir.size()) {
    return Error::failed(fmt::format("the symlink target `{}` leaves the destination", target));
  }
  return {};
}

}  // namespace envkit::archive::detail
