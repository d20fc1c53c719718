#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

#include "envkit/core/result.hpp"

namespace envkit::store {

// How files get from the cache into a prefix: a copy-on-write clone where the
// filesystem has them, else a hard link (the cache's files are read-only, so a
// prefix cannot change them by accident), else a copy.
enum class LinkMode : std::uint8_t { reflink, hardlink, copy };

// What to tell a user whose disk filled up while a generation was built.
inline constexpr std::string_view kDiskFullHint =
    "free some disk space and run `envkit install` again; the previous environment is untouched";
[[nodiscard]] std::string_view to_string(LinkMode mode);
[[nodiscard]] std::optional<LinkMode> parse_link_mode(std::string_view text);

class Linker {
 public:
  // `only`: use this mode and no other (errors instead of falling back).
  explicit Linker(std::optional<LinkMode> only = std::nullopt);

  // Makes `to` (which must not exist) hold the content of regular file `from`.
  [[nodiscard]] Result<void> place(const std::filesystem::path& from,
                                   const std::filesystem::path& to);
  // The mode the files were placed with (the last that worked).
  [[nodiscard]] LinkMode mode() const { return mode_; }

 private:
  LinkMode mode_ = LinkMode::reflink;
  bool fixed_ = false;
};

}  // namespace envkit::store
