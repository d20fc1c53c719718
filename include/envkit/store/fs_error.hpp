#pragma once

// The one error every store (and build) step gives for a filesystem call that failed.

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

#include "envkit/core/error.hpp"
#include "envkit/core/text.hpp"
#include "envkit/store/link.hpp"

namespace envkit::store {

// "cannot <what> '<path>'" because of `error`; a full disk gets the hint that
// says the previous environment is untouched.
inline Error cannot(std::string_view what, const std::filesystem::path& path,
                    const std::error_code& error) {
  Error failure = Error::failed(fmt::format("cannot {} {}", what, text::quoted(path.string())))
                      .because(error.message());
  if (error == std::errc::no_space_on_device) failure.hint(std::string(kDiskFullHint));
  return failure;
}

// Whether `error` came from a full disk: one of its causes is ENOSPC's (or EDQUOT's) message.
inline bool disk_full(const Error& error) {
  const auto& causes = error.causes();
  return std::any_of(causes.begin(), causes.end(), [](const std::string& cause) {
    return cause == std::strerror(ENOSPC) || cause == std::strerror(EDQUOT);
  });
}

}  // namespace envkit::store
