#pragma once

// Internal to store: the one error every store step gives for a filesystem call that failed.

#include <fmt/format.h>

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

}  // namespace envkit::store
